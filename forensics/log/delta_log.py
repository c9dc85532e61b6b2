"""A table's parsed log: listing + commit index + file actions, served from the cache.

`DeltaLog.open` lists `_delta_log` (no JVM), compares the listing with the cache, and only
starts Spark for commits the cache has not seen. A repeat look with no new commits reads
three Parquet files with polars and never waits for a JVM; the (large) file-actions table is
only read from the cache when a caller first touches `log.actions` (`history` never does).
When Spark will surely be needed, the JVM starts while `_delta_log` is listed; for a remote table,
as soon as the store's listing shows commits past the cache (`SparkStarter`), while they download.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from contextlib import ExitStack
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Callable

import polars as pl

from forensics.errors import ExitCode, ForensicsError
from forensics.log import cache as C
from forensics.log import listing as L
from forensics.log.bundle import WriteAhead
from forensics.log.index import (
    build_commit_index,
    duplicate_findings,
    line_findings,
    record_from_row,
    records_of,
)
from forensics.log.sanity import sanity_findings, split_invalid_actions
from forensics.log.reader import ACTION_COLUMNS, OTHER_COLUMNS, ParsedFiles, arrow_schema, read_commit_files
from forensics.model import CommitRecord, Finding
from forensics.runtime.gc_tuning import fewer_collections
from forensics.runtime.master import is_local as master_is_local
from forensics.runtime.paths import table_cache_dir

if TYPE_CHECKING:
    from forensics.log.remote import ListedCommits

SparkFactory = Callable[[], Any]
Progress = Callable[[str], None]


def _default_spark() -> Any:
    from forensics.runtime.spark import get_spark

    return get_spark()


@dataclass
class DeltaLog:
    """The parsed `_delta_log`: one row per commit and per file action, the findings, and whether it came
    from the cache."""
    location: str
    listing: L.LogListing
    commits: pl.DataFrame
    actions: pl.DataFrame  # a property (below): loaded from the cache on first use
    others: pl.DataFrame
    findings: list[Finding] = field(default_factory=list)
    from_cache: bool = False
    spark_started: bool = False
    cache_dir: Path | None = None
    spark_factory: SparkFactory = _default_spark
    store: Any = None  # forensics.log.remote.RemoteTable when the log is a mirror of a remote table
    _records: dict[int, CommitRecord] = field(default_factory=dict, repr=False)
    # Caches: init=False so dataclasses.replace (a counterfactual log) starts with fresh ones.
    _actions_loader: Callable[[], pl.DataFrame] | None = field(default=None, init=False, repr=False, compare=False)
    _by_version: dict[str, tuple] = field(default_factory=dict, init=False, repr=False, compare=False)
    _derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    # ---- opening --------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        location: str,
        *,
        use_cache: bool = True,
        spark_factory: SparkFactory | None = None,
        progress: Progress | None = None,
        as_uri: str | None = None,
        spark_root: str | None = None,
        spark_starting: "Future[Any] | None" = None,
        known: "L.Known | None" = None,
        session_is_local: bool | None = None,
    ) -> "DeltaLog":
        """Read the log at `location`; `as_uri` is the table's own URI when `location` is a local
        mirror of a remote `_delta_log` (the cache, paths and output then speak of the remote table);
        `spark_root` is where Spark reads the table from instead of the mirror (a cluster's
        executors reading the store: forensics/storage/connectors.py); `spark_starting` is a start
        of `spark_factory` the caller began earlier (`SparkStarter`), taken instead of one here;
        `known` is what a mirror that has just written `location` knows of its entries (`list_log`);
        `session_is_local` says whether the session `spark_factory` starts runs its executors here
        (None: known only for the default factory), so that a first look writes their bundle while
        it starts."""
        # A million names become LogFiles and tuples, with no cycles among them: the collector
        # would walk them again and again (a 1,000,000-commit open, 28 s against 16-23 s).
        with fewer_collections(), ExitStack() as stack:
            spark_factory = spark_factory or _default_spark
            say = progress or (lambda _msg: None)
            local = session_is_local if session_is_local is not None else spark_factory is _default_spark and master_is_local()
            loading = _cache_loading(location, as_uri) if use_cache else None
            listing, spark, ahead, planned = _list_while_starting(location, spark_factory, loading is not None, as_uri,
                                                                  spark_starting, known, ahead=local)
            if ahead is not None:
                stack.callback(ahead.discard)  # unless the read took it (a session that is not local reads no bundle)
            if spark_root is not None:
                listing.spark_log_uri = spark_root.rstrip("/") + "/_delta_log"
            if not listing.commits and not listing.checkpoints and not listing.staged and not listing.compacted:
                raise ForensicsError(ExitCode.NOT_A_TABLE, f"no commits in {listing.log_uri}", file="_delta_log")
            cache_dir = table_cache_dir(listing.table_uri)
            plan = planned.plan if planned is not None else _plan_files(listing)
            early = spark_starting
            if early is None and spark is None and use_cache and _cache_is_behind(cache_dir, plan):
                # New commits past the cache: start the JVM while the cache loads (~0.3 s on 20k).
                newest = _cached_max(cache_dir)  # once: read per version it re-read the cache's meta 20,000 times (minutes)
                early = start_spark([f for v, (f, _) in plan.items() if v > newest], plan, spark_factory)
            if loading is not None:
                cached = loading.result()
            else:  # nothing cached when the listing began: asked again after the JVM's start, when
                # another process may have published the table's first generation meanwhile
                cached = _load_cache(cache_dir, listing.table_uri) if use_cache else None
            covered = cached is not None and _cache_covers(cached, plan)  # while the JVM starts
            if early is not None:
                spark = early.result()
            started = False
            if covered:
                commits, actions, others, meta = cached
                new_files = [f for v, (f, _) in sorted(plan.items()) if v > meta["max_version"]]
                from_cache = True
                if new_files:
                    spark, parsed = _read_with_spark(spark, spark_factory, new_files, _source_versions(new_files, plan), say,
                                                     "new ", listing)
                    started = True
                    c2, a2, o2 = _index(parsed, plan, [v for v in sorted(plan) if v > meta["max_version"]])
                    commits = pl.concat([commits, c2], how="vertical_relaxed")
                    actions = _then_concat(actions, a2)
                    others = pl.concat([others, o2], how="vertical_relaxed")
                    if use_cache:
                        _append_cache(cache_dir, listing, plan, meta, commits, a2, o2)
            else:
                planned = planned or _Planned.of(plan)
                files = planned.files
                from_cache = False
                if files:
                    spark, parsed = _read_with_spark(spark, spark_factory, files, planned.versions, say, "", listing, ahead,
                                                     heap_reserved=spark is not None and planned.reserved)
                    started = True
                else:
                    parsed = ParsedFiles(arrow_schema(ACTION_COLUMNS).empty_table(), arrow_schema(OTHER_COLUMNS).empty_table())
                commits, actions, others = _index(parsed, plan, sorted(plan))
                if use_cache:
                    _write_cache(cache_dir, listing, plan, commits, actions, others)
            log = cls(
                location=listing.table_uri,
                listing=listing,
                commits=commits.sort("version"),
                actions=None if callable(actions) else actions,  # type: ignore[arg-type]
                others=others,
                from_cache=from_cache,
                spark_started=started or spark is not None,
                cache_dir=cache_dir if use_cache else None,
                spark_factory=spark_factory,
            )
            log._actions_loader = actions if callable(actions) else None
            log.findings = _all_findings(log, plan)
            return log

    @classmethod
    def open_cached(cls, location: str, as_uri: str | None = None,
                    listed: Callable[[list[tuple[int, int]]], None] | None = None) -> "DeltaLog | None":
        """The table from the cache only (lists `_delta_log`, never starts a JVM); `listed` is
        handed the listing's `commit_times()` as soon as it is taken, before the cache is judged.

        None when there is no cache or it is stale (a commit appeared, changed or is
        newer than the cached maximum): the caller then falls back to `open`.
        """
        loading = _cache_loading(location, as_uri)
        if loading is None:
            return None  # nothing cached: no listing (a second at 100k commits) before the caller's own
        listing = _as(L.list_log(location), as_uri)
        if listed is not None:
            listed(listing.commit_times())
        plan = _plan_files(listing)
        if not plan:
            return None
        cache_dir = table_cache_dir(listing.table_uri)
        cached = loading.result()
        if cached is None or not _cache_covers(cached, plan):
            return None
        commits, actions, others, meta = cached
        if any(v > meta["max_version"] for v in plan):
            return None
        log = cls(
            location=listing.table_uri,
            listing=listing,
            commits=commits.sort("version"),
            actions=None,  # type: ignore[arg-type]
            others=others,
            from_cache=True,
            spark_started=False,
            cache_dir=cache_dir,
        )
        log._actions_loader = actions
        log.findings = _all_findings(log, plan)
        return log

    @classmethod
    def part(cls, location: str, commits: pl.DataFrame, actions: pl.DataFrame, others: pl.DataFrame,
             copies: dict[int, int]) -> "DeltaLog":
        """Some versions of a parsed log, for a process that replays them (forensics.replay.second).
        `copies` is the whole log's: a copy of an earlier version is not among these commits."""
        log = cls(location=location, listing=L.LogListing(location, location.rstrip("/") + "/_delta_log"),
                  commits=commits, actions=actions, others=others, from_cache=True)
        log._by_version["copies"] = (commits, dict(copies))
        return log

    # ---- lookups ----------------------------------------------------------------------

    @property
    def versions(self) -> list[int]:
        """The retained versions, ascending."""
        return list(self._version_rows())

    def has_version(self, version: int) -> bool:
        """Whether the retained log has this version (a dict lookup, not a scan)."""
        return version in self._version_rows()

    def _version_rows(self) -> dict[int, int]:
        """version -> row of `commits`, built once per commits frame (commits are sorted)."""
        got = self._by_version.get("commits")
        if got is None or got[0] is not self.commits:
            rows = {v: i for i, v in enumerate(self.commits["version"].to_list())}
            got = (self.commits, rows)
            self._by_version["commits"] = got
        return got[1]

    @property
    def copies(self) -> dict[int, int]:
        """version -> the earlier version it is a byte-for-byte copy of (same txnId, or the same
        commitInfo text): a copied commit file, not a concurrent transaction (`commit.duplicate`)."""
        got = self._by_version.get("copies")
        if got is None or got[0] is not self.commits:
            out: dict[int, int] = {}
            for col in ("txn_id", "commit_info_raw"):
                dup = (self.commits.filter(pl.col(col).is_not_null()).group_by(col)
                       .agg(pl.col("version").sort().alias("vs")).filter(pl.col("vs").list.len() > 1))
                for vs in dup["vs"].to_list():
                    for v in vs[1:]:
                        out.setdefault(v, vs[0])
            got = (self.commits, out)
            self._by_version["copies"] = got
        return got[1]

    @property
    def latest_version(self) -> int | None:
        """The newest version the listing or the parsed commits know, or None for an empty log."""
        lv = self.listing.latest_version
        vs = self.versions
        cands = [x for x in (lv, vs[-1] if vs else None) if x is not None]
        return max(cands) if cands else None

    def record(self, version: int) -> CommitRecord:
        """The commit at `version`; VersionNotInLog (exit 7) when it is not retained."""
        if version not in self._records:
            i = self._version_rows().get(version)
            if i is None:
                raise ForensicsError(ExitCode.NO_VERSION, f"version {version} is not in the retained log", version=version)
            self._records[version] = record_from_row(self.commits.row(i, named=True))
        return self._records[version]

    def prefetch_records(self, versions: Iterable[int]) -> None:
        """Build the records of many retained versions in one gather over the commit index
        (replay asks for a block's commits and winners at once; a row lookup each cost more)."""
        rows = self._version_rows()
        idx = sorted({rows[v] for v in versions if v not in self._records and v in rows})
        if idx:
            for rec in records_of(self.commits[idx]):
                self._records[rec.version] = rec

    def records(self) -> list[CommitRecord]:
        """Every retained commit, in version order."""
        return records_of(self.commits)

    def actions_of(self, version: int) -> pl.DataFrame:
        """The file actions (add, remove, cdc) of one version."""
        return self._of("actions", version)

    def others_of(self, version: int) -> pl.DataFrame:
        """The other actions (metaData, protocol, txn, domainMetadata, ...) of one version."""
        return self._of("others", version)

    def _of(self, table: str, version: int) -> pl.DataFrame:
        """Rows of one version: a zero-copy slice of the table sorted once (not a scan per call)."""
        df: pl.DataFrame = getattr(self, table)
        cached = self._by_version.get(table)
        if cached is None or cached[0] is not df:
            srt = df.sort(["version", "line"])
            runs = srt.group_by("version", maintain_order=True).agg(pl.len().alias("n"))
            spans, start = {}, 0
            for v, n in runs.iter_rows():
                spans[v] = (start, n)
                start += n
            cached = (df, srt, spans)
            self._by_version[table] = cached
        _, srt, spans = cached
        lo, n = spans.get(version, (0, 0))
        return srt.slice(lo, n)

    @property
    def derived(self) -> dict[str, Any]:
        """Per-log memo for later stages (write sets, winners: dicts keyed by version), computed once per open."""
        return self._derived

    def forget(self, versions: Iterable[int]) -> None:
        """Let go of what was memoised for these versions (records, write sets, winners): a pass
        over a million commits keeps only what lies ahead of it. Anything asked again is rebuilt."""
        memos = [m for m in self._derived.values() if isinstance(m, dict)]
        for v in versions:
            self._records.pop(v, None)
            for m in memos:
                m.pop(v, None)

    def spark(self) -> Any:
        """The Spark session, started on first use (most questions about a cached table never need it)."""
        self.spark_started = True
        return self.spark_factory()


