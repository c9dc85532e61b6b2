"""Sample incidents (a), (c), (d), (e) written by delta-spark itself (Delta's JVM engine, live).

Each builder makes a small partitioned table with Spark SQL, races two transactions on it and
keeps what the engine left: the log, the data files (the loser's output stays as an orphan, as
Spark writes data before it commits) and `error.txt`, the aborted transaction's real exception
as the JVM prints it (`toString()`: class name, then `getMessage()`). Values and dates are fixed;
the times, file names and txnIds are the engine's own, so a rebuild differs in those.

How the loser is held open while the winner commits:
- whole statements from two threads (a, d): the loser's MERGE source passes through a Python UDF
  that waits at a gate (a file) until the winner has committed;
- delta-spark's own transaction API over py4j (c, e), as bench/differential_spark.py drives it: an
  OPTIMIZE and a streaming batch cannot be paused from Python, so the loser's transaction is started
  with `DeltaLog.startTransaction()`, reads what the command reads (`filterFiles` on the partition,
  `txnVersion(queryId)`), writes with `writeFiles`, and commits with the command's own operation
  (`DeltaOperations.Optimize`, `DeltaOperations.StreamingUpdate` with a `SetTransaction`, as
  delta-spark's DeltaSink does); delta-spark's conflict checker decides.

Needs delta-spark's jars (`make jars`; DELTA_FORENSICS_DELTA_JARS) — scripts/make_sample_logs.py --delta-spark.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from forensics.synth.incidents import Incident

SCHEMA = "id BIGINT, amount DOUBLE, status STRING, date DATE"
WAIT_S = 120  # how long a held-open loser waits for its gate before giving up


def produced_by(spark: Any, how: str) -> str:
    import importlib.metadata as md

    return f"written by delta-spark {md.version('delta-spark')} on Apache Spark {spark.version} ({how})"


# ---- small helpers ------------------------------------------------------------------------------


def _rows(ids: list[int], day: str, status: str = "pending") -> list[tuple]:
    return [(i, round(10.0 + (i * 7.31) % 290, 2), status, day) for i in ids]


def _df(spark: Any, rows: list[tuple]):
    from pyspark.sql import functions as F

    return spark.createDataFrame(rows, "id BIGINT, amount DOUBLE, status STRING, date STRING") \
        .withColumn("date", F.to_date("date"))


def _append(spark: Any, path: str, rows: list[tuple]) -> None:
    _df(spark, rows).repartition(1).write.format("delta").mode("append").save(path)


def _create(spark: Any, path: str, rows: list[tuple]) -> None:
    _df(spark, rows).repartition(1).createOrReplaceTempView("seed_rows")
    spark.sql(f"CREATE TABLE delta.`{path}` USING delta PARTITIONED BY (date) AS SELECT * FROM seed_rows").collect()


def _latest(path: str) -> int:
    return max(int(p.stem) for p in Path(path, "_delta_log").glob("*.json"))


def _error_text(e: BaseException) -> tuple[str, str]:
    """(simple class name, the text the JVM prints: `toString()`) of the engine's exception behind `e`.
    delta-spark's Python side converts its exceptions from exactly that text (delta/exceptions/captured.py:
    class name, ': ', message), so the text is rebuilt from the converted exception the same way."""
    if type(e).__module__.startswith("delta.exceptions"):
        return type(e).__name__, f"io.delta.exceptions.{type(e).__name__}: {e._desc}"  # noqa: SLF001
    java = getattr(e, "java_exception", None)  # a py4j call that raised in the JVM
    if java is None:
        raise RuntimeError(f"not an engine exception: {type(e).__name__}: {e}") from e
    return str(java.getClass().getSimpleName()), str(java.toString())


def _write_error(out: Path, text: str) -> str:
    (out / "error.txt").write_text(text.rstrip("\n") + "\n", encoding="utf-8")
    return "error.txt"


def _orphans(table: Path) -> tuple[str, ...]:
    refs = set()
    for f in (table / "_delta_log").glob("*.json"):
        for line in f.read_text(encoding="utf-8").splitlines():
            a = json.loads(line)
            for kind in ("add", "remove", "cdc"):
                if kind in a:
                    refs.add(a[kind]["path"])
    from urllib.parse import unquote

    on_disk = {p.relative_to(table).as_posix() for p in table.rglob("*.parquet") if "_delta_log" not in p.parts}
    return tuple(sorted(p for p in on_disk if p not in refs and unquote(p) not in {unquote(r) for r in refs}))


def _tidy(table: Path) -> None:
    """Drop Hadoop's `.crc` side files and an empty staged-commits directory (git keeps neither)."""
    for p in table.rglob(".*.crc"):
        p.unlink()
    staged = table / "_delta_log" / "_staged_commits"
    if staged.is_dir() and not any(staged.iterdir()):
        staged.rmdir()


