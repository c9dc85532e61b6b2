"""The Spark side of the reader: commit JSON and checkpoint Parquet into three Arrow tables.

- `actions`: one row per add / remove / cdc (the file-actions table);
- `others`: one row per metaData, protocol, txn, domainMetadata, commitInfo, unknown or
  broken line (small: a handful per commit);
- per-file facts (size, mtime) come from the listing.

A local session reads the commit files from a bundle (forensics/log/bundle.py: a few scratch
files, one row per line with its version and line number, since Spark pays per file); a cluster or
Spark Connect reads each commit file whole (`binaryFile`), many files per task (Spark packs small
files by `openCostInBytes`), and splits it into lines, so line numbers survive either way. Lines
are parsed with the explicit schemas in `spark_schema` in PERMISSIVE mode: a truncated or garbage
line becomes a finding naming the file and version while the rest of the log is still used.
"""

from __future__ import annotations

import re
import threading
from contextlib import contextmanager
from functools import lru_cache
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import pyarrow as pa

from forensics.errors import ExitCode, ForensicsError
from forensics.log.bundle import WriteAhead, bundled, can_bundle
from forensics.log.listing import Checkpoint, LogFile, LogListing
from forensics.model import Finding
from forensics.runtime.logs import logger
from forensics.runtime.spark import error_summary
from forensics.runtime.spill import collect_arrow

# Column names of the Arrow tables this module returns (the cache stores them as is).
ACTION_COLUMNS = [
    "version",
    "line",
    "kind",
    "path",
    "partition_values",  # JSON text of the partitionValues map
    "size",
    "modification_time",
    "data_change",
    "stats",
    "tags",
    "dv_storage_type",
    "dv_path",
    "dv_offset",
    "dv_size",
    "dv_cardinality",
    "deletion_timestamp",
    "base_row_id",
]

OTHER_COLUMNS = [
    "version",
    "line",
    "kind",  # metaData | protocol | txn | domainMetadata | commitInfo | checkpointMetadata | sidecar | unknown | corrupt
    "payload",  # JSON text of the action (commitInfo: as written; everything else is read from it)
    "app_id",
    "txn_version",
    "domain",
    "ci_timestamp",
    "ci_ict",
    "ci_operation",
    "ci_read_version",
    "ci_isolation_level",
    "ci_is_blind_append",
    "ci_txn_id",
    "ci_engine_info",
    "unknown_keys",
]


@dataclass
class ParsedFiles:
    actions: pa.Table
    others: pa.Table
    findings: list[Finding] = field(default_factory=list)


def _version_of(name: str) -> int:
    base = name.rsplit("/", 1)[-1]
    return int(base.split(".", 1)[0])


# Commit files are read with the `binaryFile` source: one row per file, no codec lookup or line
# reader per file (the `text` source with wholetext costs ~2.5x the JVM CPU on 20k small files).
# Above this many files in one directory, Spark lists the directory once (filtered by name)
# instead of being handed every path: 20,000 explicit paths cost one status call each.
DIR_READ_MIN_FILES = 200


def read_commit_files(spark: Any, files: Sequence[LogFile], *, source_version: dict[str, int] | None = None,
                      at: Callable[[LogFile], str] | None = None, ahead: WriteAhead | None = None) -> ParsedFiles:
    """Parse commit (or compacted / staged) JSON files with Spark, in one Spark job.

    `source_version` maps a file URI to the version its rows belong to (compacted files are
    attributed to their end version); by default the version is the file name's prefix. `at`
    gives the URI Spark reads each file from when it is not `f.uri` (`LogListing.spark_uri`);
    `ahead` is a bundle of the same files written while Spark started (`bundle.WriteAhead`).
    Every line becomes at most one row per file action (add/remove/cdc) plus at most one
    "other" row; both kinds travel in one collected Arrow table and are split on the driver,
    so the files are opened and parsed once (no `.cache()`, no second scan).
    """
    if not files:
        return ParsedFiles(_empty(ACTION_COLUMNS), _empty(OTHER_COLUMNS))
    local = can_bundle(spark, files)  # before `at`: the bundle reads the local files themselves
    if at is not None and not local:
        moved = {f.uri: replace(f, uri=at(f)) for f in files}
        if source_version is not None:
            source_version = {moved[u].uri if u in moved else u: v for u, v in source_version.items()}
        files = list(moved.values())
    versions = source_version or {f.uri: _version_of(f.name) for f in files}
    logger.info("parsing %d commit file(s), %d bytes, with Spark", len(files), sum(f.size or 0 for f in files))
    try:
        with _interpreted_if_small(spark, len(files), sum(f.size or 0 for f in files)):
            held = [_parse_and_collect(spark, files, versions, sum(f.size or 0 for f in files), local, ahead)]
    except ForensicsError:
        raise
    except Exception as e:  # noqa: BLE001 - Spark is lazy: read errors surface at collection
        summary = error_summary(e)
        if any(m in summary for m in _JVM_GONE):
            # The JVM died under the read (its heap, most likely): name the biggest file, not the socket.
            big = max(files, key=lambda f: f.size or 0)
            raise ForensicsError(
                ExitCode.SPARK,
                f"the Spark JVM stopped while parsing {len(files)} commit file(s), the largest {big.size / (1 << 20):.0f} MB "
                f"(out of heap memory? its log is spark.log in the cache directory); set DELTA_FORENSICS_DRIVER_MEMORY higher",
                file=f"_delta_log/{big.name}", version=versions.get(big.uri),
            ) from e
        raise ForensicsError(ExitCode.SPARK, f"Spark could not read the commit files: {summary}") from e
    return ParsedFiles(*_commit_tables(held))


