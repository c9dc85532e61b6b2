"""Explicit Spark schemas for Delta actions (no inference), per the Delta protocol.

Commit lines are parsed with ACTION_SCHEMA; commitInfo is first kept as raw JSON text (a
StringType field captures the object's text verbatim) and then parsed with COMMIT_INFO_SCHEMA,
so the detail view can show exactly what was written while the index uses typed fields.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

S = StringType()
L = LongType()
B = BooleanType()
I = IntegerType()  # noqa: E741
SMAP = MapType(S, S, True)


def _f(name, t, nullable=True):
    return StructField(name, t, nullable)


DV = StructType(
    [
        _f("storageType", S),
        _f("pathOrInlineDv", S),
        _f("offset", I),
        _f("sizeInBytes", I),
        _f("cardinality", L),
        _f("maxRowIndex", L),
    ]
)

ADD = StructType(
    [
        _f("path", S),
        _f("partitionValues", SMAP),
        _f("size", L),
        _f("modificationTime", L),
        _f("dataChange", B),
        _f("stats", S),
        _f("tags", SMAP),
        _f("deletionVector", DV),
        _f("baseRowId", L),
        _f("defaultRowCommitVersion", L),
        _f("clusteringProvider", S),
    ]
)

REMOVE = StructType(
    [
        _f("path", S),
        _f("deletionTimestamp", L),
        _f("dataChange", B),
        _f("extendedFileMetadata", B),
        _f("partitionValues", SMAP),
        _f("size", L),
        _f("stats", S),
        _f("tags", SMAP),
        _f("deletionVector", DV),
        _f("baseRowId", L),
        _f("defaultRowCommitVersion", L),
    ]
)

CDC = StructType(
    [
        _f("path", S),
        _f("partitionValues", SMAP),
        _f("size", L),
        _f("dataChange", B),
        _f("tags", SMAP),
    ]
)

METADATA = StructType(
    [
        _f("id", S),
        _f("name", S),
        _f("description", S),
        _f("format", StructType([_f("provider", S), _f("options", SMAP)])),
        _f("schemaString", S),
        _f("partitionColumns", ArrayType(S, True)),
        _f("configuration", SMAP),
        _f("createdTime", L),
    ]
)

PROTOCOL = StructType(
    [
        _f("minReaderVersion", I),
        _f("minWriterVersion", I),
        _f("readerFeatures", ArrayType(S, True)),
        _f("writerFeatures", ArrayType(S, True)),
    ]
)

TXN = StructType([_f("appId", S), _f("version", L), _f("lastUpdated", L)])

DOMAIN = StructType([_f("domain", S), _f("configuration", S), _f("removed", B)])

CHECKPOINT_METADATA = StructType([_f("version", L), _f("tags", SMAP)])

SIDECAR = StructType([_f("path", S), _f("sizeInBytes", L), _f("modificationTime", L), _f("tags", SMAP)])

KNOWN_ACTIONS = (
    "add",
    "remove",
    "cdc",
    "metaData",
    "protocol",
    "txn",
    "commitInfo",
    "domainMetadata",
    "checkpointMetadata",
    "sidecar",
)

# One commit line. commitInfo stays raw JSON text here (see module docstring).
ACTION_SCHEMA = StructType(
    [
        _f("add", ADD),
        _f("remove", REMOVE),
        _f("cdc", CDC),
        _f("metaData", METADATA),
        _f("protocol", PROTOCOL),
        _f("txn", TXN),
        _f("commitInfo", S),
        _f("domainMetadata", DOMAIN),
        _f("checkpointMetadata", CHECKPOINT_METADATA),
        _f("sidecar", SIDECAR),
        _f("_corrupt_record", S),
    ]
)

# Only the commitInfo fields the reader types in Spark (the index reads the rest from the
# verbatim text; parsing fewer fields is cheaper on every commit).
COMMIT_INFO_SCHEMA = StructType(
    [
        _f("inCommitTimestamp", L),
        _f("timestamp", L),
        _f("operation", S),
        _f("readVersion", L),
        _f("isolationLevel", S),
        _f("isBlindAppend", B),
        _f("engineInfo", S),
        _f("txnId", S),
    ]
)

# Checkpoint Parquet: only the columns a snapshot needs (stats are read only when asked).
CHECKPOINT_SCHEMA = StructType(
    [
        _f("add", ADD),
        _f("remove", REMOVE),
        _f("metaData", METADATA),
        _f("protocol", PROTOCOL),
        _f("txn", TXN),
        _f("domainMetadata", DOMAIN),
        _f("checkpointMetadata", CHECKPOINT_METADATA),
        _f("sidecar", SIDECAR),
    ]
)
