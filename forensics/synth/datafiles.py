"""Data-file names as Spark writes them, and tiny real Parquet files (pyarrow).

Spark names a task's output `part-<task:05d>-<uuid>.c000.snappy.parquet` under Hive-style
partition directories (`date=2024-01-01/`); partition columns are not stored in the file.
The stats JSON follows delta-spark's layout (numRecords, minValues, maxValues, nullCount).
"""

from __future__ import annotations

import random
import uuid
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq

from forensics.synth.actions import AddFile, dumps


def seeded_uuid(rng: random.Random) -> str:
    """A random-looking (version 4) UUID drawn from `rng`, so output is reproducible."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def partition_dir(partition_values: dict[str, str | None]) -> str:
    """Hive-style directory; Spark escapes special characters and writes null as __HIVE_DEFAULT_PARTITION__."""
    parts = []
    for k, v in partition_values.items():
        val = "__HIVE_DEFAULT_PARTITION__" if v is None else quote(v, safe=" -_.:")
        parts.append(f"{k}={val}")
    return "/".join(parts)


def data_file_name(rng: random.Random, partition_values: dict[str, str | None], task: int = 0) -> str:
    name = f"part-{task:05d}-{seeded_uuid(rng)}.c000.snappy.parquet"
    d = partition_dir(partition_values)
    return f"{d}/{name}" if d else name


def stats_json(num_records: int, min_values: dict[str, Any], max_values: dict[str, Any], null_count: dict[str, int]) -> str:
    return dumps({"numRecords": num_records, "minValues": min_values, "maxValues": max_values, "nullCount": null_count})


def _stat_value(v: Any) -> Any:
    if isinstance(v, date):
        return v.isoformat()
    return v


def table_stats(table: pa.Table) -> str:
    """delta-spark-style stats of an Arrow table (top-level primitive columns only)."""
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for name in table.column_names:
        col = table.column(name)
        nulls[name] = col.null_count
        if table.num_rows and col.null_count < table.num_rows:
            import pyarrow.compute as pc

            mm = pc.min_max(col).as_py()
            mins[name] = _stat_value(mm["min"])
            maxs[name] = _stat_value(mm["max"])
    return stats_json(table.num_rows, mins, maxs, nulls)


def write_data_file(
    table_dir: Path,
    rel_path: str,
    data: pa.Table,
    partition_values: dict[str, str | None],
    modification_time: int,
    data_change: bool = True,
) -> AddFile:
    """Write `data` (without partition columns) to `rel_path` and return its AddFile."""
    path = table_dir / rel_path
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(data, path, compression="snappy")
    return AddFile(
        path=rel_path,
        partition_values=dict(partition_values),
        size=path.stat().st_size,
        modification_time=modification_time,
        data_change=data_change,
        stats=table_stats(data),
    )
