"""Classic single-file checkpoints and `_last_checkpoint`, as delta-spark 3.x writes them.

The column set and nesting match a real delta-spark 3.0 checkpoint
(../shared/corpus/tables/golden-checkpoint/_delta_log/00000000000000000010.checkpoint.parquet):
txn, add, remove, metaData, protocol, domainMetadata; no stats_parsed / partitionValues_parsed
(`delta.checkpoint.writeStatsAsStruct` off). We write it with pyarrow, so the Parquet footer
says `parquet-cpp-arrow` where Spark's says `parquet-mr`; the Spark schema is stored in the
same footer key (`org.apache.spark.sql.parquet.row.metadata`) as Spark does.
`_last_checkpoint` carries the PROTOCOL.md "JSON checksum" (MD5 of the canonical form).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq

from forensics.synth.actions import dumps

# (name, type) where type is "string" | "long" | "integer" | "boolean" | ("map",) |
# ("array",) | [nested fields]
_DV = [
    ("storageType", "string"),
    ("pathOrInlineDv", "string"),
    ("offset", "integer"),
    ("sizeInBytes", "integer"),
    ("cardinality", "long"),
    ("maxRowIndex", "long"),
]
CHECKPOINT_FIELDS: list[tuple[str, Any]] = [
    ("txn", [("appId", "string"), ("version", "long"), ("lastUpdated", "long")]),
    (
        "add",
        [
            ("path", "string"),
            ("partitionValues", ("map",)),
            ("size", "long"),
            ("modificationTime", "long"),
            ("dataChange", "boolean"),
            ("tags", ("map",)),
            ("deletionVector", _DV),
            ("baseRowId", "long"),
            ("defaultRowCommitVersion", "long"),
            ("stats", "string"),
        ],
    ),
    (
        "remove",
        [
            ("path", "string"),
            ("deletionTimestamp", "long"),
            ("dataChange", "boolean"),
            ("extendedFileMetadata", "boolean"),
            ("partitionValues", ("map",)),
            ("size", "long"),
            ("deletionVector", _DV),
            ("baseRowId", "long"),
            ("defaultRowCommitVersion", "long"),
        ],
    ),
    (
        "metaData",
        [
            ("id", "string"),
            ("name", "string"),
            ("description", "string"),
            ("format", [("provider", "string"), ("options", ("map",))]),
            ("schemaString", "string"),
            ("partitionColumns", ("array",)),
            ("configuration", ("map",)),
            ("createdTime", "long"),
        ],
    ),
    (
        "protocol",
        [
            ("minReaderVersion", "integer"),
            ("minWriterVersion", "integer"),
            ("readerFeatures", ("array",)),
            ("writerFeatures", ("array",)),
        ],
    ),
    ("domainMetadata", [("domain", "string"), ("configuration", "string"), ("removed", "boolean")]),
]

_ARROW_PRIM = {"string": pa.string(), "long": pa.int64(), "integer": pa.int32(), "boolean": pa.bool_()}


def _arrow_type(t: Any) -> pa.DataType:
    if isinstance(t, list):
        return pa.struct([pa.field(n, _arrow_type(c)) for n, c in t])
    if isinstance(t, tuple):
        return pa.map_(pa.string(), pa.string()) if t[0] == "map" else pa.list_(pa.string())
    return _ARROW_PRIM[t]


def _spark_type(t: Any) -> Any:
    if isinstance(t, list):
        return {"type": "struct", "fields": [_spark_field(n, c) for n, c in t]}
    if isinstance(t, tuple):
        if t[0] == "map":
            return {"type": "map", "keyType": "string", "valueType": "string", "valueContainsNull": True}
        return {"type": "array", "elementType": "string", "containsNull": True}
    return t


def _spark_field(name: str, t: Any) -> dict[str, Any]:
    return {"name": name, "type": _spark_type(t), "nullable": True, "metadata": {}}


ARROW_SCHEMA = pa.schema([pa.field(n, _arrow_type(t)) for n, t in CHECKPOINT_FIELDS])
SPARK_SCHEMA: dict[str, Any] = {"type": "struct", "fields": [_spark_field(n, t) for n, t in CHECKPOINT_FIELDS]}


def _map(d: dict[str, Any] | None) -> list[tuple[str, Any]] | None:
    return None if d is None else list(d.items())


def _dv(d: dict[str, Any] | None) -> dict[str, Any] | None:
    return d


def checkpoint_rows(actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Checkpoint rows from action objects ({"add": {...}} etc. as on disk)."""
    rows: list[dict[str, Any]] = []
    for obj in actions:
        (kind, a), = obj.items()
        row: dict[str, Any] = {}
        if kind == "add":
            row["add"] = {
                "path": a["path"],
                "partitionValues": _map(a.get("partitionValues")),
                "size": a.get("size"),
                "modificationTime": a.get("modificationTime"),
                "dataChange": a.get("dataChange"),
                "tags": _map(a.get("tags")),
                "deletionVector": _dv(a.get("deletionVector")),
                "stats": a.get("stats"),
            }
        elif kind == "remove":
            # Tombstones in a checkpoint carry no stats and no tags (PROTOCOL.md).
            row["remove"] = {
                "path": a["path"],
                "deletionTimestamp": a.get("deletionTimestamp"),
                "dataChange": a.get("dataChange"),
                "extendedFileMetadata": a.get("extendedFileMetadata"),
                "partitionValues": _map(a.get("partitionValues")),
                "size": a.get("size"),
                "deletionVector": _dv(a.get("deletionVector")),
            }
        elif kind == "metaData":
            fmt = a.get("format") or {"provider": "parquet", "options": {}}
            row["metaData"] = {
                "id": a.get("id"),
                "name": a.get("name"),
                "description": a.get("description"),
                "format": {"provider": fmt.get("provider"), "options": _map(fmt.get("options") or {})},
                "schemaString": a.get("schemaString"),
                "partitionColumns": a.get("partitionColumns"),
                "configuration": _map(a.get("configuration") or {}),
                "createdTime": a.get("createdTime"),
            }
        elif kind == "protocol":
            row["protocol"] = dict(a)
        elif kind == "txn":
            row["txn"] = dict(a)
        elif kind == "domainMetadata":
            row["domainMetadata"] = dict(a)
        else:
            continue
        rows.append(row)
    return rows