_ACTIONS_LOCK = threading.Lock()


def _get_actions(self: DeltaLog) -> pl.DataFrame:
    # The TUI's workers (replay, evidence, sets) touch `actions` from several threads at once:
    # load under a lock so a second reader waits for the frame instead of seeing None.
    if self._actions is None and self._actions_loader is not None:
        with _ACTIONS_LOCK:
            if self._actions is None and self._actions_loader is not None:
                self._actions = self._actions_loader()
                self._actions_loader = None
    return self._actions


def _set_actions(self: DeltaLog, value: pl.DataFrame | None) -> None:
    self._actions = value


# `actions` stays a constructor argument and a plain attribute for callers; reading it may load
# the cached Parquet on first use (a property installed after the dataclass is built).
DeltaLog._actions = None  # type: ignore[attr-defined]
DeltaLog.actions = property(_get_actions, _set_actions)  # type: ignore[assignment,method-assign]


def _then_concat(first, more: pl.DataFrame):
    """`first` (a frame or a loader of one) followed by `more`, still lazy when `first` is."""
    if callable(first):
        return lambda: pl.concat([first(), more], how="vertical_relaxed")
    return pl.concat([first, more], how="vertical_relaxed")


def _read_with_spark(spark: Any, spark_factory: SparkFactory, files: list, versions: dict[str, int], say: Progress,
                     what: str, listing: L.LogListing, ahead: "WriteAhead | None" = None, *, heap_reserved: bool = False
                     ) -> tuple[Any, ParsedFiles]:
    """Parse commit files (their rows' versions: `_source_versions`) with Spark, starting it if
    the listing did not already. `heap_reserved`: the running session was started sized for them."""
    say(f"reading {len(files)} {what}commit file(s) with Spark")
    if not heap_reserved:
        _reserve_heap(files, versions)  # a running session too small for them: one line, not a dead JVM
    spark = spark or spark_factory()
    return spark, read_commit_files(spark, files, source_version=versions, at=listing.spark_uri, ahead=ahead)