# What py4j says when the JVM on the other side is gone (killed, or exited on OutOfMemoryError).
_JVM_GONE = ("Connection refused", "Error while sending or receiving", "Answer from Java side is empty",
             "OutOfMemoryError", "Cannot invoke \"org.apache.spark.scheduler.DAGScheduler")


def _parse_and_collect(spark: Any, files: Sequence[LogFile], versions: dict[str, int], n_bytes: int,
                       local: bool, ahead: WriteAhead | None = None) -> pa.Table:
    if local:
        with bundled(files, versions, ahead) as bundle:
            return _collect(spark, _bundle_lines(spark, bundle.uri), n_bytes, check_fffd=bundle.may_hold_fffd)
    raw, wanted = _file_texts(spark, files, versions)
    tbl = _collect(spark, _split_lines(raw), n_bytes)
    if wanted is not None:
        import pyarrow.compute as pc

        tbl = tbl.filter(pc.is_in(tbl.column("version"), pa.array(sorted(wanted), pa.int64())))
    return tbl


def _collect(spark: Any, lines: Any, n_bytes: int, *, check_fffd: bool = True) -> pa.Table:
    """Parse (version, line, text) rows into the combined table, collected as Arrow."""
    return collect_arrow(_parsed(lines, check_fffd), _COMBINED, n_bytes)


