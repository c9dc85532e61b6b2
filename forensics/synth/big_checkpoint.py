"""A table whose state lives in one large classic checkpoint: the bench's 1M-file snapshot
(bench/bigcheckpoint.py) and the warm engine's JIT warm-up of that path (engine/warmup.py).

Layout, in delta-spark's on-disk format (schema from forensics.synth.checkpoint):
  00000000000000000000.json        protocol + metaData + commitInfo (CREATE TABLE)
  0000000000000000000{CP}.checkpoint.parquet   metaData, protocol, N adds with stats
  commits CP+1 .. CP+TAIL           a few appends and one OPTIMIZE-style rewrite each
  _last_checkpoint                  pointing at CP
Versions 1..CP-1 are absent (cleaned up), as on a long-lived table. Built column-wise with
pyarrow (1M rows in a few seconds); no data files.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from forensics.synth.checkpoint import ARROW_SCHEMA, SPARK_SCHEMA, write_last_checkpoint

CP = 10
TAIL = 5
T0 = 1_700_000_000_000
SCHEMA_STRING = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "value", "type": "string", "nullable": True, "metadata": {}},
            {"name": "date", "type": "string", "nullable": True, "metadata": {}},
        ],
    },
    separators=(",", ":"),
)
METADATA = {
    "id": "bench-1m-checkpoint",
    "format": {"provider": "parquet", "options": {}},
    "schemaString": SCHEMA_STRING,
    "partitionColumns": ["date"],
    "configuration": {},
    "createdTime": T0,
}
PROTOCOL = {"minReaderVersion": 1, "minWriterVersion": 2}


def _date(p: int) -> str:
    return f"2024-{1 + (p // 28) % 12:02d}-{1 + p % 28:02d}"


def _commit_info(version: int, op: str, params: dict, blind: bool) -> dict:
    return {
        "timestamp": T0 + version * 1000,
        "operation": op,
        "operationParameters": params,
        "readVersion": version - 1 if version else None,
        "isolationLevel": "Serializable",
        "isBlindAppend": blind,
        "operationMetrics": {},
        "engineInfo": "Apache-Spark/3.5.1 Delta-Lake/3.2.0",
        "txnId": f"00000000-0000-0000-0000-{version:012d}",
    }


def _line(obj: dict) -> str:
    return json.dumps(obj, separators=(",", ":"))


def _stats(i: int) -> str:
    return (
        '{"numRecords":1000,"minValues":{"id":%d,"value":"a%07d"},"maxValues":{"id":%d,"value":"z%07d"},'
        '"nullCount":{"id":0,"value":0}}' % (i * 1000, i, i * 1000 + 999, i)
    )


def write(out: Path, files: int = 1_000_000, partitions: int = 100) -> dict:
    """Write the table at `out` (which must not hold a log yet); what was written, for the bench."""
    t = time.time()
    log = out / "_delta_log"
    log.mkdir(parents=True, exist_ok=False)
    v0 = [
        {"commitInfo": _commit_info(0, "CREATE TABLE", {"isManaged": "false", "partitionBy": '["date"]'}, True)},
        {"protocol": PROTOCOL},
        {"metaData": METADATA},
    ]
    (log / f"{0:020d}.json").write_text("\n".join(_line(a) for a in v0) + "\n")

    n = files
    paths = pa.array([f"date={_date(i % partitions)}/part-{i:07d}-c000.snappy.parquet" for i in range(n)])
    pvs = pa.array([[("date", _date(i % partitions))] for i in range(n)], type=pa.map_(pa.string(), pa.string()))
    add_type = ARROW_SCHEMA.field("add").type
    cols = {
        "path": paths,
        "partitionValues": pvs,
        "size": pa.array([1_000_000 + i % 1000 for i in range(n)], type=pa.int64()),
        "modificationTime": pa.array([T0 + i for i in range(n)], type=pa.int64()),
        "dataChange": pa.array([False] * n),
        "stats": pa.array([_stats(i) for i in range(n)]),
    }
    arrays = [cols.get(f.name, pa.nulls(n, type=f.type)) for f in add_type]
    adds = pa.StructArray.from_arrays(arrays, fields=list(add_type))
    add_rows = pa.table({f.name: (adds if f.name == "add" else pa.nulls(n, type=f.type)) for f in ARROW_SCHEMA}, schema=ARROW_SCHEMA)
    meta_rows = pa.Table.from_pylist(
        [
            {"metaData": {**METADATA, "format": {"provider": "parquet", "options": []}, "configuration": []}},
            {"protocol": PROTOCOL},
        ],
        schema=ARROW_SCHEMA,
    )
    table = pa.concat_tables([meta_rows, add_rows]).replace_schema_metadata(
        {"org.apache.spark.version": "3.5.1", "org.apache.spark.sql.parquet.row.metadata": json.dumps(SPARK_SCHEMA)}
    )
    cp_path = log / f"{CP:020d}.checkpoint.parquet"
    pq.write_table(table, cp_path, compression="snappy", row_group_size=128 * 1024)
    write_last_checkpoint(log, CP, table.num_rows, cp_path.stat().st_size, n)

    # A short tail of commits after the checkpoint: appends, and a rewrite removing old files.
    for v in range(CP + 1, CP + TAIL + 1):
        lines = [{"commitInfo": _commit_info(v, "WRITE", {"mode": "Append", "partitionBy": "[]"}, True)}]
        for k in range(4):
            i = n + (v - CP - 1) * 4 + k
            lines.append({"add": {"path": f"date={_date(i % partitions)}/part-{i:07d}-c000.snappy.parquet",
                                  "partitionValues": {"date": _date(i % partitions)}, "size": 1_000_000,
                                  "modificationTime": T0 + i, "dataChange": True, "stats": _stats(i)}})
        if v == CP + TAIL:
            lines[0] = {"commitInfo": _commit_info(v, "DELETE", {"predicate": '["(id < 1000)"]'}, False)}
            lines.append({"remove": {"path": f"date={_date(0)}/part-{0:07d}-c000.snappy.parquet", "deletionTimestamp": T0 + v,
                                     "dataChange": True, "extendedFileMetadata": True, "partitionValues": {"date": _date(0)}, "size": 1_000_000}})
        (log / f"{v:020d}.json").write_text("\n".join(_line(a) for a in lines) + "\n")
    return {
        "path": str(out),
        "checkpoint_version": CP,
        "latest_version": CP + TAIL,
        "checkpoint_adds": n,
        "checkpoint_bytes": cp_path.stat().st_size,
        "active_files_latest": n + TAIL * 4 - 1,
        "seconds": round(time.time() - t, 2),
    }