def _as(listing: L.LogListing, as_uri: str | None) -> L.LogListing:
    """The listing of a mirror, speaking of the remote table (each file keeps its local URI)."""
    if as_uri is not None:
        listing.table_uri = as_uri
    return listing


def _list_while_starting(location: str, spark_factory: SparkFactory, cached: bool, as_uri: str | None = None,
                         starting: "Future[Any] | None" = None, known: "L.Known | None" = None, ahead: bool = False
                         ) -> tuple[L.LogListing, Any, "WriteAhead | None", "_Planned | None"]:
    """List `_delta_log`, then start the JVM when Spark will surely be needed (nothing `cached`
    to consult, a local log directory) and the caller has not already begun (`starting`). The
    listing comes first so the JVM's heap can be sized from the files it will parse
    (forensics/log/sizes.py): a local listing of 20,000 commits takes tens of milliseconds, a JVM
    that dies of a too-small heap the whole run. While the JVM starts, a thread writes the bundle
    a local session will read (`bundle.WriteAhead`; `ahead`: the session will be local), returned
    for the caller to hand to the read or discard, with the files it planned (`_Planned`) when it
    started Spark.
    """
    table_uri = L.normalize_location(location)
    local_log = L.is_local(table_uri) and os.path.isdir(os.path.join(table_uri, "_delta_log"))
    listing = _as(L.list_log(location, known), as_uri)
    if starting is not None or not local_log or cached:
        return listing, None, None, None
    planned = _Planned.of(_plan_files(listing))
    _reserve_heap(planned.files, planned.versions)
    written = WriteAhead(planned.files, planned.versions) if planned.files and ahead else None
    try:
        return listing, spark_factory(), written, replace(planned, reserved=True)
    except BaseException:
        if written is not None:
            written.discard()
        raise