def _parsed(lines: Any, check_fffd: bool = True) -> Any:
    """(version, line, text) rows into the combined rows (`_COMBINED`), one per action of a line."""
    import pyspark.sql.functions as F

    from forensics.log.spark_schema import ACTION_SCHEMA

    nonblank = lines.where(F.expr(NONBLANK_SQL))
    parsed = nonblank.select(
        "version",
        "line",
        "text",
        F.from_json("text", ACTION_SCHEMA, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt_record"}).alias("a"),
    )
    return _rows(parsed, check_fffd).select(*_COMBINED)


# A line is parsed unless it is empty or spaces only (Spark's `trim` strips spaces alone). Asked
# as `length(trim(text)) > 0` it walked every line's bytes to count its characters (about 5% of
# the parse's JVM time, JFR on 100,000 commits); a line that does not start with a space is not
# blank, so only the others are trimmed (`tests/test_bundle.py` holds it to the old question).
NONBLANK_SQL = "octet_length(text) > 0 AND (substring(text, 1, 1) != ' ' OR trim(text) != '')"


def _split_lines(raw: Any) -> Any:
    """(version, whole file text) rows into (version, line, text): line numbers from 0, blank ones kept."""
    import pyspark.sql.functions as F

    return raw.select("version", F.posexplode(F.split(F.col("value"), "\n")).alias("line", "text"))


def _bundle_lines(spark: Any, where: str) -> Any:
    """The bundle's `version <TAB> line <TAB> text` rows (forensics/log/bundle.py) as the same
    (version, line, text) columns and types `_split_lines` gives."""
    import pyspark.sql.functions as F

    cols = F.split(F.col("value"), "\t", 3)
    return spark.read.option("lineSep", "\n").text(where).select(
        cols[0].cast("long").alias("version"), cols[1].cast("int").alias("line"), cols[2].alias("text")
    )


# A small read (an incremental refresh, a short log) is interpreted: Spark's code generation
# (Janino compiling the plan) then costs more than it saves (+100 commits in a fresh JVM:
# 7.1 s -> 6.2 s). Only when the bytes are few too: interpreted evaluation of one 127 MB commit
# (a million adds) ran out of the 2 GB driver heap where generated code did not.
SMALL_READ_FILES = 2000
SMALL_READ_BYTES = 8 << 20
_INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


# Small reads in flight per session, and the settings they replaced: the settings are the
# session's, so two threads (the TUI's workers) share one switch, set by the first small read and
# restored by the last, or one could restore the other's value and leave it set.
_INTERPRETED_LOCK = threading.Lock()
_INTERPRETED_HOLDERS: dict[int, tuple[int, dict[str, str | None]]] = {}


@contextmanager
def _interpreted_if_small(spark: Any, n_files: int, n_bytes: int):
    if not (n_files < SMALL_READ_FILES and n_bytes < SMALL_READ_BYTES):
        yield
        return
    key = id(spark)
    with _INTERPRETED_LOCK:
        held, saved = _INTERPRETED_HOLDERS.get(key, (0, {}))
        if held == 0:
            saved = {}
            for k, v in _INTERPRETED.items():
                try:
                    saved[k] = spark.conf.get(k, None)
                    spark.conf.set(k, v)
                except Exception:  # noqa: BLE001 - a server may refuse an internal setting: only slower
                    pass
        _INTERPRETED_HOLDERS[key] = (held + 1, saved)
    try:
        yield
    finally:
        with _INTERPRETED_LOCK:
            held, saved = _INTERPRETED_HOLDERS.pop(key)
            if held > 1:
                _INTERPRETED_HOLDERS[key] = (held - 1, saved)
            else:
                for k, v in saved.items():
                    try:
                        if v is None:
                            spark.conf.unset(k)
                        else:
                            spark.conf.set(k, v)
                    except Exception:  # noqa: BLE001
                        pass


def _file_texts(spark: Any, files: Sequence[LogFile], versions: dict[str, int]):
    """One (version, value) row per file: its version and its whole text.

    A commit file names its version, so each row's version is read from its own file name
    inside the plan and the plan stays small however many commits there are (a 20,000-name
    `isin` plus a 20,000-row version map cost ~12 s of driver time to build). A directory
    holding many commit files is listed once by Spark and filtered by name; a few are named
    explicitly. Files whose rows belong to another version (compacted, staged, JSON
    checkpoints) are mapped by a small broadcast join. Returns the frame, and the wanted
    versions when the directory read may also return files the caller did not ask for
    (filtered on the driver), else None.
    """
    import pyspark.sql.functions as F

    groups: dict[str, list[LogFile]] = {}
    for f in files:
        groups.setdefault(f.uri.rsplit("/", 1)[0], []).append(f)
    dfs: list = []
    vrows: list[tuple[int, str, int]] = []
    mapped: list[LogFile] = []
    extra_possible = False
    name = F.col("_metadata.file_name")
    name_version = F.substring(name, 1, 20).cast("long")
    for parent, fs in sorted(groups.items()):
        named = [f for f in fs if _COMMIT_NAME.match(f.name.rsplit("/", 1)[-1]) and versions[f.uri] == _version_of(f.name)]
        in_named = {f.uri for f in named}
        mapped += [f for f in fs if f.uri not in in_named]
        if not named:
            continue
        reader = spark.read.format("binaryFile")
        if len(named) >= DIR_READ_MIN_FILES:
            lo, hi = min(versions[f.uri] for f in named), max(versions[f.uri] for f in named)
            extra_possible = extra_possible or hi - lo + 1 != len(named)
            df = reader.option("pathGlobFilter", "*.json").load(parent).where(name.rlike(r"^[0-9]{20}\.json$") & name_version.between(lo, hi))
        else:
            df = reader.load([f.uri for f in named])
        dfs.append(df.select(name_version.alias("version"), F.col("content").cast("string").alias("value")))
    if mapped:
        # Rows of these files belong to a version their name does not say: a small join.
        by_dir: dict[str, list[LogFile]] = {}
        for f in mapped:
            by_dir.setdefault(f.uri.rsplit("/", 1)[0], []).append(f)
        named_dfs = []
        for g, (parent, fs) in enumerate(sorted(by_dir.items())):
            vrows += [(g, f.uri.rsplit("/", 1)[1], versions[f.uri]) for f in fs]
            named_dfs.append(
                spark.read.format("binaryFile").load([f.uri for f in fs]).select(
                    F.lit(g).alias("g"), name.alias("name"), F.col("content").cast("string").alias("value")
                )
            )
        vmap = spark.createDataFrame(vrows, "g int, name string, version long")
        dfs.append(_union(named_dfs).join(F.broadcast(vmap), ["g", "name"]).select("version", "value"))
    return _union(dfs), (set(versions.values()) if extra_possible else None)


def _union(dfs: list):
    out = dfs[0]
    for d in dfs[1:]:
        out = out.unionByName(d)
    return out


_COMMIT_NAME = re.compile(r"^[0-9]{20}\.json$")


# The per-line projection is static SQL text built once here: the same plan through the
# DataFrame API costs ~3,700 py4j round trips (~1.3 s of driver time per open), as text it is a
# handful. Only our own constant text goes into these expressions, never a string from a log.
_FFFD = "\ufffd"  # what Spark decodes bytes that are not UTF-8 to


def _file_action_sql(kind: str) -> str:
    """The action-table fields of one add / remove / cdc (NULL when the line has none)."""
    a = f"a.{kind}"
    dv = f"{a}.deletionVector"
    is_cdc = kind == "cdc"
    vals = {
        "kind": f"'{kind}'",
        "path": f"{a}.path",
        "partition_values": f"to_json({a}.partitionValues)",
        "size": f"{a}.size",
        "modification_time": f"{a}.modificationTime" if kind == "add" else None,
        "data_change": f"{a}.dataChange",
        "stats": None if is_cdc else f"{a}.stats",
        "tags": f"to_json({a}.tags)",
        "dv_storage_type": None if is_cdc else f"{dv}.storageType",
        "dv_path": None if is_cdc else f"{dv}.pathOrInlineDv",
        "dv_offset": None if is_cdc else f"{dv}.offset",
        "dv_size": None if is_cdc else f"{dv}.sizeInBytes",
        "dv_cardinality": None if is_cdc else f"{dv}.cardinality",
        "deletion_timestamp": f"{a}.deletionTimestamp" if kind == "remove" else None,
        "base_row_id": None if is_cdc else f"{a}.baseRowId",
    }
    return f"CASE WHEN {a} IS NOT NULL THEN {_combined_sql('a', vals)} END"


_KIND_CASES = ("commitInfo", "metaData", "protocol", "txn", "domainMetadata", "checkpointMetadata", "sidecar")

# Which kind of non-file action a line holds. Bytes that are not UTF-8 (decoded as U+FFFD) are
# reported even when Jackson parsed the line and ignored what trails it; like any broken line it
# is skipped (forensics/log/sanity.py). The `_UTF8` variants leave the search for U+FFFD out: for
# a bundle whose copy saw no file that could hold it (forensics/log/bundle.py `may_hold_fffd`).
_FFFD_KIND = f"WHEN instr(text, '{_FFFD}') > 0 THEN 'corrupt' "
_FFFD_PAYLOAD = f"WHEN instr(text, '{_FFFD}') > 0 THEN substring(text, greatest(instr(text, '{_FFFD}') - 100, 1), 400) "
_OKIND_SQL = (
    "CASE WHEN a.`_corrupt_record` IS NOT NULL THEN 'corrupt' "
    + _FFFD_KIND
    + " ".join(f"WHEN a.{k} IS NOT NULL THEN '{k}'" for k in _KIND_CASES)
    + " END"
)
_OKIND_SQL_UTF8 = _OKIND_SQL.replace(_FFFD_KIND, "")


# A line's top-level keys are looked for only when it holds no action the reader knows: it is
# then an action type from a newer writer (an `unknown` row, a finding). Asking every line
# parsed each one a second time (`json_object_keys`), about a fifth of the parse; an unknown key
# beside a known action is ignored, as delta-spark ignores it: `Action.fromJson` reads a line with
# `JsonUtils.mapper`, FAIL_ON_UNKNOWN_PROPERTIES false (delta-io/delta v2.4.0 core/, v3.2.0 and
# v4.0.0 spark/src/main/scala/org/apache/spark/sql/delta/util/JsonUtils.scala).
_NO_ARRAY = "CAST(array() AS array<string>)"


@lru_cache(maxsize=1)
def _unknown_sql() -> str:
    from forensics.log.spark_schema import KNOWN_ACTIONS

    known = ", ".join(f"'{k}'" for k in KNOWN_ACTIONS)
    return (f"CASE WHEN okind IS NULL AND a.add IS NULL AND a.remove IS NULL AND a.cdc IS NULL "
            f"THEN array_except(coalesce(json_object_keys(text), {_NO_ARRAY}), array({known})) ELSE {_NO_ARRAY} END")


def _other_sql(check_fffd: bool) -> str:
    """The other-table fields of a line's non-file action (metaData, commitInfo, unknown, ...)."""
    payload = (
        "CASE WHEN a.`_corrupt_record` IS NOT NULL THEN substring(text, 1, 400) "
        + (_FFFD_PAYLOAD if check_fffd else "")
        + "WHEN a.commitInfo IS NOT NULL THEN a.commitInfo "
        + " ".join(f"WHEN a.{k} IS NOT NULL THEN to_json(a.{k})" for k in _KIND_CASES[1:])
        + " ELSE substring(text, 1, 400) END"
    )
    vals = {
        "kind": "CASE WHEN size(unknown_arr) > 0 AND okind IS NULL THEN 'unknown' ELSE okind END",
        "payload": payload,
        "app_id": "a.txn.appId",
        "txn_version": "a.txn.version",
        "domain": "a.domainMetadata.domain",
        "ci_timestamp": "ci.timestamp",
        "ci_ict": "ci.inCommitTimestamp",
        "ci_operation": "ci.operation",
        "ci_read_version": "ci.readVersion",
        "ci_isolation_level": "ci.isolationLevel",
        "ci_is_blind_append": "ci.isBlindAppend",
        "ci_txn_id": "ci.txnId",
        "ci_engine_info": "ci.engineInfo",
        "unknown_keys": "array_join(unknown_arr, ',')",
    }
    return f"CASE WHEN okind IS NOT NULL OR size(unknown_arr) > 0 THEN {_combined_sql('o', vals)} END"


def _combined_sql(table: str, vals: dict[str, str | None]) -> str:
    fields = [f"'_t', '{table}'", "'version', version", "'line', line"]
    for c in _COMBINED[3:]:
        v = vals.get(c)
        fields.append(f"'{c}', CAST({v if v is not None else 'NULL'} AS {_COMBINED_SPARK[c]})")
    return "named_struct(" + ", ".join(fields) + ")"


def _rows(parsed, check_fffd: bool = True):
    """One output row per file action and per other action of each line (a single pass).

    `ci` (typed commitInfo) and `okind` get their own projection, and `unknown_arr` one after
    it, so Spark evaluates each exactly once per line and the keys only of a line `okind` and
    the file actions leave unexplained. The other action's row (`o`) is built before the
    generator: Spark generates a Java method per operator, and all four rows built in the
    generator's made one over HotSpot's 8,000-byte limit, which the warm engine's JVM then ran
    interpreted (docs/performance.md, "The parse's generated methods"; tests/test_reader.py).
    """
    import pyspark.sql.functions as F

    from forensics.log.spark_schema import COMMIT_INFO_SCHEMA

    with_kind = parsed.select(
        "version",
        "line",
        "text",
        "a",
        F.from_json(F.col("a.commitInfo"), COMMIT_INFO_SCHEMA).alias("ci"),
        (F.expr(_OKIND_SQL) if check_fffd else F.expr(_OKIND_SQL_UTF8)).alias("okind"),
    )
    with_other = with_kind.select("*", F.expr(_unknown_sql()).alias("unknown_arr"))
    other = F.expr(_other_row_sql()) if check_fffd else F.expr(_other_row_sql_utf8())
    return with_other.select("version", "line", "a", other.alias("o")).select(F.expr(_rows_sql())).where(F.col("_t").isNotNull())


@lru_cache(maxsize=1)
def _other_row_sql() -> str:
    """The row of a line's non-file action as a struct of the combined columns (NULL when none)."""
    return _other_sql(True)


@lru_cache(maxsize=1)
def _other_row_sql_utf8() -> str:
    """`_other_row_sql` without the search for U+FFFD (a bundle that cannot hold it)."""
    return _other_sql(False)


@lru_cache(maxsize=1)
def _rows_sql() -> str:
    """One row per file action and other action (`o`) of a line. `inline` of the plain array,
    then a filter on the discriminator: a lambda `filter(...)` inside the generator has no code
    generation and made this step ~2x slower."""
    arr = ", ".join([_file_action_sql("add"), _file_action_sql("remove"), _file_action_sql("cdc"), "o"])
    return f"inline(array({arr}))"


def _split(got: pa.Table, is_file: Callable[[pa.Table], Any]) -> tuple[pa.Table, pa.Table]:
    """`got`'s ACTION_COLUMNS where `is_file(got)` holds, its OTHER_COLUMNS elsewhere. A column
    at a time, each of `got`'s columns let go once copied: the collected rows (a 1M-add
    checkpoint, a long log) are held once plus a column, not twice, when the caller keeps no
    other reference to `got` (hands it on unnamed, or `.pop()`ped from a list)."""
    import pyarrow.compute as pc

    files_at = is_file(got)
    others_at = pc.invert(files_at)
    names, columns = got.column_names, got.columns
    del got
    files, others = {}, {}
    for i, name in enumerate(names):
        col, columns[i] = columns[i], None
        if name in ACTION_COLUMNS:
            files[name] = pc.filter(col, files_at)
        if name in OTHER_COLUMNS:
            others[name] = pc.filter(col, others_at)
        del col
        release_arrow_memory()
    return pa.table(files), pa.table(others)


def release_arrow_memory() -> None:
    """Hand the memory Arrow's pool holds free back to the system. Between the steps of a large
    read (Arrow columns copied, then let go, then polars allocating its own) the pool would
    otherwise keep what each step freed: a 1M-file snapshot's peak was ~330 MB higher."""
    pa.default_memory_pool().release_unused()


def _commit_tables(held: list[pa.Table]) -> tuple[pa.Table, pa.Table]:
    """The combined table of parsed commit lines (taken out of `held`: see `_split`) as the two tables."""
    import pyarrow.compute as pc

    act, oth = _split(held.pop(), lambda t: pc.equal(t.column("_t"), "a"))
    return act.select(ACTION_COLUMNS).cast(arrow_schema(ACTION_COLUMNS)), oth.select(OTHER_COLUMNS).cast(arrow_schema(OTHER_COLUMNS))


def read_checkpoint(spark: Any, listing: LogListing, cp: Checkpoint, *, stats: bool = True) -> ParsedFiles:
    """Read a classic, multi-part or V2 checkpoint (and its sidecars) into the same two tables.

    stats=False leaves `stats` null and never reads add.stats from Parquet (most of a large
    checkpoint's bytes): for callers that need no statistics, e.g. `snapshot --json`.
    """
    from forensics.log.spark_schema import CHECKPOINT_SCHEMA

    findings: list[Finding] = []
    parts = list(cp.files)
    if cp.fmt != "json":
        for f in parts:
            _require_whole_parquet(f, cp.version)
    try:
        if cp.fmt == "json":
            base = read_commit_files(spark, parts, source_version={f.uri: cp.version for f in parts}, at=listing.spark_uri)
            act, oth = base.actions, base.others
        else:
            df = spark.read.schema(CHECKPOINT_SCHEMA).parquet(*[listing.spark_uri(f) for f in parts])
            act, oth = _checkpoint_tables(df, cp.version, stats=stats, n_bytes=sum(f.size or 0 for f in parts))
    except ForensicsError:
        raise
    except Exception as e:  # noqa: BLE001
        raise ForensicsError(
            ExitCode.UNREADABLE,
            f"checkpoint could not be read: {error_summary(e)}",
            file=f"_delta_log/{parts[0].name}",
            version=cp.version,
        ) from e
    # V2 checkpoints (and classic-named V2 ones) point at sidecar files holding the file actions.
    sidecar_rows = [r for r in oth.to_pylist() if r["kind"] == "sidecar"]
    if sidecar_rows:
        import json as _json

        uris = []
        sidecar_bytes = 0
        for r in sidecar_rows:
            p = (_json.loads(r["payload"]) or {}).get("path", "")
            name = p.rsplit("/", 1)[-1]
            f = listing.sidecars.get(name)
            if f is None:
                findings.append(
                    Finding("checkpoint.sidecar_missing", f"sidecar {name} named by the checkpoint is missing", "error",
                            f"_delta_log/_sidecars/{name}", cp.version)
                )
                continue
            _require_whole_parquet(f, cp.version, (_json.loads(r["payload"]) or {}).get("sizeInBytes"))
            uris.append(listing.spark_uri(f))
            sidecar_bytes += f.size or 0
        if uris:
            try:
                sdf = spark.read.schema(CHECKPOINT_SCHEMA).parquet(*uris)
            except Exception as e:  # noqa: BLE001
                raise ForensicsError(
                    ExitCode.UNREADABLE, f"sidecar could not be read: {error_summary(e)}", version=cp.version
                ) from e
            sact, soth = _checkpoint_tables(sdf, cp.version, stats=stats, n_bytes=sidecar_bytes)
            act = pa.concat_tables([act, sact])
            oth = pa.concat_tables([oth, soth])
    kinds = set(oth.column("kind").to_pylist())
    if not findings and not {"protocol", "metaData"} <= kinds:
        # Every checkpoint holds the table's protocol and metaData (PROTOCOL.md "Checkpoints"): one
        # without them was cut short (a torn JSON manifest, a Parquet file with no rows yet).
        lacking = " and ".join(k for k in ("protocol", "metaData") if k not in kinds)
        raise torn(f"checkpoint has no {lacking} action (a partial write?)", f"_delta_log/{parts[0].name}", cp.version)
    return ParsedFiles(act, oth, findings)


def torn(message: str, file: str, version: int) -> ForensicsError:
    """A checkpoint file caught half-written: unusable as a base, so an older one is used
    (snapshot.state_actions); reported as `checkpoint.unreadable` naming the file."""
    err = ForensicsError(ExitCode.UNREADABLE, message, file=file, version=version)
    err.finding_code = "checkpoint.unreadable"  # type: ignore[attr-defined]
    return err


# The smallest Parquet file: magic, a footer length, magic ("PAR1" ... "PAR1").
_PARQUET_MIN = 12


def _require_whole_parquet(f: LogFile, version: int, expected_size: int | None = None) -> None:
    """Raise `torn` unless `f` ends like a whole Parquet file (and has the size its V2
    manifest recorded). Spark reads a 0-byte Parquet file as no rows, not as an error: a
    checkpoint caught while being written would silently be an empty table."""
    name = f"_delta_log/{f.name}"
    if isinstance(expected_size, int) and expected_size > 0 and f.size != expected_size:
        raise torn(f"sidecar is {f.size} bytes but the checkpoint recorded {expected_size} (a partial write?)", name, version)
    if f.size < _PARQUET_MIN:
        raise torn(f"{f.size} bytes: not a whole Parquet file (a partial write?)", name, version)
    try:
        head, tail = _ends(f.uri, f.size)
    except OSError as e:
        raise torn(f"cannot be read: {e}", name, version) from e
    footer_len = int.from_bytes(tail[:4], "little")
    if head != b"PAR1" or tail[4:] != b"PAR1" or footer_len > f.size - _PARQUET_MIN:
        raise torn("no Parquet footer at the end of the file (a partial write?)", name, version)


def _ends(uri: str, size: int) -> tuple[bytes, bytes]:
    """The first 4 and the last 8 bytes of a file (two small reads, local or on a store)."""
    from forensics.log.listing import _arrow_fs, is_local

    if is_local(uri):
        with open(uri[5:] if uri.startswith("file:") else uri, "rb") as fh:
            head = fh.read(4)
            fh.seek(size - 8)
            return head, fh.read(8)
    fs, path = _arrow_fs(uri)
    with fs.open_input_file(path) as fh:
        return fh.read_at(4, 0), fh.read_at(8, size - 8)


# Parquet bytes of checkpoint from which its rows reach Python through a scratch Parquet directory,
# not the driver JVM (forensics/runtime/spill.py): collected rows take several times a
# checkpoint's compressed bytes, and a 1M-file checkpoint (33 MB) gathered in the driver grew the
# JVM by 150-350 MB and was no faster (BENCHMARKS.md).
CHECKPOINT_SPILL_MIN_BYTES = 16 << 20


def _checkpoint_tables(df, version: int, *, stats: bool = True, n_bytes: int = 0) -> tuple[pa.Table, pa.Table]:
    """The checkpoint's file actions and other actions, from one scan and one collect (a job per
    kind of action was three plans and three scans: most of a small table's cold read)."""
    import pyarrow.compute as pc
    import pyspark.sql.functions as F

    is_add, is_rem = F.col("add").isNotNull(), F.col("remove").isNotNull()

    def either(field: str) -> Any:  # a row holds one action: at most one side is non-null
        return F.coalesce(F.col(f"add.{field}"), F.col(f"remove.{field}"))

    def either_json(field: str) -> Any:
        return F.when(is_add, F.to_json(f"add.{field}")).when(is_rem, F.to_json(f"remove.{field}"))

    other_kinds = ("metaData", "protocol", "txn", "domainMetadata", "checkpointMetadata", "sidecar")
    kind = payload = None
    for k in other_kinds:
        kind = (F if kind is None else kind).when(F.col(k).isNotNull(), F.lit(k))
        payload = (F if payload is None else payload).when(F.col(k).isNotNull(), F.to_json(k))
    t = F.when(is_add, F.lit("add")).when(is_rem, F.lit("remove")).otherwise(kind)
    file_cols: dict[str, Any] = {
        "path": either("path"),
        "partition_values": either_json("partitionValues"),
        "size": either("size"),
        "modification_time": F.col("add.modificationTime"),
        "data_change": either("dataChange"),
        **({"stats": F.col("add.stats")} if stats else {}),  # else pruned from the scan
        "tags": either_json("tags"),
        "dv_storage_type": either("deletionVector.storageType"),
        "dv_path": either("deletionVector.pathOrInlineDv"),
        "dv_offset": either("deletionVector.offset"),
        "dv_size": either("deletionVector.sizeInBytes"),
        "dv_cardinality": either("deletionVector.cardinality"),
        "deletion_timestamp": F.col("remove.deletionTimestamp"),
        "base_row_id": either("baseRowId"),
    }
    other_cols = {"payload": payload, "app_id": F.col("txn.appId"), "txn_version": F.col("txn.version"),
                  "domain": F.col("domainMetadata.domain")}
    cols = {"kind": t, **file_cols, **other_cols}
    # Handed on unnamed: _split lets go of each column as it copies it.
    files, others = _split(collect_arrow(df.select(*[c.alias(n) for n, c in cols.items()]).where(F.col("kind").isNotNull()),
                                         list(cols), n_bytes, spill_min=CHECKPOINT_SPILL_MIN_BYTES),
                           lambda t: pc.is_in(t.column("kind"), pa.array(["add", "remove"])))
    return _filled(files, ACTION_COLUMNS, version), _filled(others, OTHER_COLUMNS, version)


def _filled(got: pa.Table, columns: list[str], version: int) -> pa.Table:
    """`got`'s columns in `columns`' order and types; version and line (-1: a checkpoint has no
    lines) filled here rather than shipped from the JVM (on a 1M-add checkpoint constant columns
    were ~20% of the collected Arrow and of the heap the collect grows), absent columns null."""
    schema = arrow_schema(columns)
    n = got.num_rows
    if not n:
        return schema.empty_table()
    consts = {"version": version, "line": -1}
    out = []
    for name in columns:
        typ = schema.field(name).type
        if name in consts:
            out.append(pa.chunked_array([pa.repeat(pa.scalar(consts[name], typ), n)], typ))
        elif name in got.column_names:
            out.append(got.column(name).cast(typ))
        else:
            out.append(pa.chunked_array([pa.nulls(n, typ)], typ))
    return pa.Table.from_arrays(out, schema=schema)


_OTHER_TYPES = {
    "ci_timestamp": "long",
    "ci_ict": "long",
    "ci_read_version": "long",
    "ci_is_blind_append": "boolean",
    "txn_version": "long",
}
for _c in OTHER_COLUMNS:
    _OTHER_TYPES.setdefault(_c, "string")
_OTHER_TYPES["version"] = "long"
_OTHER_TYPES["line"] = "long"

_ACTION_TYPES = {
    "version": pa.int64(),
    "line": pa.int64(),
    "size": pa.int64(),
    "modification_time": pa.int64(),
    "data_change": pa.bool_(),
    "dv_offset": pa.int32(),
    "dv_size": pa.int32(),
    "dv_cardinality": pa.int64(),
    "deletion_timestamp": pa.int64(),
    "base_row_id": pa.int64(),
}


def arrow_schema(columns: list[str]) -> pa.Schema:
    if columns is ACTION_COLUMNS:
        return pa.schema([(c, _ACTION_TYPES.get(c, pa.string())) for c in columns])
    m = {"long": pa.int64(), "boolean": pa.bool_(), "string": pa.string()}
    return pa.schema([(c, m[_OTHER_TYPES[c]]) for c in columns])


def _empty(columns: list[str]) -> pa.Table:
    return arrow_schema(columns).empty_table()


_ARROW_TO_SPARK = {pa.int64(): "long", pa.int32(): "int", pa.bool_(): "boolean", pa.string(): "string"}
# The single collected table: a discriminator `_t` ("a" = file action, "o" = other action),
# then the columns of both tables (they share only version, line and kind).
_COMBINED = ["_t", "version", "line", "kind"] + [c for c in ACTION_COLUMNS if c not in ("version", "line", "kind")] + [
    c for c in OTHER_COLUMNS if c not in ("version", "line", "kind")
]
_COMBINED_SPARK = {c: _ARROW_TO_SPARK[_ACTION_TYPES.get(c, pa.string())] for c in ACTION_COLUMNS}
_COMBINED_SPARK.update({c: _OTHER_TYPES[c] for c in OTHER_COLUMNS if c not in ("version", "line", "kind")})
_COMBINED_SPARK["_t"] = "string"

