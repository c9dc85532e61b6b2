"""The Spark side of the reader: commit JSON and checkpoint Parquet into three Arrow tables.

- `actions`: one row per add / remove / cdc (the file-actions table);
- `others`: one row per metaData, protocol, txn, domainMetadata, commitInfo, unknown or
  broken line (small: a handful per commit);
- per-file facts (size, mtime) come from the listing.

Each commit file is read whole (`wholetext`) so line numbers survive, many files per task
(Spark packs small files by `openCostInBytes`), and parsed with the explicit schemas in
`spark_schema` in PERMISSIVE mode: a truncated or garbage line becomes a finding naming the
file and version while the rest of the log is still used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import pyarrow as pa

from forensics.exitcodes import ExitCode, ForensicsError
from forensics.log.listing import Checkpoint, LogFile, LogListing
from forensics.log.spark_schema import (
    ACTION_SCHEMA,
    CHECKPOINT_SCHEMA,
    COMMIT_INFO_SCHEMA,
    KNOWN_ACTIONS,
)
from forensics.model import Finding
from forensics.spark import error_summary

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
    "payload",  # JSON text of the action (commitInfo: as written)
    "app_id",
    "txn_version",
    "domain",
    "ci_timestamp",
    "ci_ict",
    "ci_operation",
    "ci_parameters",  # JSON text of operationParameters (values as Spark read them: raw JSON text)
    "ci_read_version",
    "ci_isolation_level",
    "ci_is_blind_append",
    "ci_txn_id",
    "ci_engine_info",
    "ci_user_id",
    "ci_user_name",
    "ci_job",
    "ci_notebook",
    "ci_cluster_id",
    "ci_metrics",
    "ci_user_metadata",
    "ci_tags",
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


def read_commit_files(spark: Any, files: Sequence[LogFile], *, source_version: dict[str, int] | None = None) -> ParsedFiles:
    """Parse commit (or compacted / staged) JSON files with Spark, in one Spark job.

    `source_version` maps a file URI to the version its rows belong to (compacted files are
    attributed to their end version); by default the version is the file name's prefix.
    Every line becomes at most one row per file action (add/remove/cdc) plus at most one
    "other" row; both kinds travel in one collected Arrow table and are split on the driver,
    so the files are opened and parsed once (no `.cache()`, no second scan).
    """
    import pyspark.sql.functions as F

    if not files:
        return ParsedFiles(_empty(ACTION_COLUMNS), _empty(OTHER_COLUMNS))
    versions = source_version or {f.uri: _version_of(f.name) for f in files}
    try:
        raw, vmap = _file_texts(spark, files, versions)
        lines = raw.join(F.broadcast(vmap), ["g", "name"]).select(
            "version",
            F.posexplode(F.split(F.col("value"), "\n")).alias("line", "text"),
        ).where(F.length(F.trim("text")) > 0)
        parsed = lines.select(
            "version",
            "line",
            "text",
            F.from_json("text", ACTION_SCHEMA, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt_record"}).alias("a"),
            F.expr("json_object_keys(text)").alias("keys"),
        )
        rows = _rows(parsed)
        tbl = _collect(rows, _COMBINED)
    except Exception as e:  # noqa: BLE001 - Spark is lazy: read errors surface at collection
        raise ForensicsError(ExitCode.SPARK, f"Spark could not read the commit files: {error_summary(e)}") from e
    return ParsedFiles(*_split(tbl))


def _file_texts(spark: Any, files: Sequence[LogFile], versions: dict[str, int]):
    """(g, name, value) per file, plus the (g, name, version) map; g numbers the directories."""
    import pyspark.sql.functions as F

    groups: dict[str, list[LogFile]] = {}
    for f in files:
        groups.setdefault(f.uri.rsplit("/", 1)[0], []).append(f)
    dfs, vrows = [], []
    for g, (parent, fs) in enumerate(sorted(groups.items())):
        names = [f.uri.rsplit("/", 1)[1] for f in fs]
        vrows += [(g, n, versions[f.uri]) for n, f in zip(names, fs)]
        reader = spark.read.format("binaryFile")
        if len(fs) >= DIR_READ_MIN_FILES:
            df = reader.option("pathGlobFilter", "*.json").load(parent).where(F.col("_metadata.file_name").isin(names))
        else:
            df = reader.load([f.uri for f in fs])
        dfs.append(
            df.select(F.lit(g).alias("g"), F.col("_metadata.file_name").alias("name"), F.col("content").cast("string").alias("value"))
        )
    raw = dfs[0]
    for d in dfs[1:]:
        raw = raw.unionByName(d)
    vmap = spark.createDataFrame(vrows, "g int, name string, version long")
    return raw, vmap


def _file_action_struct(kind: str):
    """The action-table fields of one add / remove / cdc (null when the line has none)."""
    import pyspark.sql.functions as F

    a = F.col(f"a.{kind}")
    has_dv = kind != "cdc"
    dv = a.getField("deletionVector") if has_dv else None

    def nul(t: str):
        return F.lit(None).cast(t)

    vals = {
        "kind": F.lit(kind),
        "path": a.getField("path"),
        "partition_values": F.to_json(a.getField("partitionValues")),
        "size": a.getField("size"),
        "modification_time": a.getField("modificationTime") if kind == "add" else nul("long"),
        "data_change": a.getField("dataChange"),
        "stats": a.getField("stats") if kind != "cdc" else nul("string"),
        "tags": F.to_json(a.getField("tags")),
        "dv_storage_type": dv.getField("storageType") if has_dv else nul("string"),
        "dv_path": dv.getField("pathOrInlineDv") if has_dv else nul("string"),
        "dv_offset": dv.getField("offset") if has_dv else nul("int"),
        "dv_size": dv.getField("sizeInBytes") if has_dv else nul("int"),
        "dv_cardinality": dv.getField("cardinality") if has_dv else nul("long"),
        "deletion_timestamp": a.getField("deletionTimestamp") if kind == "remove" else nul("long"),
        "base_row_id": a.getField("baseRowId") if kind != "cdc" else nul("long"),
    }
    return F.when(a.isNotNull(), _combined_struct("a", vals))


def _with_other_fields(parsed):
    """Add `ci` (typed commitInfo), `unknown_arr` and `okind` once per line, in their own
    projection so Spark evaluates each (a second JSON parse included) exactly once."""
    import pyspark.sql.functions as F

    known = F.array(*[F.lit(k) for k in KNOWN_ACTIONS])
    unknown_keys = F.array_except(F.coalesce(F.col("keys"), F.array().cast("array<string>")), known)
    kind = (
        F.when(F.col("a._corrupt_record").isNotNull(), F.lit("corrupt"))
        # Bytes that are not UTF-8 (decoded as U+FFFD) are reported even when Jackson parsed the
        # line and ignored what trails it; like any broken line it is skipped (forensics/log/sanity.py).
        .when(F.instr(F.col("text"), "\ufffd") > 0, F.lit("corrupt"))
        .when(F.col("a.commitInfo").isNotNull(), F.lit("commitInfo"))
        .when(F.col("a.metaData").isNotNull(), F.lit("metaData"))
        .when(F.col("a.protocol").isNotNull(), F.lit("protocol"))
        .when(F.col("a.txn").isNotNull(), F.lit("txn"))
        .when(F.col("a.domainMetadata").isNotNull(), F.lit("domainMetadata"))
        .when(F.col("a.checkpointMetadata").isNotNull(), F.lit("checkpointMetadata"))
        .when(F.col("a.sidecar").isNotNull(), F.lit("sidecar"))
    )
    return parsed.select(
        "version",
        "line",
        "text",
        "a",
        F.from_json(F.col("a.commitInfo"), COMMIT_INFO_SCHEMA).alias("ci"),
        unknown_keys.alias("unknown_arr"),
        kind.alias("okind"),
    )


def _other_struct():
    """The other-table fields of a line's non-file action (metaData, commitInfo, unknown, ...)."""
    import pyspark.sql.functions as F

    ci = F.col("ci")
    unknown = F.size("unknown_arr") > 0
    payload = (
        F.when(F.col("a._corrupt_record").isNotNull(), F.substring(F.col("text"), 1, 400))
        .when(F.instr(F.col("text"), "\ufffd") > 0, F.expr("substring(text, greatest(instr(text, '\ufffd') - 100, 1), 400)"))
        .when(F.col("a.commitInfo").isNotNull(), F.col("a.commitInfo"))
        .when(F.col("a.metaData").isNotNull(), F.to_json("a.metaData"))
        .when(F.col("a.protocol").isNotNull(), F.to_json("a.protocol"))
        .when(F.col("a.txn").isNotNull(), F.to_json("a.txn"))
        .when(F.col("a.domainMetadata").isNotNull(), F.to_json("a.domainMetadata"))
        .when(F.col("a.checkpointMetadata").isNotNull(), F.to_json("a.checkpointMetadata"))
        .when(F.col("a.sidecar").isNotNull(), F.to_json("a.sidecar"))
        .otherwise(F.substring(F.col("text"), 1, 400))
    )
    vals = {
        "kind": F.when(unknown & F.col("okind").isNull(), F.lit("unknown")).otherwise(F.col("okind")),
        "payload": payload,
        "app_id": F.col("a.txn.appId"),
        "txn_version": F.col("a.txn.version"),
        "domain": F.col("a.domainMetadata.domain"),
        "ci_timestamp": ci.getField("timestamp"),
        "ci_ict": ci.getField("inCommitTimestamp"),
        "ci_operation": ci.getField("operation"),
        "ci_parameters": F.to_json(ci.getField("operationParameters")),
        "ci_read_version": ci.getField("readVersion"),
        "ci_isolation_level": ci.getField("isolationLevel"),
        "ci_is_blind_append": ci.getField("isBlindAppend"),
        "ci_txn_id": ci.getField("txnId"),
        "ci_engine_info": ci.getField("engineInfo"),
        "ci_user_id": ci.getField("userId"),
        "ci_user_name": ci.getField("userName"),
        "ci_job": F.to_json(ci.getField("job")),
        "ci_notebook": F.to_json(ci.getField("notebook")),
        "ci_cluster_id": ci.getField("clusterId"),
        "ci_metrics": F.to_json(ci.getField("operationMetrics")),
        "ci_user_metadata": ci.getField("userMetadata"),
        "ci_tags": F.to_json(ci.getField("tags")),
        "unknown_keys": F.array_join("unknown_arr", ","),
    }
    return F.when(F.col("okind").isNotNull() | unknown, _combined_struct("o", vals))