def start_spark(files: list[L.LogFile], plan: dict[int, tuple[L.LogFile, str]], spark_factory: SparkFactory) -> "Future[Any]":
    """Start Spark on a thread while the caller goes on (loading the cache, fetching the files),
    its heap first sized for `files` (forensics/log/sizes.py): a JVM cannot grow once it runs."""
    _reserve_heap(files, _source_versions(files, plan))
    return _on_thread(spark_factory)


def _on_thread(work: Callable[..., Any], *args: Any) -> "Future[Any]":
    """`work(*args)` on a thread of its own while the caller goes on; its result (or error) from the future."""
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(work, *args)
    pool.shutdown(wait=False)
    return future


def _cache_loading(location: str, as_uri: str | None) -> "Future[Any] | None":
    """The published cache generation (`_load_cache`), read on a thread while `_delta_log` is
    listed: the Parquet reads let go of the interpreter, so at 100,000 commits the ~0.3 s read
    no longer waits for the listing's ~1 s. None when nothing is cached (nothing read). It only
    reads; a caller that fails meanwhile drops it (the interpreter's exit waits for the read)."""
    table_uri = as_uri or L.normalize_location(location)
    cache_dir = C.published(table_uri)
    return None if cache_dir is None else _on_thread(_load_cache, cache_dir, table_uri)


