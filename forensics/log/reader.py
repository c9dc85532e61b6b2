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


def read_commit_files(spark: Any, files: Sequence[LogFile], *, source_version: dict[str, int] | None = None) -> ParsedFiles:
    """Parse commit (or compacted / staged) JSON files with Spark.

    `source_version` maps a file URI to the version its rows belong to (compacted files are
    attributed to their end version); by default the version is the file name's prefix.
    """
    import pyspark.sql.functions as F

    if not files:
        return ParsedFiles(_empty(ACTION_COLUMNS), _empty(OTHER_COLUMNS))
    uris = [f.uri for f in files]
    versions = source_version or {f.uri: _version_of(f.name) for f in files}
    vmap = spark.createDataFrame([(u, v) for u, v in versions.items()], "uri string, version long")
    try:
        raw = spark.read.text(uris, wholetext=True).select(
            F.col("_metadata.file_path").alias("uri"),
            F.posexplode(F.split(F.col("value"), "\n")).alias("line", "text"),
        )
    except Exception as e:  # noqa: BLE001
        raise ForensicsError(ExitCode.SPARK, f"Spark could not read the commit files: {error_summary(e)}") from e
    # Spark reports file paths as URIs (file:/...); join on the normalised form.
    raw = raw.withColumn("uri", _normalise_uri_col(F.col("uri")))
    vmap = vmap.withColumn("uri", _normalise_uri_col(F.col("uri")))
    lines = raw.join(F.broadcast(vmap), "uri").where(F.length(F.trim("text")) > 0)
    parsed = lines.select(
        "version",
        "line",
        "uri",
        "text",
        F.from_json("text", ACTION_SCHEMA, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt_record"}).alias("a"),
        F.expr("json_object_keys(text)").alias("keys"),
    ).cache()
    try:
        act_tbl = _to_arrow(_file_actions(parsed), ACTION_COLUMNS)
        oth_tbl = _to_arrow(_other_actions(parsed), OTHER_COLUMNS)
    except Exception as e:  # noqa: BLE001 - Spark is lazy: read errors surface here
        raise ForensicsError(ExitCode.SPARK, f"Spark could not read the commit files: {error_summary(e)}") from e
    finally:
        parsed.unpersist()
    return ParsedFiles(act_tbl, oth_tbl)


def _normalise_uri_col(c):
    import pyspark.sql.functions as F

    # file:/a/b, file:///a/b and /a/b all become /a/b; percent-decoding is left to Spark's path.
    return F.regexp_replace(F.regexp_replace(c, r"^file:(//)?", ""), r"^/+", "/")


def _file_actions(parsed):
    import pyspark.sql.functions as F

    def sel(kind: str, has_dv: bool, has_deletion_ts: bool, has_mtime: bool, has_stats: bool):
        a = F.col(f"a.{kind}")
        dv = a.getField("deletionVector") if has_dv else None
        return parsed.where(a.isNotNull()).select(
            F.col("version"),
            F.col("line"),
            F.lit(kind).alias("kind"),
            a.getField("path").alias("path"),
            F.to_json(a.getField("partitionValues")).alias("partition_values"),
            a.getField("size").alias("size"),
            (a.getField("modificationTime") if has_mtime else F.lit(None).cast("long")).alias("modification_time"),
            a.getField("dataChange").alias("data_change"),
            (a.getField("stats") if has_stats else F.lit(None).cast("string")).alias("stats"),
            F.to_json(a.getField("tags")).alias("tags"),
            (dv.getField("storageType") if has_dv else F.lit(None).cast("string")).alias("dv_storage_type"),
            (dv.getField("pathOrInlineDv") if has_dv else F.lit(None).cast("string")).alias("dv_path"),
            (dv.getField("offset") if has_dv else F.lit(None).cast("int")).alias("dv_offset"),
            (dv.getField("sizeInBytes") if has_dv else F.lit(None).cast("int")).alias("dv_size"),
            (dv.getField("cardinality") if has_dv else F.lit(None).cast("long")).alias("dv_cardinality"),
            (a.getField("deletionTimestamp") if has_deletion_ts else F.lit(None).cast("long")).alias("deletion_timestamp"),
            (a.getField("baseRowId") if kind != "cdc" else F.lit(None).cast("long")).alias("base_row_id"),
        )

    return (
        sel("add", True, False, True, True)
        .unionByName(sel("remove", True, True, False, True))
        .unionByName(sel("cdc", False, False, False, False))
    )


def _other_actions(parsed):
    import pyspark.sql.functions as F

    known = F.array(*[F.lit(k) for k in KNOWN_ACTIONS])
    unknown_keys = F.array_except(F.coalesce(F.col("keys"), F.array().cast("array<string>")), known)
    ci = F.from_json(F.col("a.commitInfo"), COMMIT_INFO_SCHEMA)
    kind = (
        F.when(F.col("a._corrupt_record").isNotNull(), F.lit("corrupt"))
        .when(F.col("a.commitInfo").isNotNull(), F.lit("commitInfo"))
        .when(F.col("a.metaData").isNotNull(), F.lit("metaData"))
        .when(F.col("a.protocol").isNotNull(), F.lit("protocol"))
        .when(F.col("a.txn").isNotNull(), F.lit("txn"))
        .when(F.col("a.domainMetadata").isNotNull(), F.lit("domainMetadata"))
        .when(F.col("a.checkpointMetadata").isNotNull(), F.lit("checkpointMetadata"))
        .when(F.col("a.sidecar").isNotNull(), F.lit("sidecar"))
        .when(F.size(unknown_keys) > 0, F.lit("unknown"))
    )
    payload = (
        F.when(F.col("a._corrupt_record").isNotNull(), F.substring(F.col("text"), 1, 400))
        .when(F.col("a.commitInfo").isNotNull(), F.col("a.commitInfo"))
        .when(F.col("a.metaData").isNotNull(), F.to_json("a.metaData"))
        .when(F.col("a.protocol").isNotNull(), F.to_json("a.protocol"))
        .when(F.col("a.txn").isNotNull(), F.to_json("a.txn"))
        .when(F.col("a.domainMetadata").isNotNull(), F.to_json("a.domainMetadata"))
        .when(F.col("a.checkpointMetadata").isNotNull(), F.to_json("a.checkpointMetadata"))
        .when(F.col("a.sidecar").isNotNull(), F.to_json("a.sidecar"))
        .otherwise(F.substring(F.col("text"), 1, 400))
    )
    return (
        parsed.select("*", kind.alias("kind"), unknown_keys.alias("unknown_keys_arr"), ci.alias("ci"))
        .where(F.col("kind").isNotNull() | (F.size("unknown_keys_arr") > 0))
        .select(
            "version",
            "line",
            F.coalesce(F.col("kind"), F.lit("unknown")).alias("kind"),
            payload.alias("payload"),
            F.col("a.txn.appId").alias("app_id"),
            F.col("a.txn.version").alias("txn_version"),
            F.col("a.domainMetadata.domain").alias("domain"),
            F.col("ci.timestamp").alias("ci_timestamp"),
            F.col("ci.inCommitTimestamp").alias("ci_ict"),
            F.col("ci.operation").alias("ci_operation"),
            F.to_json("ci.operationParameters").alias("ci_parameters"),
            F.col("ci.readVersion").alias("ci_read_version"),
            F.col("ci.isolationLevel").alias("ci_isolation_level"),
            F.col("ci.isBlindAppend").alias("ci_is_blind_append"),
            F.col("ci.txnId").alias("ci_txn_id"),
            F.col("ci.engineInfo").alias("ci_engine_info"),
            F.col("ci.userId").alias("ci_user_id"),
            F.col("ci.userName").alias("ci_user_name"),
            F.to_json("ci.job").alias("ci_job"),
            F.to_json("ci.notebook").alias("ci_notebook"),
            F.col("ci.clusterId").alias("ci_cluster_id"),
            F.to_json("ci.operationMetrics").alias("ci_metrics"),
            F.col("ci.userMetadata").alias("ci_user_metadata"),
            F.to_json("ci.tags").alias("ci_tags"),
            F.array_join("unknown_keys_arr", ",").alias("unknown_keys"),
        )
    )


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