class Gate:
    """A file the held-open loser's UDF waits for (the UDF runs in a Python worker process)."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="delta-gate-"))
        self.started, self.open_ = self.dir / "started", self.dir / "open"

    def udf(self):
        from pyspark.sql.functions import udf

        started, open_, wait = str(self.started), str(self.open_), WAIT_S

        @udf("string")
        def held(s):
            import os
            import time as _t

            open(started, "a").close()
            t0 = _t.time()
            while not os.path.exists(open_) and _t.time() - t0 < wait:
                _t.sleep(0.05)
            return s

        return held

    def wait_started(self, box: dict) -> None:
        t0 = time.time()
        while not self.started.exists():
            if box:
                raise RuntimeError(f"the held-open statement ended before its gate: {box} {box.get('error')!s:.3000}")
            if time.time() - t0 > WAIT_S:
                raise TimeoutError("the held-open statement never reached its gate")
            time.sleep(0.05)

    def release(self) -> None:
        self.open_.touch()

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _held_statement(run, gate: Gate) -> tuple[threading.Thread, dict]:
    box: dict = {}

    def go() -> None:
        try:
            run()
            box["outcome"] = "commit"
        except Exception as e:  # noqa: BLE001 - the engine's exception is the point
            box["error"] = e

    th = threading.Thread(target=go, daemon=True)
    th.start()
    gate.wait_started(box)
    return th, box


def _race(path: str, loser, winner, expected: str) -> tuple[int, str, str]:
    """Hold `loser(held_udf)` open at its gate, run `winner()` to its commit, then let the loser try:
    (the winner's version, the loser's exception class, its text)."""
    gate = Gate()
    try:
        th, box = _held_statement(lambda: loser(gate.udf()), gate)
        winner()
        version = _latest(path)
        gate.release()
        th.join(WAIT_S)
    finally:
        gate.close()
    if "error" not in box:
        raise RuntimeError(f"{expected} was expected to abort; it committed ({box})")
    return (version, *_error_text(box["error"]))


def _merge(spark: Any, path: str, rows: list[tuple], view: str, on: str, held=None) -> None:
    from pyspark.sql import functions as F

    src = _df(spark, rows).coalesce(1)  # one task: a held-open source occupies one core, not all
    if held is not None:
        src = src.withColumn("status", held(F.col("status")))
    src.createOrReplaceTempView(view)
    spark.sql(f"MERGE INTO delta.`{path}` t USING {view} s ON {on} "
              "WHEN MATCHED THEN UPDATE SET t.status = s.status, t.amount = s.amount "
              "WHEN NOT MATCHED THEN INSERT (id, amount, status, date) VALUES (s.id, s.amount, s.status, s.date)").collect()


# ---- (a) two MERGEs into different partitions ------------------------------------------------------


def a_merge_partitions(spark: Any, out: Path) -> Incident:
    _engine(spark)  # tiny tables: one partition for every shuffle, Delta's state included
    path = str(out / "table")
    d1, d2 = "2024-06-18", "2024-06-19"
    _create(spark, path, _rows(list(range(0, 40)), d1) + _rows(list(range(40, 80)), d2))
    _append(spark, path, _rows(list(range(80, 100)), d1))
    _append(spark, path, _rows(list(range(100, 120)), d2))
    read = _latest(path)
    # Job A (rows of 2024-06-18, `t.id = s.id`: no partition literal) reads v2 and is held open;
    # job B (rows of 2024-06-19) commits first.
    rows_a = _rows(list(range(0, 10)), d1, "shipped") + _rows([500, 501], d1, "shipped")
    rows_b = _rows(list(range(100, 110)), d2, "shipped") + _rows([600], d2, "shipped")
    winner, exc, text = _race(path, lambda held: _merge(spark, path, rows_a, "updates_a", "t.id = s.id", held),
                              lambda: _merge(spark, path, rows_b, "updates_b", "t.id = s.id"), "the 2024-06-18 MERGE")
    orphans = _orphans(out / "table")
    # The job's retry re-runs the MERGE on the new version.
    _merge(spark, path, rows_a, "updates_a", "t.id = s.id")
    _tidy(out / "table")
    return Incident(
        "a-merge-partitions",
        f"two MERGEs (`t.id = s.id`, no partition literal) into {d1} and {d2} read v{read}; the {d2} MERGE won at "
        f"v{winner}, the {d1} MERGE aborted with {exc} (the text names [date={d2}] and v{winner}) leaving an orphan file, its retry landed at v{winner + 1}",
        produced_by(spark, "two threads; the loser's MERGE source waits in a Python UDF until the winner has committed"),
        _write_error(out, text),
        orphans,
    )


# ---- delta-spark's transaction API over py4j (c, e) -------------------------------------------


def _engine(spark: Any):
    import sys

    repo = str(Path(__file__).resolve().parent.parent)
    if repo not in sys.path:
        sys.path.insert(0, repo)
    from bench.differential_spark import Engine  # one set of py4j helpers for both

    return Engine(spark)


def _java_list(eng: Any, seq: Any) -> list:
    return list(eng.jvm.scala.jdk.javaapi.CollectionConverters.asJava(seq))


def _commit(eng: Any, txn: Any, actions: list, op: Any) -> tuple[str, str] | int:
    """Commit the held-open transaction: its version, or (class, text) of what delta-spark threw."""
    eng.spark.conf.set("spark.databricks.delta.history.metricsEnabled", "false")  # a bare txn has no SQL metrics
    try:
        return int(txn.commit(eng.seq(actions), op))
    except Exception as e:  # noqa: BLE001 - the engine's exception is the point
        return _error_text(e)
    finally:
        eng.spark.conf.set("spark.databricks.delta.history.metricsEnabled", "true")


# ---- (c) OPTIMIZE loses against a DELETE -----------------------------------------------------------


def c_optimize_vs_delete(spark: Any, out: Path) -> Incident:
    from pyspark.sql import functions as F

    eng = _engine(spark)
    path = str(out / "table")
    day, other = "2024-07-01", "2024-06-30"
    _create(spark, path, _rows(list(range(0, 25)), other))
    for k in range(4):
        _append(spark, path, _rows(list(range(100 + 10 * k, 110 + 10 * k)), day))
    read = _latest(path)
    # OPTIMIZE WHERE date = '2024-07-01', as OptimizeExecutor does it: a transaction at v4 that reads
    # the partition's files (`filterFiles(partition predicate, keepNumRecords = true)`), writes them
    # compacted into one file and removes them, all with dataChange = false.
    log = eng.delta.DeltaLog.forTable(spark._jsparkSession, path)  # noqa: SLF001
    txn = log.startTransaction()
    pred = eng.filters(f"date = '{day}'", path, ["date"])
    files = _java_list(eng, txn.filterFiles(pred, True))
    names = [str(f.path()).rsplit("/", 1)[-1] for f in files]
    # Meanwhile (while OPTIMIZE compacts) a DELETE of one row rewrites the second small file and commits.
    spark.sql(f"DELETE FROM delta.`{path}` WHERE date = '{day}' AND id = 117").collect()
    winner = _latest(path)
    rows = (spark.read.format("delta").option("versionAsOf", read).load(path).withColumn("_f", F.input_file_name())
            .where(F.element_at(F.split("_f", "/"), -1).isin(names)).drop("_f").coalesce(1))
    written = _java_list(eng, txn.writeFiles(rows._jdf))  # noqa: SLF001 - its output, written just before it commits
    adds = [eng.delta.actions.Action.fromJson(json.dumps({"add": {**json.loads(a.json())["add"], "dataChange": False}}))
            for a in written]
    now = int(time.time() * 1000)
    removes = [f.removeWithTimestamp(now, False) for f in files]
    op = eng.cls("DeltaOperations$Optimize")(eng.seq([eng.expr(f"date = '{day}'", path)]), eng.seq([]), False,
                                              eng.none(), False)
    result = _commit(eng, txn, adds + removes, op)
    if not isinstance(result, tuple):
        raise RuntimeError(f"the OPTIMIZE was expected to abort; it committed v{result}")
    exc, text = result
    orphans = _orphans(out / "table")
    # The scheduled OPTIMIZE runs again later and compacts the partition.
    spark.sql(f"OPTIMIZE delta.`{path}` WHERE date = '{day}'").collect()
    _tidy(out / "table")
    return Incident(
        "c-optimize-vs-delete",
        f"OPTIMIZE of date={day} read its {len(files)} small files at v{read}; a DELETE (id = 117) rewrote one of them "
        f"at v{winner}; OPTIMIZE aborted with {exc} (the text names the partition and v{winner}), its compacted output "
        f"stayed as an orphan; "
        f"a later OPTIMIZE landed at v{winner + 1}",
        produced_by(spark, "the OPTIMIZE through delta-spark's transaction API over py4j, as OptimizeExecutor reads, "
                           "writes and commits; the DELETE and the later OPTIMIZE as SQL"),
        _write_error(out, text),
        orphans,
    )


# ---- (d) ALTER TABLE lands while a MERGE runs ------------------------------------------------------


def d_alter_table(spark: Any, out: Path) -> Incident:
    _engine(spark)
    path = str(out / "table")
    day = "2024-07-08"
    _create(spark, path, _rows(list(range(0, 50)), day))
    _append(spark, path, _rows(list(range(50, 90)), "2024-07-09"))
    read = _latest(path)
    on = f"t.id = s.id AND t.date = DATE'{day}'"
    rows = _rows(list(range(0, 50)), day, "shipped")
    winner, exc, text = _race(path, lambda held: _merge(spark, path, rows, "updates_d", on, held),
                              lambda: spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (discount DOUBLE)").collect(),
                              "the MERGE")
    orphans = _orphans(out / "table")
    _merge(spark, path, rows, "updates_d", on)  # the re-run reads the new schema and lands
    _tidy(out / "table")
    return Incident(
        "d-alter-table",
        f"a MERGE into date={day} read v{read}; ALTER TABLE ADD COLUMNS landed at v{winner}; the MERGE aborted with "
        f"{exc} (orphan output left), its re-run landed at v{winner + 1}",
        produced_by(spark, "two threads; the MERGE source waits in a Python UDF until the ALTER TABLE has committed"),
        _write_error(out, text),
        orphans,
    )


# ---- (e) two streaming queries sharing one checkpoint ----------------------------------------------


def e_streaming_shared_checkpoint(spark: Any, out: Path) -> Incident:
    eng = _engine(spark)
    path = str(out / "table")
    day = "2024-07-16"
    work = Path(tempfile.mkdtemp(prefix="delta-stream-"))
    source, checkpoint = work / "in", work / "checkpoint"
    source.mkdir()
    _create(spark, path, _rows(list(range(0, 10)), day))
    next_id = [10]

    def arrive() -> list[tuple]:  # one more input file: the next epoch's rows
        rows = _rows(list(range(next_id[0], next_id[0] + 8)), day)
        next_id[0] += 8
        (source / f"batch-{next_id[0]:04d}.json").write_text(
            "\n".join(json.dumps(dict(zip(("id", "amount", "status", "date"), r))) for r in rows) + "\n")
        return rows

    def run_query(held=None) -> None:  # one run of the query: its next epoch, from its checkpoint
        from pyspark.sql import functions as F

        df = spark.readStream.schema("id BIGINT, amount DOUBLE, status STRING, date DATE").json(str(source))
        if held is not None:
            df = df.withColumn("status", held(F.col("status")))
        q = (df.writeStream.format("delta").option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
             .start(path))
        q.awaitTermination(WAIT_S)
        q.stop()

    try:
        for _ in range(3):
            arrive()
            run_query()
        query_id = next(json.loads(c)["commitInfo"]["operationParameters"]["queryId"]
                        for c in (Path(path) / "_delta_log" / f"{_latest(path):020d}.json").read_text().splitlines()
                        if "commitInfo" in c)
        read = _latest(path)
        batch = arrive()
        # A second instance of the same query (the same checkpoint, so the same queryId) runs epoch 3
        # on v3 the way DeltaSink.addBatch does: read txnVersion(queryId), write, SetTransaction(queryId, 3).
        log = eng.delta.DeltaLog.forTable(spark._jsparkSession, path)  # noqa: SLF001
        txn = log.startTransaction()
        epoch = int(txn.txnVersion(query_id)) + 1
        # The first instance runs the same epoch at the same time: held while the second one writes.
        gate = Gate()
        try:
            th, box = _held_statement(lambda: run_query(gate.udf()), gate)
            adds = _java_list(eng, txn.writeFiles(_df(spark, batch).coalesce(1)._jdf))  # noqa: SLF001
            gate.release()
            th.join(WAIT_S)  # ...and commits epoch 3 first
        finally:
            gate.close()
        if box.get("outcome") != "commit":
            raise RuntimeError(f"the first instance's epoch did not commit: {box}")
        winner = _latest(path)
        txn_action = eng.delta.actions.SetTransaction(query_id, epoch, eng.some(int(time.time() * 1000)))
        om = eng.jvm.org.apache.spark.sql.streaming.OutputMode.Append()
        op = eng.cls("DeltaOperations$StreamingUpdate")(om, query_id, epoch, eng.none())
        result = _commit(eng, txn, [*adds, txn_action], op)
        if not isinstance(result, tuple):
            raise RuntimeError(f"the second instance was expected to abort; it committed v{result}")
        exc, text = result
        orphans = _orphans(out / "table")
        arrive()
        run_query()  # the query goes on: epoch 4
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _tidy(out / "table")
    return Incident(
        "e-streaming-shared-checkpoint",
        f"two instances of streaming query {query_id} (one checkpoint) both ran epoch {epoch} on v{read}; one committed "
        f"v{winner} with its txn, the other aborted with {exc} (orphan data file left)",
        produced_by(spark, "the query's epochs as a real Delta streaming write (one checkpoint); the second instance's "
                           "epoch through delta-spark's transaction API over py4j, as DeltaSink.addBatch commits it, "
                           "written while the first instance's epoch waited in a Python UDF, committed after it"),
        _write_error(out, text),
        orphans,
    )