@dataclass
class SparkStarter:
    """Given the commit files a store's listing shows (a remote table's, before the mirror fetches
    them), starts Spark once if any lies past both the parsed-log cache and `parsed` (the newest
    version the caller holds parsed: a refresh's): the JVM then comes up while the files download,
    the mirror is scanned and listed. Nothing new (a refresh of an unchanged table): no JVM. A JSON
    file of SCAN_MIN_BYTES or more listed: no early start either, since only a scan of its local
    copy's lines sizes the heap right (`open` starts Spark after the listing, as before)."""

    table_uri: str
    spark_factory: SparkFactory
    use_cache: bool
    parsed: int = -1
    future: "Future[Any] | None" = None  # the start, for `DeltaLog.open(spark_starting=...)`

    def __call__(self, listed: "ListedCommits") -> None:
        from forensics.log.sizes import SCAN_MIN_BYTES

        if self.future is not None or listed.largest_json >= SCAN_MIN_BYTES:
            return
        newest = max(self.parsed, _cached_max(table_cache_dir(self.table_uri)) if self.use_cache else -1)
        plan = {v: (f, "commit") for v, f in listed.commits.items() if v > newest}
        if not plan:
            return
        try:
            self.future = start_spark([f for f, _ in plan.values()], plan, self.spark_factory)
        except ForensicsError:
            return  # more heap than a running session has: said where the files are read, as before