def _combined_struct(table: str, vals: dict):
    import pyspark.sql.functions as F

    fields = [F.lit(table).alias("_t"), F.col("version").alias("version"), F.col("line").alias("line")]
    for c in _COMBINED[3:]:
        v = vals.get(c)
        fields.append((v if v is not None else F.lit(None)).cast(_COMBINED_SPARK[c]).alias(c))
    return F.struct(*fields)


def _rows(parsed):
    """One output row per file action and per other action of each line (a single pass)."""
    import pyspark.sql.functions as F

    arr = F.array(_file_action_struct("add"), _file_action_struct("remove"), _file_action_struct("cdc"), _other_struct())
    return _with_other_fields(parsed).select(F.inline(F.filter(arr, lambda x: x.isNotNull())))


def _split(tbl: pa.Table) -> tuple[pa.Table, pa.Table]:
    import pyarrow.compute as pc

    is_action = pc.equal(tbl.column("_t"), "a")
    act = tbl.filter(is_action).select(ACTION_COLUMNS).cast(arrow_schema(ACTION_COLUMNS))
    oth = tbl.filter(pc.invert(is_action)).select(OTHER_COLUMNS).cast(arrow_schema(OTHER_COLUMNS))
    return act, oth


def read_checkpoint(spark: Any, listing: LogListing, cp: Checkpoint) -> ParsedFiles:
    """Read a classic, multi-part or V2 checkpoint (and its sidecars) into the same two tables."""
    import pyspark.sql.functions as F

    findings: list[Finding] = []
    parts = list(cp.files)
    try:
        if cp.fmt == "json":
            base = read_commit_files(spark, parts, source_version={f.uri: cp.version for f in parts})
            act, oth = base.actions, base.others
        else:
            df = spark.read.schema(CHECKPOINT_SCHEMA).parquet(*[f.uri for f in parts])
            act, oth = _checkpoint_tables(df, cp.version)
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
            uris.append(f.uri)
        if uris:
            try:
                sdf = spark.read.schema(CHECKPOINT_SCHEMA).parquet(*uris)
            except Exception as e:  # noqa: BLE001
                raise ForensicsError(
                    ExitCode.UNREADABLE, f"sidecar could not be read: {error_summary(e)}", version=cp.version
                ) from e
            sact, soth = _checkpoint_tables(sdf, cp.version)
            act = pa.concat_tables([act, sact])
            oth = pa.concat_tables([oth, soth])
    return ParsedFiles(act, oth, findings)