def write_checkpoint_file(
    log_dir: Path, version: int, actions: list[dict[str, Any]], spark_version: str = "3.5.1"
) -> tuple[Path, int, int]:
    """Write `<version>.checkpoint.parquet`; returns (path, number of actions, number of adds)."""
    rows = checkpoint_rows(actions)
    table = pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)
    table = table.replace_schema_metadata(
        {"org.apache.spark.version": spark_version, "org.apache.spark.sql.parquet.row.metadata": dumps(SPARK_SCHEMA)}
    )
    path = log_dir / f"{version:020d}.checkpoint.parquet"
    tmp = log_dir / f".{version:020d}.checkpoint.parquet.tmp"
    pq.write_table(table, tmp, compression="snappy")
    os.replace(tmp, path)
    n_add = sum(1 for r in rows if "add" in r)
    return path, len(rows), n_add


# ---- _last_checkpoint ----------------------------------------------------------------


def _url(s: str) -> str:
    # PROTOCOL.md "How to URL encode keys and string values": unreserved = A-Z a-z 0-9 - . _ ~
    return quote(s, safe="-._~")


def _canon(prefix: str, value: Any, out: list[tuple[str, str]]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _canon(f'{prefix}+"{_url(k)}"' if prefix else f'"{_url(k)}"', v, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _canon(f"{prefix}+{i}" if prefix else str(i), v, out)
    else:
        if value is None:
            text = "null"
        elif value is True:
            text = "true"
        elif value is False:
            text = "false"
        elif isinstance(value, str):
            text = f'"{_url(value)}"'
        else:
            text = dumps(value)
        out.append((prefix, text))


def last_checkpoint_checksum(obj: dict[str, Any]) -> str:
    """PROTOCOL.md "JSON checksum": MD5 of the sorted, URL-encoded path=value pairs."""
    pairs: list[tuple[str, str]] = []
    _canon("", {k: v for k, v in obj.items() if k != "checksum"}, pairs)
    pairs.sort(key=lambda p: p[0].encode("utf-8"))
    text = ",".join(f"{p}={v}" for p, v in pairs)
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def write_last_checkpoint(log_dir: Path, version: int, size: int, size_in_bytes: int, num_adds: int) -> Path:
    """`_last_checkpoint` with delta-spark 3.x's keys and order (golden-checkpoint sample)."""
    obj: dict[str, Any] = {
        "version": version,
        "size": size,
        "sizeInBytes": size_in_bytes,
        "numOfAddFiles": num_adds,
        "checkpointSchema": SPARK_SCHEMA,
    }
    obj["checksum"] = last_checkpoint_checksum(obj)
    path = log_dir / "_last_checkpoint"
    tmp = log_dir / "._last_checkpoint.tmp"
    tmp.write_text(dumps(obj), encoding="utf-8")
    os.replace(tmp, path)
    return path


# ---- multi-part and V2 (sidecar) checkpoints -------------------------------------------

# V2 manifests add these two columns after domainMetadata (delta-spark 4.x, e.g.
# ../shared/corpus/tables/krs-v2-checkpoints-parquet-with-sidecars); sidecars hold add/remove only.
V2_FIELDS: list[tuple[str, Any]] = CHECKPOINT_FIELDS + [
    ("checkpointMetadata", [("version", "long"), ("tags", ("map",))]),
    ("sidecar", [("path", "string"), ("sizeInBytes", "long"), ("modificationTime", "long"), ("tags", ("map",))]),
]
SIDECAR_FIELDS: list[tuple[str, Any]] = [f for f in CHECKPOINT_FIELDS if f[0] in ("add", "remove")]


def _write_rows(path: Path, rows: list[dict[str, Any]], fields: list[tuple[str, Any]], spark_version: str) -> int:
    """Write rows with a Spark-style footer via a temporary name; returns the file's size."""
    schema = pa.schema([pa.field(n, _arrow_type(t)) for n, t in fields])
    spark_schema = {"type": "struct", "fields": [_spark_field(n, t) for n, t in fields]}
    table = pa.Table.from_pylist(rows, schema=schema).replace_schema_metadata(
        {"org.apache.spark.version": spark_version, "org.apache.spark.sql.parquet.row.metadata": dumps(spark_schema)}
    )
    tmp = path.parent / f".{path.name}.tmp"
    pq.write_table(table, tmp, compression="snappy")
    os.replace(tmp, path)
    return path.stat().st_size


def write_multipart_checkpoint(
    log_dir: Path, version: int, actions: list[dict[str, Any]], parts: int, spark_version: str = "3.5.1"
) -> list[Path]:
    """`<v>.checkpoint.<i>.<n>.parquet`, rows split in order over n parts as delta-spark does
    (`checkpointPartSize`); each part carries the full checkpoint schema."""
    rows = checkpoint_rows(actions)
    per = max(1, -(-len(rows) // parts))
    out = []
    for i in range(parts):
        p = log_dir / f"{version:020d}.checkpoint.{i + 1:010d}.{parts:010d}.parquet"
        _write_rows(p, rows[i * per:(i + 1) * per], CHECKPOINT_FIELDS, spark_version)
        out.append(p)
    return out


def write_v2_checkpoint(
    log_dir: Path, version: int, actions: list[dict[str, Any]], sidecars: int = 2, spark_version: str = "4.0.0"
) -> tuple[Path, list[Path]]:
    """A V2 checkpoint: a UUID-named Parquet manifest (checkpointMetadata, sidecar rows, then the
    non-file actions) and the file actions split over `sidecars` files in `_delta_log/_sidecars`."""
    import uuid

    rows = checkpoint_rows(actions)
    files = [r for r in rows if "add" in r or "remove" in r]
    rest = [r for r in rows if "add" not in r and "remove" not in r]
    side_dir = log_dir / "_sidecars"
    side_dir.mkdir(exist_ok=True)
    per = max(1, -(-len(files) // sidecars))
    side_rows, side_paths = [], []
    for i in range(sidecars):
        name = f"{version:020d}.checkpoint.{i + 1:010d}.{sidecars:010d}.{uuid.uuid4()}.parquet"
        p = side_dir / name
        size = _write_rows(p, files[i * per:(i + 1) * per], SIDECAR_FIELDS, spark_version)
        side_rows.append({"sidecar": {"path": name, "sizeInBytes": size, "modificationTime": int(p.stat().st_mtime * 1000), "tags": None}})
        side_paths.append(p)
    manifest = log_dir / f"{version:020d}.checkpoint.{uuid.uuid4()}.parquet"
    _write_rows(manifest, [{"checkpointMetadata": {"version": version, "tags": None}}] + side_rows + rest, V2_FIELDS, spark_version)
    return manifest, side_paths