def _reserve_heap(files: list, versions: dict[str, int]) -> None:
    """Before Spark starts or reads: the heap the files need, and the JIT their length asks for."""
    from forensics.log.sizes import reserve_heap_for
    from forensics.runtime.java import expect_read

    reserve_heap_for(files, versions)
    expect_read(sum(f.size or 0 for f in files))


def _cached_max(cache_dir: Path) -> int:
    try:
        return int((C.read_meta(cache_dir) or {})["max_version"])
    except (ValueError, KeyError, TypeError):
        return -1


# --------------------------------------------------------------------------------------
# Which files to read
# --------------------------------------------------------------------------------------


def _plan_files(listing: L.LogListing) -> dict[int, tuple[L.LogFile, str]]:
    """version -> (file, source). Commits first; compaction files only for versions no commit covers;
    staged (catalog-managed) commits only past the last published version and when unambiguous."""
    plan: dict[int, tuple[L.LogFile, str]] = {v: (f, "commit") for v, f in listing.commits.items()}
    for a, b, f in sorted(listing.compacted, key=lambda t: (t[0], -t[1])):
        missing = [v for v in range(a, b + 1) if v not in plan]
        if missing and b not in plan:
            # A compacted file carries the reconciled actions of a..b without per-version commitInfo:
            # its rows are attributed to version b.
            plan[b] = (f, "compacted")
    published_max = max(listing.commits) if listing.commits else -1
    by_v: dict[int, list[L.LogFile]] = {}
    for v, _uuid, f in listing.staged:
        by_v.setdefault(v, []).append(f)
    for v, fs in sorted(by_v.items()):
        if v > published_max and len(fs) == 1 and v not in plan:
            plan[v] = (fs[0], "staged")
    return plan


@dataclass(frozen=True)
class _Planned:
    """What a first look reads, worked out once: at a million commits each of these took about a
    second, and the listing's start of Spark, the copy made ahead and the read all need them."""

    plan: dict[int, tuple[L.LogFile, str]]
    files: list[L.LogFile]  # the plan's files, by version
    versions: dict[str, int]  # each file's rows' version (`_source_versions` of all of them)
    reserved: bool = False  # the heap was reserved for them before Spark started

    @classmethod
    def of(cls, plan: dict[int, tuple[L.LogFile, str]]) -> "_Planned":
        files = [f for _, (f, _) in sorted(plan.items())]
        return cls(plan, files, _uri_versions(plan))


def _source_versions(files: list[L.LogFile], plan: dict[int, tuple[L.LogFile, str]]) -> dict[str, int]:
    """The version each file's rows belong to (a compacted file's are its end version's)."""
    uri_version = _uri_versions(plan)
    return {f.uri: uri_version[f.uri] for f in files}


def _uri_versions(plan: dict[int, tuple[L.LogFile, str]]) -> dict[str, int]:
    """Each planned file's URI -> the version its rows belong to (every file is planned once)."""
    return {f.uri: v for v, (f, _) in plan.items()}