def _checkpoint_tables(df, version: int) -> tuple[pa.Table, pa.Table]:
    import pyspark.sql.functions as F

    line = F.lit(-1).cast("long")
    v = F.lit(version).cast("long")
    add = df.where(F.col("add").isNotNull()).select(
        v.alias("version"),
        line.alias("line"),
        F.lit("add").alias("kind"),
        F.col("add.path").alias("path"),
        F.to_json("add.partitionValues").alias("partition_values"),
        F.col("add.size").alias("size"),
        F.col("add.modificationTime").alias("modification_time"),
        F.col("add.dataChange").alias("data_change"),
        F.col("add.stats").alias("stats"),
        F.to_json("add.tags").alias("tags"),
        F.col("add.deletionVector.storageType").alias("dv_storage_type"),
        F.col("add.deletionVector.pathOrInlineDv").alias("dv_path"),
        F.col("add.deletionVector.offset").alias("dv_offset"),
        F.col("add.deletionVector.sizeInBytes").alias("dv_size"),
        F.col("add.deletionVector.cardinality").alias("dv_cardinality"),
        F.lit(None).cast("long").alias("deletion_timestamp"),
        F.col("add.baseRowId").alias("base_row_id"),
    )
    rem = df.where(F.col("remove").isNotNull()).select(
        v.alias("version"),
        line.alias("line"),
        F.lit("remove").alias("kind"),
        F.col("remove.path").alias("path"),
        F.to_json("remove.partitionValues").alias("partition_values"),
        F.col("remove.size").alias("size"),
        F.lit(None).cast("long").alias("modification_time"),
        F.col("remove.dataChange").alias("data_change"),
        F.lit(None).cast("string").alias("stats"),
        F.to_json("remove.tags").alias("tags"),
        F.col("remove.deletionVector.storageType").alias("dv_storage_type"),
        F.col("remove.deletionVector.pathOrInlineDv").alias("dv_path"),
        F.col("remove.deletionVector.offset").alias("dv_offset"),
        F.col("remove.deletionVector.sizeInBytes").alias("dv_size"),
        F.col("remove.deletionVector.cardinality").alias("dv_cardinality"),
        F.col("remove.deletionTimestamp").alias("deletion_timestamp"),
        F.col("remove.baseRowId").alias("base_row_id"),
    )
    kind = (
        F.when(F.col("metaData").isNotNull(), F.lit("metaData"))
        .when(F.col("protocol").isNotNull(), F.lit("protocol"))
        .when(F.col("txn").isNotNull(), F.lit("txn"))
        .when(F.col("domainMetadata").isNotNull(), F.lit("domainMetadata"))
        .when(F.col("checkpointMetadata").isNotNull(), F.lit("checkpointMetadata"))
        .when(F.col("sidecar").isNotNull(), F.lit("sidecar"))
    )
    payload = (
        F.when(F.col("metaData").isNotNull(), F.to_json("metaData"))
        .when(F.col("protocol").isNotNull(), F.to_json("protocol"))
        .when(F.col("txn").isNotNull(), F.to_json("txn"))
        .when(F.col("domainMetadata").isNotNull(), F.to_json("domainMetadata"))
        .when(F.col("checkpointMetadata").isNotNull(), F.to_json("checkpointMetadata"))
        .when(F.col("sidecar").isNotNull(), F.to_json("sidecar"))
    )
    nulls = {c: F.lit(None) for c in OTHER_COLUMNS}
    oth = (
        df.select(kind.alias("kind"), payload.alias("payload"), F.col("txn.appId").alias("app_id"),
                  F.col("txn.version").alias("txn_version"), F.col("domainMetadata.domain").alias("domain"))
        .where(F.col("kind").isNotNull())
        .select(
            *[
                (
                    v.alias(c) if c == "version"
                    else line.alias(c) if c == "line"
                    else F.col(c) if c in ("kind", "payload", "app_id", "txn_version", "domain")
                    else nulls[c].cast(_OTHER_TYPES[c]).alias(c)
                )
                for c in OTHER_COLUMNS
            ]
        )
    )
    return _to_arrow(add.unionByName(rem), ACTION_COLUMNS), _to_arrow(oth, OTHER_COLUMNS)


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


