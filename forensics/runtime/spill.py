"""Bring a large Spark result to Python through a scratch Parquet directory, not the driver JVM.

`toArrow()` gathers every partition's batches in the driver JVM first: a 1,000,000-commit log
(1.7 GB of commit JSON) parses to more than `spark.driver.maxResultSize` (1 GiB by default) and
more than the default driver heap, and the read failed after minutes. When the session is local
(its executors share this machine's disk), a read above SPILL_MIN_BYTES of input is written by the
executors as Parquet into a scratch directory under the tool's cache root (never under a table)
and read back with pyarrow, column by column; the directory is removed at once. A cluster's
executors do not share this disk: there each partition's rows come back as one Arrow IPC stream,
a bounded number of partitions per job (`sc.runJob` over a slice of the partitions), so no job's
results approach `spark.driver.maxResultSize` and the driver JVM never holds the whole result.
Spark Connect (no SparkContext) collects as before: its server streams the batches.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import pyarrow as pa

from forensics.runtime.paths import cache_root

# Input bytes (commit JSON) from which a local read goes through Parquet. The 20,000-commit bench
# log (33 MB) stays below it: a result that fits the driver is collected directly (the write and
# the read back would be extra work).
SPILL_MIN_BYTES = 256 << 20


# Set by the warm engine's JIT warm-up (forensics/engine/warmup.py) for its own reads: its small
# log then takes the path a large one takes, so that path's code is compiled before a command needs
# it (the first 1M-file snapshot after a warm-up was ~2 s slower than the next). Per thread: a
# command served meanwhile keeps the thresholds.
_spill_always: ContextVar[bool] = ContextVar("spill_always", default=False)


@contextmanager
def spilling_everything():
    """Within: this thread's local reads go through the scratch Parquet whatever their size."""
    token = _spill_always.set(True)
    try:
        yield
    finally:
        _spill_always.reset(token)


def scratch_root() -> Path:
    return cache_root() / "scratch"


# Input bytes per collecting job on a cluster: the parsed rows of the 1,000,000-commit log came to
# about 1.65x its commit JSON, so a job's results stay near 420 MB, under the 1 GiB default limit.
CLUSTER_JOB_INPUT_BYTES = 256 << 20


def collect_arrow(df: Any, columns: list[str], input_bytes: int = 0, *, spill_min: int | None = None) -> pa.Table:
    """`df`'s `columns` as one Arrow table, rows in the order Spark's partitions give them.
    From `spill_min` bytes of input (SPILL_MIN_BYTES), not through the driver JVM (the module's docstring)."""
    if input_bytes >= (SPILL_MIN_BYTES if spill_min is None else spill_min) or _spill_always.get():
        if shares_this_disk(df.sparkSession):
            return _through_parquet(df.select(*columns), columns)
        if _has_context(df.sparkSession):
            return by_partitions(df.select(*columns), input_bytes)
    return _to_arrow(df.select(*columns))


@contextmanager
def _sql_conf_in_tasks(spark: Any):
    """A job started with `sc.runJob` runs outside a SQL execution, so its tasks would read Spark's
    default SQL settings (to_json would drop null fields, the time zone would be the JVM's): hand
    them the session's, as a SQL action does, through the job's local properties."""
    sc = spark.sparkContext
    try:
        every = dict(spark.conf.getAll)  # pyspark >= 4
    except AttributeError:
        every = dict(sc.getConf().getAll())  # 3.5: the settings the session started with
    confs = {k: v for k, v in every.items() if k.startswith("spark.sql.")}
    before = {k: sc.getLocalProperty(k) for k in confs}
    for k, v in confs.items():
        sc.setLocalProperty(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            sc.setLocalProperty(k, v)


def _has_context(spark: Any) -> bool:
    """A classic session with a SparkContext (Spark Connect has none)."""
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return False
    try:
        return spark.sparkContext is not None
    except Exception:  # noqa: BLE001
        return False


def by_partitions(df: Any, input_bytes: int) -> pa.Table:
    """Collect `df` a slice of partitions per job, each partition as one Arrow IPC stream."""
    sc = df.sparkSession.sparkContext

    def as_ipc(batches):  # runs on the executors; defined here so it travels by value, not by import
        import pyarrow as pa  # noqa: F811 - the executor's own import

        sink, writer = pa.BufferOutputStream(), None
        for b in batches:
            writer = writer or pa.ipc.new_stream(sink, b.schema)
            writer.write_batch(b)
        if writer is not None:
            writer.close()
            yield pa.RecordBatch.from_pydict({"ipc": [sink.getvalue().to_pybytes()]})

    rdd = df.mapInArrow(as_ipc, "ipc binary").rdd
    n = rdd.getNumPartitions()
    step = max(1, int(CLUSTER_JOB_INPUT_BYTES * n / max(input_bytes, 1)))
    tables = []
    with _sql_conf_in_tasks(df.sparkSession):
        for lo in range(0, n, step):
            for blob in sc.runJob(rdd, lambda rows: [r[0] for r in rows], list(range(lo, min(n, lo + step)))):
                tables.append(pa.ipc.open_stream(blob).read_all())
    if not tables:
        return _to_arrow(df.limit(0))
    got = pa.concat_tables(tables)
    return got.cast(pa.schema([f.with_nullable(True) for f in got.schema]))  # as toArrow() types them


def _to_arrow(df: Any) -> pa.Table:
    try:
        return df.toArrow()
    except AttributeError:  # pyspark < 4: no DataFrame.toArrow
        return pa.Table.from_pandas(df.toPandas(), preserve_index=False)


def shares_this_disk(spark: Any) -> bool:
    """Whether the session's executors write where this process reads: a local master, not Connect."""
    return _has_context(spark) and str(spark.sparkContext.master).startswith("local")


def _through_parquet(df: Any, columns: list[str]) -> pa.Table:
    import pyarrow.parquet as pq

    tmp = new_scratch_dir()
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


def new_scratch_dir() -> Path:
    """A new private directory (0700) of this process's under the scratch root, for files too large
    for memory that no table may hold (a spilled read, the replay's second process's inputs)."""
    root = scratch_root()
    root.mkdir(parents=True, exist_ok=True)
    sweep(root)
    return Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=root))


def sweep(root: Path) -> None:
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
