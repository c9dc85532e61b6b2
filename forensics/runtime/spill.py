"""Bring a large Spark result to Python through a scratch Parquet directory, not the driver JVM.

`toArrow()` gathers every partition's batches in the driver JVM first: a 1,000,000-commit log
(1.7 GB of commit JSON) parses to more than `spark.driver.maxResultSize` (1 GiB by default) and
more than the default driver heap, and the read failed after minutes. When the session is local
(its executors share this machine's disk), a read above SPILL_MIN_BYTES of input is written by the
executors as Parquet into a scratch directory under the tool's cache root (never under a table)
and read back with pyarrow, column by column; the directory is removed at once. Clusters and Spark
Connect, whose executors do not share this disk, collect as before.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa

from forensics.runtime.paths import cache_root

# Input bytes (commit JSON) from which a local read goes through Parquet. The 20,000-commit bench
# log (33 MB) stays below it: a result that fits the driver is collected directly (the write and
# the read back would be extra work).
SPILL_MIN_BYTES = 256 << 20


def scratch_root() -> Path:
    return cache_root() / "scratch"


def collect_arrow(df: Any, columns: list[str], input_bytes: int = 0) -> pa.Table:
    """`df`'s `columns` as one Arrow table, rows in the order Spark's partitions give them."""
    if input_bytes >= SPILL_MIN_BYTES and shares_this_disk(df.sparkSession):
        return _through_parquet(df.select(*columns), columns)
    return _to_arrow(df.select(*columns))


def _to_arrow(df: Any) -> pa.Table:
    try:
        return df.toArrow()
    except AttributeError:  # pyspark < 4: no DataFrame.toArrow
        return pa.Table.from_pandas(df.toPandas(), preserve_index=False)


def shares_this_disk(spark: Any) -> bool:
    """Whether the session's executors write where this process reads: a local master, not Connect."""
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return False
    try:
        return str(spark.sparkContext.master).startswith("local")
    except Exception:  # noqa: BLE001 - no SparkContext to ask: assume not
        return False


def _through_parquet(df: Any, columns: list[str]) -> pa.Table:
    import pyarrow.parquet as pq

    root = scratch_root()
    root.mkdir(parents=True, exist_ok=True)
    _sweep(root)
    tmp = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=root))
    out = tmp / "rows"
    try:
        df.write.mode("errorifexists").parquet(out.as_uri())
        # One file per partition, named by its index: read in name order, the rows come in the
        # order toArrow() gives.
        parts = sorted(out.glob("part-*.parquet"))
        if not parts:
            return _to_arrow(df.limit(0))
        return pa.concat_tables([pq.read_table(f, columns=columns) for f in parts])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _sweep(root: Path) -> None:
    """Remove scratch directories left by processes that no longer run (killed mid-read)."""
    for d in root.iterdir():
        pid = d.name.split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except OSError:
            pass