def _index(parsed: ParsedFiles, plan: dict[int, tuple[L.LogFile, str]], versions: list[int]):
    actions = pl.from_arrow(parsed.actions)
    others = pl.from_arrow(parsed.others)
    assert isinstance(actions, pl.DataFrame) and isinstance(others, pl.DataFrame)
    actions, others = split_invalid_actions(actions, others)  # path-less / corrupt-line actions set aside
    mtimes = {v: f.mtime_ms for v, (f, _) in plan.items()}
    sources = {v: s for v, (_, s) in plan.items()}
    commits, _ = build_commit_index(versions, actions, others, mtimes, sources)
    return commits, actions, others


def _all_findings(log: DeltaLog, plan: dict[int, tuple[L.LogFile, str]]) -> list[Finding]:
    names = {v: f"_delta_log/{f.name}" for v, (f, _) in plan.items()}
    out = list(log.listing.findings)
    out += line_findings(log.others, names)
    # A copied commit is named by the file of its later copy (duplicate_findings knows versions only).
    out += [replace(f, file=names.get(f.version)) if f.file is None and f.version in names else f for f in duplicate_findings(log.commits)]
    out += sanity_findings(log.others, names)
    cnt = log.others.filter(pl.col("kind") == "commitInfo").group_by("version").agg(pl.len().alias("n")).filter(pl.col("n") > 1)
    for v, n in cnt.iter_rows():
        out.append(Finding("commit.multiple_commit_info", f"{n} commitInfo actions; the first is used", "warning", names.get(v), v))
    present = set(log.versions)
    for v, (f, src) in plan.items():
        if src == "compacted":
            out.append(Finding("log.compacted", "commits of this range are only in a log compaction file; per-version details are unknown", "info", names[v], v))
        if src == "staged":
            out.append(
                Finding("commit.staged", "catalog-managed staged commit not yet published; whether the catalog ratified it cannot be told from storage", "info", names[v], v)
            )
    staged_versions: dict[int, int] = {}
    for v, _u, f in log.listing.staged:
        staged_versions[v] = staged_versions.get(v, 0) + 1
    for v, n in sorted(staged_versions.items()):
        if n > 1:
            out.append(Finding("commit.staged_ambiguous", f"{n} staged commits for this version; at most one was ratified", "warning", "_delta_log/_staged_commits", v))
    out += _last_checkpoint_findings(log.listing)
    empty = log.commits.filter(~pl.col("has_commit_info") & (pl.col("num_add") + pl.col("num_remove") == 0) & ~pl.col("has_metadata") & ~pl.col("has_protocol"))
    for v in empty["version"].to_list():
        if v in present and plan.get(v, (None, ""))[1] == "commit":
            out.append(Finding("commit.unreadable", "no readable action in this commit", "error", names.get(v), v))
    # order: by version, then code
    out.sort(key=lambda f: (f.version if f.version is not None else -1, f.code))
    return out


def _last_checkpoint_findings(listing: L.LogListing) -> list[Finding]:
    """_last_checkpoint is only a hint: say when it is empty, corrupt, dangling or stale."""
    f = listing.last_checkpoint
    if f is None:
        return []
    name = "_delta_log/_last_checkpoint"
    try:
        raw = read_small(f.uri)
    except OSError as e:
        return [Finding("last_checkpoint.unreadable", f"cannot read: {e}", "warning", name)]
    if not raw.strip():
        return [Finding("last_checkpoint.empty", "empty; the directory listing is used instead", "warning", name)]
    try:
        obj = json.loads(raw.decode("utf-8", "replace").splitlines()[0])
        v = int(obj["version"])
    except (ValueError, KeyError, TypeError, IndexError):
        return [Finding("last_checkpoint.corrupt", "not valid JSON with a version; the directory listing is used instead", "warning", name)]
    cps = {c.version for c in listing.checkpoints if c.complete}
    if v not in cps:
        partial = [c for c in listing.checkpoints if c.version == v]
        what = "is incomplete (parts missing)" if partial else "does not exist"
        return [Finding("last_checkpoint.dangling", f"points at checkpoint {v}, which {what}; the directory listing is used instead", "warning", name, v)]
    if cps and v < max(cps):
        return [Finding("last_checkpoint.stale", f"points at checkpoint {v} but {max(cps)} is newer", "info", name, v)]
    return []


