"""`forensics.Table`: the one front object a notebook, the CLI and the TUI all start from.

It owns what every question about a table needs (the parsed log and its cache, the Spark
session it was read with, the rule profile, the per-version table state) so callers never
thread a log and a state through call chains. Tables of rows come back as polars DataFrames;
single answers as typed dataclasses with `to_dict()`.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar

from forensics.errors import ExitCode, ForensicsError
from forensics.model import ISOLATION_LEVELS

if TYPE_CHECKING:  # the heavy stages load on first use: `history` of a cached table needs none of them
    from collections.abc import Iterator
    from concurrent.futures import Future
    from datetime import datetime
    from traceback import TracebackException

    import polars as pl

    from forensics.analysis.counterfactual import Counterfactual
    from forensics.analysis.explain import Explanation
    from forensics.analysis.find import FindQuery, FindResult
    from forensics.analysis.silent import AttemptRow, SilentLog
    from forensics.analysis.stats import Stats
    from forensics.analysis.timeline import Timeline
    from forensics.errortext import ErrorReport
    from forensics.evidence import Evidence
    from forensics.evidence.loser import ErrorExplanation
    from forensics.evidence.winner import WinnerMatch
    from forensics.log.delta_log import DeltaLog
    from forensics.log.remote import RemoteTable
    from forensics.log.select import Selection, VersionRange
    from forensics.log.snapshot import SnapshotFrame
    from forensics.model import CommitRecord, Finding, Snapshot
    from forensics.replay.whatif import WhatIfRequest, WhatIfResult
    from forensics.replay.windows import ReplayReport
    from forensics.rules.writer_conf import WriterConf
    from forensics.sets.commit_sets import CommitSets, StateIndex
    from forensics.storage import StoreLocation

Progress = Callable[[str], None]
_Question = TypeVar("_Question", bound=Callable[..., Any])


def _as_the_writer_ran(method: _Question) -> _Question:
    """A question that replays runs with the writer's session settings stated (conflict-rules §14):
    every rule profile chosen inside it carries them."""

    @functools.wraps(method)
    def ask(self: "Table", *args: Any, **kwargs: Any) -> Any:
        if not self.writer_conf:
            return method(self, *args, **kwargs)
        from forensics.rules.writer_conf import writer_settings

        with writer_settings(self.writer_conf):
            return method(self, *args, **kwargs)

    return ask  # type: ignore[return-value]


class Table:
    """A Delta table under investigation, read from its `_delta_log`.

    >>> t = Table("sample_logs/b-writeserializable-reorder/table")
    >>> t.history()                 # polars DataFrame, one row per retained version
    >>> t.replay()                  # polars DataFrame, one row per concurrent commit and its verdict
    >>> t.explain(3).lines()        # the story of version 3: reads, winners, checks, verdict, advice
    >>> t.explain_error(e)          # which commit beat the transaction that raised `e` (or printed it)
    >>> t.whatif(read_version=1, operation="DELETE", predicate="date = '2024-06-18'")

    Construction reads the log (from the cache when nothing changed; Spark only for new
    commits). `uri` is a local path or `s3://`, `s3a://`, `az://`, `abfss://`, `gs://`: a remote
    `_delta_log` is mirrored into the cache first (only new files are fetched), with
    `storage_options` in delta-rs's key names over a config-file `profile` over the environment.
    `rules` names a rule profile for every question (default: the profile of the engine that
    wrote each commit); `writer_conf` holds the session settings of the writer being modelled
    (`{"spark.databricks.delta....": "true"}`, conflict-rules §14; not this tool's Spark settings,
    which are `spark_conf`); `spark` is a caller's SparkSession, `master`/`remote` ask for a cluster
    or Spark Connect, `spark_conf` holds Spark settings; `use_cache=False` reads afresh and
    writes no cache. Expected failures raise subclasses of `forensics.ForensicsError`.
    """

    def __init__(
        self,
        uri: str | Path,
        *,
        rules: str | None = None,
        use_cache: bool = True,
        spark: Any = None,
        master: str | None = None,
        remote: str | None = None,
        storage_options: Mapping[str, str] | None = None,
        profile: str | None = None,
        spark_conf: Mapping[str, str] | None = None,
        writer_conf: Mapping[str, str] | None = None,
        progress: Progress | None = None,
        _log: "DeltaLog | None" = None,
    ):
        if rules:
            check_profile(rules)
        self.rules = rules
        self._writer_given = dict(writer_conf or {})
        self._writer_conf = _writer_conf(self._writer_given)  # a bad value fails before anything is read
        self._master, self._remote, self._spark = master, remote, spark
        self._spark_conf = dict(spark_conf or {})
        self.store: RemoteTable | None = None
        self.catalog_name: str | None = None  # the catalog name the table was opened by, if any
        if _log is None:
            _log = self._open(str(uri), use_cache, storage_options, profile, progress)
        self._log = _log
        self._writer_conf = _writer_conf(self._writer_given)  # with the config profile's writer_conf
        self._lock = threading.RLock()
        self._state: StateIndex | None = None
        self._evidence: dict[tuple[str | None, bool], Evidence] = {}
        self._replays: dict[tuple[str | None, tuple[int, ...] | None], ReplayReport] = {}
        self._reopen = (str(uri), use_cache, dict(storage_options or {}), profile)  # what refresh() opens again

    def _open(self, uri: str, use_cache: bool, storage_options: Mapping[str, str] | None, profile: str | None,
              progress: Progress | None) -> "DeltaLog":
        from forensics.log.delta_log import DeltaLog
        from forensics.storage import load_profile, parse_location

        loc = parse_location(uri)
        if loc.kind == "catalog":
            from forensics.log.catalog import resolve_table_name

            self.catalog_name = loc.uri
            uri = resolve_table_name(loc.uri, self._spark_session())
            loc = parse_location(uri)
        prof = load_profile(profile) if profile or loc.is_remote else None
        self._spark_conf = {**(prof.spark_conf if prof else {}), **self._spark_conf}
        self._writer_given = {**(prof.writer_conf if prof else {}), **self._writer_given}
        if not loc.is_remote:
            return DeltaLog.open(uri, use_cache=use_cache, spark_factory=self._spark_session, progress=progress,
                                 session_is_local=self._session_is_local())
        self.store, starting = self._mirror(loc, storage_options, profile, use_cache, progress)
        log = DeltaLog.open(str(self.store.mirror.root), use_cache=use_cache, spark_factory=self._spark_session,
                            progress=progress, as_uri=loc.uri, spark_root=self._store_read_root(loc),
                            spark_starting=starting, known=self.store.mirror.entries,
                            session_is_local=self._session_is_local())
        log.store = self.store
        return log

    def _mirror(self, loc: "StoreLocation", storage_options: Mapping[str, str] | None, profile: str | None,
                use_cache: bool, progress: Progress | None = None, parsed: int = -1) -> "tuple[RemoteTable, Future[Any] | None]":
        """Mirror a remote table's log; Spark starts as soon as the store's listing shows commits past
        the cache and `parsed` (the JVM comes up while they download), except for a session whose
        executors read the store: its connector settings are only chosen once the mirror is there."""
        from forensics.log.delta_log import SparkStarter
        from forensics.log.remote import mirror_table

        starter = SparkStarter(loc.uri, self._spark_session, use_cache, parsed)
        store = mirror_table(loc, storage_options, profile=profile, use_cache=use_cache, progress=progress,
                             on_commits=None if self._reads_from_store() else starter)
        return store, starter.future

    @staticmethod
    def listed_commits(uri: str | Path, *, times: bool = True) -> list[tuple[int, int | None]] | None:
        """(version, commit file's modification time in epoch ms, None without `times`) of every
        commit a local table's `_delta_log` lists, without reading one (the TUI paints the names at
        once, then their times, before the parse); None for a remote table (listing it needs the
        store's settings) or one that cannot be listed."""
        from forensics.log.listing import commit_versions_local, is_local, normalize_location

        if not is_local(normalize_location(str(uri))):
            return None
        try:
            return commit_versions_local(str(uri), times=times)
        except OSError:
            return None

    @classmethod
    def from_cache(cls, uri: str | Path, *, rules: str | None = None,
                   writer_conf: Mapping[str, str] | None = None,
                   listed: Callable[[list[tuple[int, int]]], None] | None = None) -> "Table | None":
        """The table as cached, without starting a JVM; None when the cache is missing or behind (a
        remote table is always looked at afresh: only the store knows whether it changed).
        `listed`, when something is cached, is handed (version, commit file's mtime in epoch ms) of
        every commit the listing classifies, as soon as the log is listed and before the cache is
        judged (the TUI paints them meanwhile)."""
        from forensics.log.cache import published
        from forensics.log.listing import normalize_location
        from forensics.storage import parse_location

        if parse_location(str(uri)).kind != "local" or published(normalize_location(str(uri))) is None:
            return None  # decided before the reader's import (polars and its kin, ~0.3 s)
        from forensics.log.delta_log import DeltaLog

        log = DeltaLog.open_cached(str(uri), listed=listed)
        return None if log is None else cls(uri, rules=rules, writer_conf=writer_conf, _log=log)

    def _reads_from_store(self) -> bool:
        """Whether Spark's executors read a remote table from the store: on a cluster the tool
        starts; not in local mode, through Spark Connect or on a caller's session."""
        from forensics.runtime.master import chosen_master
        from forensics.storage.connectors import is_cluster

        return self._spark is None and not self._remote and is_cluster(chosen_master(self._master))

    def _store_read_root(self, loc: "StoreLocation") -> str | None:
        """On a cluster the tool starts, the executors read a remote table from the store, not from
        this machine's mirror: the connector's settings join the session's (the user's win), and
        the URI Spark reads is returned (forensics/storage/connectors.py). None when the executors
        read the mirror (`_reads_from_store`)."""
        from forensics.storage.connectors import plan

        if not self._reads_from_store():
            return None
        assert self.store is not None
        read = plan(loc, self.store.options, self._spark_conf)
        self._spark_conf = {**read.settings, **self._spark_conf}
        if read.not_mapped:
            from forensics.runtime.logs import logger

            logger.warning("storage options not passed to the cluster's %s connector: %s", loc.kind, ", ".join(read.not_mapped))
        return read.spark_root

    def _session_is_local(self) -> bool:
        """Whether the session `_spark_session` gives runs its executors on this machine (a first
        look then writes their bundle while it starts: forensics/log/bundle.py `WriteAhead`)."""
        if self._spark is not None:
            from forensics.runtime.spill import shares_this_disk

            return shares_this_disk(self._spark)
        from forensics.runtime.master import is_local

        return not self._remote and is_local(self._master)

    def _spark_session(self) -> Any:
        if self._spark is not None:
            return self._spark
        from forensics.runtime.spark import get_spark

        return get_spark(master=self._master, remote=self._remote, conf=self._spark_conf)

    # ---- what the log is ------------------------------------------------------------

    @property
    def writer_conf(self) -> "WriterConf | None":
        """The session settings of the writer being modelled, parsed as its Spark would (None: none given)."""
        return self._writer_conf

    @property
    def location(self) -> str:
        """The table's URI, as resolved (absolute `file:` URI for a local path)."""
        return self._log.location

    @property
    def versions(self) -> list[int]:
        """The retained versions, ascending."""
        return self._log.versions

    @property
    def latest_version(self) -> int | None:
        """The newest version in the log, or None for an empty log."""
        return self._log.latest_version

    @property
    def findings(self) -> list["Finding"]:
        """What the reader noticed about the log (gaps, corrupt lines, stale checkpoints...)."""
        return list(self._log.findings)

    @property
    def read_from_cache(self) -> bool:
        """Whether the log came from the cache (no Spark job) rather than a fresh read."""
        return self._log.from_cache

    @property
    def log(self) -> "DeltaLog":
        """The parsed log itself, for the stages below the front object (not a stable API)."""
        return self._log

    @property
    def state(self) -> "StateIndex":
        """Metadata, protocol and file lifetimes at every version, built once per Table."""
        with self._lock:
            if self._state is None:
                from forensics.sets.commit_sets import StateIndex

                self._state = StateIndex(self._log)
            return self._state

    def has_version(self, version: int) -> bool:
        """Whether `version` is in the retained log."""
        return self._log.has_version(version)

    def _need(self, version: int) -> None:
        self._log.record(version)  # VersionNotInLog when absent

    def commit(self, version: int) -> "CommitRecord":
        """One version's commitInfo (parameters and metrics decoded) and its action counts."""
        return self._log.record(version)

    def commit_index(self) -> pl.DataFrame:
        """The raw commit index, one row per version in the reader's column names (fast: no JSON
        decoding; `history()` is the documented shape)."""
        return self._log.commits

    def actions(self, version: int) -> pl.DataFrame:
        """One version's add/remove/cdc actions, one row each (path, partition values, size, DV)."""
        self._need(version)
        return self._log.actions_of(version)

    def other_actions(self, version: int) -> pl.DataFrame:
        """One version's other actions (metaData, protocol, txn, domainMetadata, commitInfo...)."""
        self._need(version)
        return self._log.others_of(version)

    # ---- tables (polars DataFrames) --------------------------------------------------

    def select(self, selection: "Selection | None" = None, *, from_version: int | None = None, to_version: int | None = None,
               since: "datetime | int | str | None" = None, until: "datetime | int | str | None" = None,
               last: int | None = None, utc: bool = False) -> "VersionRange | None":
        """The retained versions a question covers (None: all of them), as every command's `--from`,
        `--to`, `--since`, `--until`, `--last` choose them: versions `from_version..to_version`;
        commits from the first at or after `since` to the last at or before `until` (each a
        `datetime`, epoch ms, or text such as `"2024-06-20T09:00"`, `"09:00"`, `"2h"`, `"yesterday"`,
        local time unless `utc` or an offset), by the commit time DESCRIBE HISTORY shows; then the
        `last` N of those. Or pass a ready `selection` (`parse_selection(...)`). Raises
        RangeOutsideLog (exit 13) when that holds no retained version."""
        if selection is None:
            selection = parse_selection(from_version=from_version, to_version=to_version, since=since, until=until,
                                        last=last, utc=utc)
        return selection.resolve(self._log.commits)

    def _span(self, start: int | None, end: int | None, since: "datetime | int | str | None", until: "datetime | int | str | None", last: int | None) -> tuple[int | None, int | None]:
        """(first, last) version of a selection, None where it is unbounded (forensics/log/select.py)."""
        if start is None and end is None and since is None and until is None and last is None:
            return None, None
        r = self.select(from_version=start, to_version=end, since=since, until=until, last=last)
        return (r.first, r.last) if r is not None else (None, None)

    def history(self, start: int | None = None, end: int | None = None, *, since: "datetime | int | str | None" = None, until: "datetime | int | str | None" = None, last: int | None = None) -> pl.DataFrame:
        """One row per retained version, with the `history --json` field names; `start`/`end` (versions),
        `since`/`until` (commit times) and `last` choose the versions as `select` does. The whole
        commitInfo: `operationMetrics` (a struct, integer metrics Int64 whatever the writer),
        `userMetadata`, `tags`, `clientVersion`, `engineInfo`, and `otherCommitInfo` (every other key);
        `committedAt`, the commit's time as DESCRIBE HISTORY shows it (inCommitTimestamp where the
        table has it, else commitInfo's timestamp) as an aware UTC datetime (the epoch-ms fields stay)."""
        from forensics.log.history import history_frame

        return history_frame(self._log.commits, *self._span(start, end, since, until, last))

    def history_json(self, start: int | None = None, end: int | None = None, *, since: "datetime | int | str | None" = None, until: "datetime | int | str | None" = None, last: int | None = None) -> str:
        """The `history --json` document (built column-wise: fast on 100k versions), each row
        led by the JSON contract's schema_version; the versions as `history` chooses them."""
        from forensics.log.history import history_json
        from forensics.schemas import SCHEMA_VERSION

        return history_json(self._log.commits, *self._span(start, end, since, until, last), SCHEMA_VERSION)

    def history_json_parts(self, start: int | None = None, end: int | None = None, *, since: "datetime | int | str | None" = None, until: "datetime | int | str | None" = None, last: int | None = None) -> "Iterator[str]":
        """`history_json`'s text in pieces to write one after another (a million versions make a 1 GB
        document: held whole, it took several times that in memory)."""
        from forensics.log.history import history_json_parts
        from forensics.schemas import SCHEMA_VERSION

        return history_json_parts(self._log.commits, *self._span(start, end, since, until, last), SCHEMA_VERSION)

    def history_rows(self, start: int | None = None, end: int | None = None, *, since: "datetime | int | str | None" = None, until: "datetime | int | str | None" = None, last: int | None = None) -> list[dict[str, Any]]:
        """The `history --json` objects as Python dicts (what views render); the versions as `history` chooses them."""
        from forensics.log.history import history_rows

        return history_rows(self._log.commits, *self._span(start, end, since, until, last))

    def find(self, query: "FindQuery | None" = None, *, txn_id: str | None = None, app_id: str | None = None,
             txn_version: int | None = None, user_metadata: str | None = None, operation: str | None = None,
             from_version: int | None = None, to_version: int | None = None, since: "datetime | int | str | None" = None,
             until: "datetime | int | str | None" = None, last: int | None = None, utc: bool = False,
             selection: "Selection | None" = None) -> "FindResult":
        """Did a write land? The commit with commitInfo `txn_id`, or app transaction `app_id` (at
        `txn_version`), or whose userMetadata contains `user_metadata`, or of `operation`; every
        given field must match, within the versions `select` chooses. `.answer` is `committed`
        (`.version` the commit, `.commit` its history row), `at-or-before` (a checkpoint's txn shows
        the app reached it; the commit is gone), `absent` or `unknown` (searched past retention);
        `.exit_code` is what `delta-forensics find` exits with. Or pass a ready `query`
        (`find_query(...)`) and `selection` (`parse_selection(...)`)."""
        from forensics.analysis.find import find

        query = query or find_query(txn_id=txn_id, app_id=app_id, txn_version=txn_version, user_metadata=user_metadata,
                                    operation=operation)
        sel = selection or parse_selection(from_version=from_version, to_version=to_version, since=since, until=until,
                                           last=last, utc=utc)
        return find(self._log, query, sel)

    def snapshot(self, version: int | None = None) -> "Snapshot":
        """The table state at `version` (default latest): active files, metadata, protocol."""
        from forensics.log.snapshot import snapshot

        snap, found = snapshot(self._log, version)
        self._log.findings.extend(f for f in found if f not in self._log.findings)
        return snap

    def snapshot_frame(self, version: int | None = None, *, stats: bool = True) -> tuple["SnapshotFrame", list["Finding"]]:
        """The same state with the active files left as a frame (1M files in seconds)."""
        from forensics.log.snapshot import snapshot_frame

        return snapshot_frame(self._log, version, stats=stats)

    def commit_sets(self, version: int) -> "CommitSets":
        """What the commit at `version` read (with how sure) and wrote."""
        from forensics.sets.commit_sets import commit_sets

        self._need(version)
        return commit_sets(self._log, version, self.state)

    def sets(self, version: int | None = None) -> pl.DataFrame:
        """Read and write sets of every version (or one), one row each."""
        versions = [version] if version is not None else self.versions
        rows = [self.commit_sets(v).to_dict() for v in versions]
        import polars as pl

        return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()

    @_as_the_writer_ran
    def replay_report(self, *, isolation_level: str | None = None, versions: list[int] | None = None) -> "ReplayReport":
        """Every concurrency window through the rules: the verdicts with their checks and findings
        (replayed once per Table for each isolation level and version range)."""
        from forensics.replay.windows import replay_table

        key = (isolation_level, tuple(versions) if versions is not None else None)
        with self._lock:
            if key not in self._replays:
                self._replays[key] = replay_table(self._log, rules=self.rules, isolation_level=isolation_level,
                                                  versions=versions, state=self.state)
            return self._replays[key]

    def replay(self, *, isolation_level: str | None = None, with_evidence: bool = False) -> pl.DataFrame:
        """One row per commit with a stale readVersion: verdict (clean/reordered/anomaly), rule, winner;
        `with_evidence`: and one row per aborted attempt (verdict `aborted`, version null, `attempt` its id)."""
        frame = self.replay_report(isolation_level=isolation_level).to_frame()
        if not with_evidence:
            return frame
        rows = [{"attempt": a.id, "version": None, "readVersion": a.read_versions[1] if a.read_versions else None,
                 "operation": a.operation, "verdict": "aborted", "exception": a.exception, "winningVersion": a.winning_version,
                 "rule": a.rule, "certainty": a.certainty, "why": a.answer} for a in self.silent_log().attempts]
        import polars as pl

        return pl.concat([frame, pl.DataFrame(rows, infer_schema_length=None)], how="diagonal_relaxed") if rows else frame

    def verdict_lines(self, *, isolation_level: str | None = None, versions: list[int] | None = None,
                      attempts: "list[AttemptRow] | None" = None) -> list[dict[str, Any]]:
        """`replay --jsonl` and `watch`: one dict per replayed window (`kind` "window", by version, with
        its commit's time; `versions`: only those commits) then one per aborted attempt of `attempts`
        (`kind` "attempt", verdict "aborted"; e.g. `silent_log().attempts`). Schema: `schema replay-jsonl`."""
        from forensics.analysis.gate import verdict_lines

        report = self.replay_report(isolation_level=isolation_level, versions=versions)
        times = {}
        for v in report.verdicts:
            rec = self.commit(v)
            times[v] = rec.in_commit_timestamp if rec.in_commit_timestamp is not None else rec.timestamp
        return verdict_lines(self.location, report.verdicts.values(), attempts or [], times)

    def refresh(self) -> "Table":
        """The table as it is now, for a follower (`watch`): `_delta_log` listed again (a remote one
        from its tail, through the mirror). A changed log gives a Table with only the new commits
        parsed (the cache holds the rest); an unchanged one a Table sharing this parse and state.
        Either way the new Table looks for evidence afresh, so new orphan files show."""
        from forensics.log.delta_log import DeltaLog
        from forensics.log.listing import list_log

        uri, use_cache, storage_options, profile = self._reopen
        store, starting = self.store, None
        if store is not None:
            parsed = self.versions
            store, starting = self._mirror(store.location, storage_options, profile, use_cache, parsed=parsed[-1] if parsed else -1)
        listing = list_log(str(store.mirror.root), store.mirror.entries) if store is not None else list_log(self.location)
        now = (listing.fingerprint(), listing.latest_version)
        if now == (self._log.listing.fingerprint(), self._log.listing.latest_version):
            log = self._log
        elif store is not None:
            log = DeltaLog.open(str(store.mirror.root), use_cache=use_cache, spark_factory=self._spark_session,
                                as_uri=store.location.uri, spark_root=self._store_read_root(store.location),
                                spark_starting=starting, known=store.mirror.entries, session_is_local=self._session_is_local())
            log.store = store
        else:
            log = DeltaLog.open(self.location, use_cache=use_cache, spark_factory=self._spark_session,
                                session_is_local=self._session_is_local())
        fresh = Table(uri, rules=self.rules, spark=self._spark, master=self._master, remote=self._remote,
                      spark_conf=self._spark_conf, writer_conf=self._writer_given, _log=log)
        fresh.store, fresh.catalog_name, fresh._reopen = store, self.catalog_name, self._reopen
        if log is self._log:
            fresh._state = self._state
        return fresh

    def silent_log(self, *, isolation_level: str | None = None, with_evidence: bool = True) -> "SilentLog":
        """What the log cannot show: commits that record no readVersion (their windows are skipped) and
        the aborted attempts the evidence found, each with its attribution (`replay`'s first lines)."""
        from forensics.analysis.silent import SilentLog, attempt_rows, silent_commits

        report = self.replay_report(isolation_level=isolation_level)
        skipped = [v.version for v in report.verdicts.values() if v.verdict == "skipped" and v.read_version is None]
        out = SilentLog(silent_commits(self._log, skipped))
        if not with_evidence:
            out.attempts_why = "not looked for (--no-evidence)"
            return out
        try:
            out.attempts = attempt_rows(self.evidence().attempts)
        except ForensicsError as e:  # the replay stands without it, and says so
            out.attempts_why = f"not looked for: {e.one_line()}"
        return out

    def stats_report(self, *, window: str = "1h", from_version: int | None = None, to_version: int | None = None,
                     top: int = 20, with_evidence: bool = True, since: "datetime | int | str | None" = None, until: "datetime | int | str | None" = None, last: int | None = None) -> "Stats":
        """Contention statistics: partitions, files, operation pairs, concurrency, retries; over the
        versions `select` chooses (`from_version`, `to_version`, `since`, `until`, `last`)."""
        from forensics.analysis.stats import parse_window, table_stats

        window_ms = parse_window(window)
        from_version, to_version = self._span(from_version, to_version, since, until, last)
        tl = self.timeline(from_version=from_version, to_version=to_version, with_evidence=with_evidence)
        attempts = self.evidence().attempts if with_evidence and tl.evidence else None  # cached by the timeline
        st = table_stats(self._log, tl, window_ms, window, top=max(1, top), attempts=attempts)
        st.findings = list(tl.findings)
        return st

    def stats(self, *, window: str = "1h", from_version: int | None = None, to_version: int | None = None,
              since: "datetime | int | str | None" = None, until: "datetime | int | str | None" = None, last: int | None = None) -> pl.DataFrame:
        """The most contended partitions, one row each (the rest: `stats_report`)."""
        st = self.stats_report(window=window, from_version=from_version, to_version=to_version, top=1_000_000,
                               since=since, until=until, last=last)
        import polars as pl

        return pl.DataFrame(st.to_dict()["partitions"], infer_schema_length=None)

    # ---- single answers (dataclasses with to_dict) -------------------------------------

    @_as_the_writer_ran
    def explain(self, version: int, *, isolation_level: str | None = None, error_file: str | None = None,
                use_evidence: bool = True) -> "Explanation":
        """The story of one version: reads, winners, each check, the verdict, defeated attempts, advice."""
        from forensics.analysis.explain import explain_version
        from forensics.evidence.defeated import defeated_attempts

        self._need(version)
        defeated = defeated_attempts(self._log, version, self.state, error_file=error_file,
                                     evidence=(lambda: self.evidence()) if use_evidence else None)
        return explain_version(self._log, version, rules=self.rules, isolation_level=isolation_level,
                               state=self.state, defeated=defeated)

    @_as_the_writer_ran
    def explain_error(self, error: "str | BaseException | TracebackException | ErrorReport", *,
                      read_version: int | None = None, failed_at: "datetime | str | int | None" = None,
                      operation: str | None = None, predicate: str | None = None, sql: str | None = None,
                      window: "tuple[datetime | str | int, datetime | str | int] | None" = None) -> "ErrorExplanation":
        """Which commit beat the transaction that failed with `error`, by which rule.

        `error` is what the job caught or printed: the exception object itself (delta-spark's
        `delta.exceptions.ConcurrentAppendException` and its kin, plain, captured or Spark
        Connect's; a PySpark captured exception whose message holds a Delta error; deltalake's
        `CommitFailedError`; any exception whose `__cause__`/`__context__` chain holds one), a
        `traceback.format_exc()` text or `TracebackException`, the error text, or a parsed
        `ErrorReport`. Exceptions are recognised by class name and text, never `isinstance`.

        What you know of the failed transaction narrows the answer: `read_version` the table
        version it read; `failed_at` when it failed (an aware or local `datetime`, an ISO 8601
        string, or epoch milliseconds); `operation` (DELETE, UPDATE, MERGE, WRITE, OPTIMIZE, ...)
        and its condition `predicate`, or its `sql` statement (parsed, never run); `window` the
        (earliest, latest) time the winner can have committed, each a time as `failed_at` takes.
        Raises NotAConflictError when `error` holds no Delta concurrency error.
        """
        from forensics.evidence.loser import LoserFacts, explain_error, facts_from_sql

        if sql:
            operation, predicate = facts_from_sql(sql)
        facts = LoserFacts(read_version, _ms(failed_at, "failed_at"), operation, predicate)
        report = _error_report(error)
        if not report.recognized:
            raise ForensicsError(ExitCode.NOT_RECOGNIZED, f"not a Delta concurrency error: {report.why_not or 'no conflict text found'}")
        w = report.winner
        named = w is not None and (w.version is not None or bool(w.txn_id) or w.timestamp is not None)
        # The loser never reached the log: its orphan files say what it wrote. Replayed only when the
        # text names no winner (then the attempts' replays point at it).
        ev = self.evidence(replay=not named)
        exp = explain_error(self._log, report, rules=self.rules, window=_window_ms(window), state=self.state, evidence=ev,
                            facts=facts)
        from forensics.analysis.story import error_story

        exp.story_lines = error_story(exp, self._log)  # the analysis stage tells what the evidence stage found
        exp.winning_commit = self._log.record(exp.winning_version) if exp.winning_version is not None and \
            self._log.has_version(exp.winning_version) else None
        return exp

    def find_winner(self, error: "str | BaseException | TracebackException | ErrorReport", *,
                    window: "tuple[datetime | str | int, datetime | str | int] | None" = None) -> "WinnerMatch":
        """The winning commit an error names (version, txnId, or timestamp and operation); `error`
        as `explain_error` takes it."""
        from forensics.evidence.winner import find_winner

        return find_winner(self._log, _error_report(error).winner, loser_window=_window_ms(window))

    @_as_the_writer_ran
    def whatif(self, request: "WhatIfRequest | None" = None, *, read_version: int | None = None,
               operation: str | None = None, predicate: str | None = None, mode: str | None = None,
               partitions: "list[dict[str, str]] | None" = None, isolation_level: str | None = None,
               rules: str | None = None, until: int | None = None, app_id: str | None = None) -> "WhatIfResult":
        """A hypothetical transaction replayed against the log: had it read `read_version` and then
        done `operation` (INSERT, APPEND, OVERWRITE, WRITE, DELETE, UPDATE, MERGE, OPTIMIZE,
        SET TBLPROPERTIES, ADD COLUMNS, STREAMING UPDATE) with condition `predicate` (SQL, parsed,
        never run), would it commit, and if not which commit beats it by which rule?

        `mode` Append or Overwrite for WRITE; `partitions` the partitions it writes
        (`[{"date": "2024-06-18"}]`); `isolation_level` Serializable, WriteSerializable or
        SnapshotIsolation (default: the table's); `rules` a rule profile (default: the Table's, else
        the table's latest writer's); `until` the last version it races (default: the latest);
        `app_id` a streaming query's txn appId. Or pass a ready `WhatIfRequest`.

        >>> r = t.whatif(read_version=1, operation="DELETE", predicate="date = '2024-06-18'")
        >>> r.verdict, r.exception, r.winning_version, r.rule
        """
        from forensics.replay.whatif import WhatIfRequest, whatif

        if request is None:
            if read_version is None or operation is None:
                raise ForensicsError(ExitCode.USAGE, "whatif needs read_version and operation (or a WhatIfRequest)")
            request = WhatIfRequest(read_version=read_version, operation=operation, predicate=predicate, mode=mode,
                                    partitions=list(partitions or []), isolation_level=isolation_level,
                                    rules=rules if rules is not None else self.rules, until=until, app_id=app_id)
        if request.rules:
            check_profile(request.rules)
        return whatif(self._log, request, self.state)

    @_as_the_writer_ran
    def evidence(self, *, replay: bool = True) -> "Evidence":
        """Orphan data files, stray commit files, and the aborted attempts they reveal."""
        from forensics.evidence import collect_evidence

        key = (self.rules, replay)
        with self._lock:
            if key not in self._evidence:
                have = self._evidence.get((self.rules, True))  # a replayed one answers both
                self._evidence[key] = have or collect_evidence(self._log, self.state, rules=self.rules, replay=replay)
            return self._evidence[key]

    def timeline(self, *, isolation_level: str | None = None, from_version: int | None = None,
                 to_version: int | None = None, with_evidence: bool = True, since: "datetime | int | str | None" = None, until: "datetime | int | str | None" = None, last: int | None = None) -> "Timeline":
        """Committed transactions, aborted attempts and who-lost-to-whom edges, for the exports; over
        the versions `select` chooses."""
        from forensics.analysis.timeline import build_timeline

        from_version, to_version = self._span(from_version, to_version, since, until, last)
        versions = None
        if from_version is not None or to_version is not None:
            versions = [v for v in self.versions if (from_version is None or v >= from_version) and (to_version is None or v <= to_version)]
        report = self.replay_report(isolation_level=isolation_level, versions=versions)
        evidence, why_not = None, None
        if with_evidence:
            try:
                evidence = self.evidence()
            except ForensicsError as e:  # the timeline stands without it, and says so
                why_not = f"aborted attempts not included: {e.one_line()}"
        tl = build_timeline(self._log, report, evidence, from_version, to_version)
        tl.findings = list(report.findings)
        if why_not:
            tl.notes = [n for n in tl.notes if not n.startswith("aborted attempts not included")] + [why_not]
        return tl

    @_as_the_writer_ran
    def counterfactual(self, *, isolation_level: str | None = None, partition_by: str | None = None,
                       baseline: "ReplayReport | None" = None) -> "Counterfactual":
        """What another isolation level or partitioning would have changed: conflicts that appear or vanish."""
        from forensics.analysis.counterfactual import isolation_counterfactual, partition_counterfactual

        if partition_by:
            return partition_counterfactual(self._log, partition_by, rules=self.rules, isolation_level=isolation_level,
                                            baseline=baseline or self.replay_report(), state=self.state)
        if isolation_level not in ISOLATION_LEVELS:
            raise ForensicsError(ExitCode.USAGE, f"a counterfactual needs a partition column or an isolation level, one of "
                                 f"{', '.join(ISOLATION_LEVELS)} (got {isolation_level!r})")
        return isolation_counterfactual(self._log, isolation_level, rules=self.rules, baseline=baseline or self.replay_report(),
                                        state=self.state, alternative=self.replay_report(isolation_level=isolation_level))

    def export(self, fmt: str, output: str | Path, *, from_version: int | None = None, to_version: int | None = None,
               with_evidence: bool = True, window: str = "1h", isolation_levels: list[str] | None = None,
               partition_columns: list[str] | None = None, redact: bool = False,
               utc: bool | None = None, since: "datetime | int | str | None" = None, until: "datetime | int | str | None" = None, last: int | None = None) -> tuple[list[Path], "Timeline"]:
        """Write the timeline as json/csv/parquet/chrome/mermaid/html (the post-mortem), never under the
        table: the files written and the timeline they hold. `redact` replaces user names, e-mails,
        notebook, cluster and job ids, bucket and host names with stable placeholders (user-1, ...)."""
        from forensics.export import check_output_path, write_export

        out = check_output_path(output, self.location)
        tl = self.timeline(from_version=from_version, to_version=to_version, with_evidence=with_evidence,
                           since=since, until=until, last=last)
        pm = None
        if fmt == "html":
            from forensics.analysis.stats import parse_window, table_stats
            from forensics.export.postmortem import build_postmortem

            stats = table_stats(self._log, tl, parse_window(window), window).to_dict()
            base = self.replay_report()
            cfs = [self.counterfactual(isolation_level=lv, baseline=base).to_dict()
                   for lv in isolation_levels or ["Serializable", "WriteSerializable"]]
            cfs += [self.counterfactual(partition_by=c, baseline=base).to_dict() for c in partition_columns or []]
            pm = build_postmortem(tl, self.explain, stats=stats, counterfactuals=cfs, utc=utc)
        if redact:
            from forensics.export.redact import Redactor

            redactor = Redactor.for_table(self._log.commits, self.location)
            tl, pm = redactor.timeline(tl), pm.redacted(redactor) if pm is not None else None
        return write_export(tl, fmt, out, postmortem=pm, utc=utc), tl

    def __repr__(self) -> str:
        vs = self.versions
        span = f"v{vs[0]}..v{vs[-1]}" if vs else "no versions"
        return f"Table({self.location!r}, {span}, rules={self.rules or 'per commit'})"


def _writer_conf(given: Mapping[str, str]) -> "WriterConf | None":
    """The writer's settings parsed as its Spark would; a value it would refuse is a usage error."""
    if not given:
        return None
    from forensics.rules.writer_conf import WriterConf

    try:
        return WriterConf.parse(given)
    except ValueError as e:
        raise ForensicsError(ExitCode.USAGE, f"writer setting {e}") from e


def check_profile(name: str | None) -> None:
    """An unknown rule profile is a usage error, said in one line."""
    from forensics.rules import get_profile

    if not name:
        return
    try:
        get_profile(name)
    except KeyError as e:
        raise ForensicsError(ExitCode.USAGE, str(e).strip("'\"")) from e


def _error_report(error: Any) -> "ErrorReport":
    """What `explain_error` was given, read (errortext.parser.read_error); another type is a usage error."""
    from forensics.errortext.parser import read_error

    try:
        return read_error(error)
    except TypeError as e:
        raise ForensicsError(ExitCode.USAGE, f"explain_error takes {e}") from e


def _ms(value: "datetime | str | int | None", name: str) -> int | None:
    """A time the caller gave (datetime, ISO 8601 text or epoch ms) as epoch ms; a usage error otherwise."""
    if value is None:
        return None
    from forensics.times import epoch_ms

    try:
        return epoch_ms(value)
    except ValueError as e:
        raise ForensicsError(ExitCode.USAGE, f"{name}: not a time ({e})") from e


def _window_ms(window: "tuple[datetime | str | int, datetime | str | int] | None") -> tuple[int, int] | None:
    if window is None:
        return None
    lo, hi = window
    return _ms(lo, "window"), _ms(hi, "window")  # type: ignore[return-value]


def parse_selection(*, from_version: int | None = None, to_version: int | None = None,
                    since: "datetime | int | str | None" = None, until: "datetime | int | str | None" = None,
                    last: int | None = None, utc: bool = False) -> "Selection":
    """The versions a question asks for, read before any table is (a usage error, exit 2, for a time it
    cannot read or --from after --to); `Table.select` resolves it against a table's log."""
    from forensics.log.select import Selection

    return Selection.of(from_version=from_version, to_version=to_version, since=since, until=until, last=last, utc=utc)


def find_query(*, txn_id: str | None = None, app_id: str | None = None, txn_version: int | None = None,
               user_metadata: str | None = None, operation: str | None = None) -> "FindQuery":
    """What `find` looks for, checked before any table is read (a usage error, exit 2, when it asks nothing)."""
    from forensics.analysis.find import FindQuery

    q = FindQuery(txn_id, app_id, txn_version, user_metadata, operation)
    q.check()
    return q
