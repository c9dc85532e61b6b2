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

import polars as pl

from forensics.errors import ExitCode, ForensicsError
from forensics.model import ISOLATION_LEVELS

if TYPE_CHECKING:  # the heavy stages load on first use: `history` of a cached table needs none of them
    from forensics.analysis.counterfactual import Counterfactual
    from forensics.analysis.explain import Explanation
    from forensics.analysis.silent import SilentLog
    from forensics.analysis.stats import Stats
    from forensics.analysis.timeline import Timeline
    from forensics.errortext import ErrorReport
    from forensics.evidence import Evidence
    from forensics.evidence.loser import ErrorExplanation
    from forensics.evidence.winner import WinnerMatch
    from forensics.log.delta_log import DeltaLog
    from forensics.log.remote import RemoteTable
    from forensics.log.snapshot import SnapshotFrame
    from forensics.model import CommitRecord, Finding, Snapshot
    from forensics.replay.whatif import WhatIfRequest, WhatIfResult
    from forensics.replay.windows import ReplayReport
    from forensics.rules.writer_conf import WriterConf
    from forensics.sets.commit_sets import CommitSets, StateIndex

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
    >>> t.explain_error(text)       # which commit beat the transaction that printed `text`
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
            return DeltaLog.open(uri, use_cache=use_cache, spark_factory=self._spark_session, progress=progress)
        from forensics.log.remote import mirror_table

        self.store = mirror_table(loc, storage_options, profile=profile, use_cache=use_cache, progress=progress)
        log = DeltaLog.open(str(self.store.mirror.root), use_cache=use_cache, spark_factory=self._spark_session,
                            progress=progress, as_uri=loc.uri)
        log.store = self.store
        return log

    @classmethod
    def from_cache(cls, uri: str | Path, *, rules: str | None = None,
                   writer_conf: Mapping[str, str] | None = None) -> "Table | None":
        """The table as cached, without starting a JVM; None when the cache is missing or behind (a
        remote table is always looked at afresh: only the store knows whether it changed)."""
        from forensics.log.delta_log import DeltaLog
        from forensics.storage import parse_location

        if parse_location(str(uri)).kind != "local":
            return None
        log = DeltaLog.open_cached(str(uri))
        return None if log is None else cls(uri, rules=rules, writer_conf=writer_conf, _log=log)

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
        return self._log.versions

    @property
    def latest_version(self) -> int | None:
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

    def history(self, start: int | None = None, end: int | None = None) -> pl.DataFrame:
        """One row per retained version, with the `history --json` field names."""
        from forensics.log.history import history_frame

        return history_frame(self._log.commits, start, end)

    def history_json(self, start: int | None = None, end: int | None = None) -> str:
        """The `history --json` document (built column-wise: fast on 100k versions), each row
        led by the JSON contract's schema_version."""
        from forensics.log.history import history_json
        from forensics.schemas import SCHEMA_VERSION

        return history_json(self._log.commits, start, end, SCHEMA_VERSION)

    def history_rows(self, start: int | None = None, end: int | None = None) -> list[dict[str, Any]]:
        """The `history --json` objects as Python dicts (what views render)."""
        from forensics.log.history import history_rows

        return history_rows(self._log.commits, start, end)

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
        return pl.concat([frame, pl.DataFrame(rows, infer_schema_length=None)], how="diagonal_relaxed") if rows else frame

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
                     top: int = 20, with_evidence: bool = True) -> "Stats":
        """Contention statistics: partitions, files, operation pairs, concurrency, retries."""
        from forensics.analysis.stats import parse_window, table_stats

        window_ms = parse_window(window)
        tl = self.timeline(from_version=from_version, to_version=to_version, with_evidence=with_evidence)
        attempts = self.evidence().attempts if with_evidence and tl.evidence else None  # cached by the timeline
        st = table_stats(self._log, tl, window_ms, window, top=max(1, top), attempts=attempts)
        st.findings = list(tl.findings)
        return st

    def stats(self, *, window: str = "1h", from_version: int | None = None, to_version: int | None = None) -> pl.DataFrame:
        """The most contended partitions, one row each (the rest: `stats_report`)."""
        st = self.stats_report(window=window, from_version=from_version, to_version=to_version, top=1_000_000)
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
    def explain_error(self, error: "str | ErrorReport", *, window: tuple[int, int] | None = None,
                      read_version: int | None = None, failed_at: int | None = None, operation: str | None = None,
                      predicate: str | None = None, sql: str | None = None) -> "ErrorExplanation":
        """Which commit beat the transaction that failed with `error` (text or parsed), by which rule.

        What you know of the failed transaction narrows the answer: the version it read, when it
        failed (epoch ms), its operation and condition, or its SQL statement (read, never run).
        """
        from forensics.errortext import parse_error_text
        from forensics.evidence.loser import LoserFacts, explain_error, facts_from_sql

        if sql:
            operation, predicate = facts_from_sql(sql)
        facts = LoserFacts(read_version, failed_at, operation, predicate)

        report = parse_error_text(error) if isinstance(error, str) else error
        if not report.recognized:
            raise ForensicsError(ExitCode.NOT_RECOGNIZED, f"not a Delta concurrency error: {report.why_not or 'no conflict text found'}")
        w = report.winner
        named = w is not None and (w.version is not None or bool(w.txn_id) or w.timestamp is not None)
        # The loser never reached the log: its orphan files say what it wrote. Replayed only when the
        # text names no winner (then the attempts' replays point at it).
        ev = self.evidence(replay=not named)
        exp = explain_error(self._log, report, rules=self.rules, window=window, state=self.state, evidence=ev, facts=facts)
        from forensics.analysis.story import error_story

        exp.story_lines = error_story(exp, self._log)  # the analysis stage tells what the evidence stage found
        return exp

    def find_winner(self, error: "str | ErrorReport", *, window: tuple[int, int] | None = None) -> "WinnerMatch":
        """The winning commit an error text names (version, txnId, or timestamp and operation)."""
        from forensics.errortext import parse_error_text
        from forensics.evidence.winner import find_winner

        report = parse_error_text(error) if isinstance(error, str) else error
        return find_winner(self._log, report.winner, loser_window=window)

    @_as_the_writer_ran
    def whatif(self, request: "WhatIfRequest | None" = None, **fields: Any) -> "WhatIfResult":
        """A hypothetical transaction: `whatif(read_version=3, operation="DELETE", predicate="...")`."""
        from forensics.replay.whatif import WhatIfRequest, whatif

        if request is None:
            fields.setdefault("rules", self.rules)
            request = WhatIfRequest(**fields)
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
                 to_version: int | None = None, with_evidence: bool = True) -> "Timeline":
        """Committed transactions, aborted attempts and who-lost-to-whom edges, for the exports."""
        from forensics.analysis.timeline import build_timeline

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
               utc: bool | None = None) -> tuple[list[Path], "Timeline"]:
        """Write the timeline as json/csv/parquet/chrome/mermaid/html (the post-mortem), never under the
        table: the files written and the timeline they hold. `redact` replaces user names, e-mails,
        notebook, cluster and job ids, bucket and host names with stable placeholders (user-1, ...)."""
        from forensics.export import check_output_path, write_export

        out = check_output_path(output, self.location)
        tl = self.timeline(from_version=from_version, to_version=to_version, with_evidence=with_evidence)
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