def read_small(uri: str) -> bytes:
    """Read a small file (a hint, a checksum) without Spark."""
    if L.is_local(uri):
        path = uri[5:] if uri.startswith("file:") else uri
        with open(path, "rb") as fh:
            return fh.read(1 << 20)
    fs, path = L._arrow_fs(uri)  # noqa: SLF001
    with fs.open_input_stream(path) as fh:
        return fh.read(1 << 20)


# --------------------------------------------------------------------------------------
# Cache: Parquet per table in the user cache directory (never under the table path)
# --------------------------------------------------------------------------------------


def _fingerprint_entry(f: L.LogFile, source: str) -> list:
    """What the cache remembers of one log file: the one definition the list, its digest and the
    comparison with the log share."""
    return [f.name, f.size, f.mtime_ms, source]


def _fingerprint(plan: dict[int, tuple[L.LogFile, str]]) -> dict[str, list]:
    return {str(v): _fingerprint_entry(f, s) for v, (f, s) in sorted(plan.items())}


def _fingerprint_digest(plan: dict[int, tuple[L.LogFile, str]], upto: int | None = None) -> str:
    """One digest of `_fingerprint(plan)` (its versions up to `upto`): the cache's meta.json keeps
    it, so an unchanged log is told from one hash instead of the whole list (C.FINGERPRINT)."""
    # Each row is `v` and `_fingerprint_entry(f, s)`, tab-joined, spelled out: a million lists cost 0.6 s more.
    rows = "\n".join(f"{v}\t{f.name}\t{f.size}\t{f.mtime_ms}\t{s}" for v, (f, s) in sorted(plan.items()) if upto is None or v <= upto)
    return hashlib.blake2b(rows.encode("utf-8", "surrogateescape"), digest_size=20).hexdigest()


def _load_cache(cache_dir: Path, table_uri: str):
    """The published cache generation (forensics/log/cache.py), or None."""

    def fallback(versions: list[int]) -> pl.DataFrame:
        # The same versions the cached commits hold, from the log: never more (new commits) or fewer.
        return DeltaLog.open(table_uri, use_cache=False).actions.filter(pl.col("version").is_in(versions))

    return C.load(cache_dir, table_uri, fallback)


def _cache_is_behind(cache_dir: Path, plan) -> bool:
    """Whether the log has versions past the cached maximum (read from meta.json alone)."""
    try:
        meta = C.read_meta(cache_dir)
        return meta is not None and bool(plan) and max(plan) > int(meta["max_version"])
    except (ValueError, KeyError, TypeError):
        return False


def _cache_covers(cached, plan) -> bool:
    """The cache is usable when every cached file still exists unchanged or was cleaned up,
    and no file appeared at or below the cached maximum version."""
    _, _, _, meta = cached
    maxv = meta["max_version"]
    if meta.get("fingerprint_digest") == _fingerprint_digest(plan, maxv):
        return True  # every cached file as it was, and no other at or below the maximum
    fp = C.read_fingerprint(meta)
    if fp is None:
        return False
    for v, (f, s) in plan.items():
        if v <= maxv and fp.get(str(v)) != _fingerprint_entry(f, s):
            return False
    return True


def _write_cache(cache_dir: Path, listing: L.LogListing, plan, commits, actions, others) -> None:
    C.write(cache_dir, _meta(listing, plan), commits, actions, others)


def _append_cache(cache_dir: Path, listing: L.LogListing, plan, base_meta, commits, a2, o2) -> None:
    C.append(cache_dir, base_meta, _meta(listing, plan), commits, a2, o2)


def _meta(listing: L.LogListing, plan) -> dict:
    return {"location": listing.table_uri, "max_version": max(plan) if plan else -1, "fingerprint": _fingerprint(plan),
            "fingerprint_digest": _fingerprint_digest(plan)}