def _to_arrow(df, columns: list[str]) -> pa.Table:
    """Collect to the driver as Arrow (works in local, cluster and Connect modes)."""
    schema = arrow_schema(columns)
    try:
        tbl = df.select(*columns).toArrow()
    except AttributeError:  # pyspark < 4: no DataFrame.toArrow
        tbl = pa.Table.from_pandas(df.select(*columns).toPandas(), preserve_index=False)
    return tbl.cast(schema) if tbl.num_rows else schema.empty_table()


_ARROW_TO_SPARK = {pa.int64(): "long", pa.int32(): "int", pa.bool_(): "boolean", pa.string(): "string"}
# The single collected table: a discriminator `_t` ("a" = file action, "o" = other action),
# then the columns of both tables (they share only version, line and kind).
_COMBINED = ["_t", "version", "line", "kind"] + [c for c in ACTION_COLUMNS if c not in ("version", "line", "kind")] + [
    c for c in OTHER_COLUMNS if c not in ("version", "line", "kind")
]
_COMBINED_SPARK = {c: _ARROW_TO_SPARK[_ACTION_TYPES.get(c, pa.string())] for c in ACTION_COLUMNS}
_COMBINED_SPARK.update({c: _OTHER_TYPES[c] for c in OTHER_COLUMNS if c not in ("version", "line", "kind")})
_COMBINED_SPARK["_t"] = "string"


def _collect(df, columns: list[str]) -> pa.Table:
    """Collect to the driver as Arrow (local, cluster and Connect modes alike)."""
    try:
        return df.select(*columns).toArrow()
    except AttributeError:  # pyspark < 4: no DataFrame.toArrow
        return pa.Table.from_pandas(df.select(*columns).toPandas(), preserve_index=False)
