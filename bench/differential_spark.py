"""Differential testing of delta-forensics against live delta-spark (Delta's own JVM engine).

Each race builds a real Delta table through Spark SQL, starts the loser's transaction at read
version R through delta-spark's own API over py4j (`DeltaLog.forTable(spark, path)
.startTransaction()`, reads registered with `filterFiles(...)` the way delta-spark's
OptimisticTransactionSuite does), commits one to three winners through SQL (INSERT, DELETE,
UPDATE, MERGE, OPTIMIZE, ZORDER BY, REPLACE WHERE, SET TBLPROPERTIES, ADD COLUMNS, streaming-style
writes with txnAppId/txnVersion, ADD CONSTRAINT and change data feed, which raise the protocol), then
writes the loser's files (`txn.writeFiles`, as a job writes at its end) and commits it
(`txn.commit(actions, operation)`):
delta-spark runs its own conflict checker and either commits at V or throws. The real outcome,
exception class and text are compared with the tool, through `check_loser` of
bench/differential.py (the delta-rs runner; one comparison for both engines):

1. `Table(path).whatif(read_version=R, operation=..., predicate=..., until=U)`: commit vs abort,
   the exception, the winning version (delta-spark names it: `Conflicting commit: {"version":N`).
2. For an abort, `Table(path).explain_error(text)`, with and without what the failed job knows.
3. For a committed loser at V: `Table(path).explain(V)` and `replay()` must not call it an anomaly.
4. For an abort: the exception object itself (`delta.exceptions.captured.*`, as py4j hands it over) to
   `explain_error`, and the loser's files (written with `writeFiles` before the commit, left behind
   as orphans like a failed job's) in `Table(path).evidence()`: is the engine's winner the first
   candidate, among them (check 4 of bench/differential.py; the run's summary has the blame figures).

Each starting table is built once through SQL and copied for every race that starts from it
(`Templates`; `--rebuild` builds every race's own). Statement races from two threads are in
bench/differential_spark_threads.py.

Loser kinds (each one delta-spark's own read and write pattern for that operation): a blind INSERT,
an INSERT that read the table first (`readWholeTable`), DELETE and UPDATE (files from `filterFiles(pred)`
removed, survivors rewritten with `writeFiles`), a REPLACE WHERE overwrite, a streaming batch
(`txnVersion(appId)` read, `SetTransaction` written). Deterministic by (seed, index); no threads: the
transaction object started before the winners is what makes the race.

    python bench/differential_spark.py --scenarios N --seed S [--out results.jsonl] [--start I] [--chunk 100]
    python bench/differential_spark.py --seed S --index I          # one race, printed in full, its table kept
    python bench/differential_spark.py ... --generator 1            # the first run's winner kinds
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.differential import (  # noqa: E402 - one comparison for both engines
    Summary, _err, _err_class, _short_explain, check_blame, check_loser, data_files)

PARTS = ("a", "b", "c")
LOSER_KINDS = ("insert", "insert_read", "delete", "update", "replace_where", "stream")
WINNER_KINDS_1 = ("insert", "delete", "update", "merge", "optimize", "zorder", "replace_where", "set_props",
                  "add_columns", "stream")  # the first generator (seed 20261125 run of FIDELITY.md)
WINNER_KINDS = WINNER_KINDS_1 + ("add_constraint", "enable_cdf")  # + winners that raise the protocol
WHATIF_OP = {"insert": "INSERT", "insert_read": "INSERT", "delete": "DELETE", "update": "UPDATE",
             "replace_where": "OVERWRITE", "stream": "STREAMING UPDATE"}


# =============================================================================================
# Specs: pure data from (seed, index)
# =============================================================================================


def _pred(rng: random.Random, partitioned: bool) -> str:
    k = rng.choice([5, 15, 25, 35, 45])
    if not partitioned:
        return rng.choice([f"id > {k}", f"id < {k}", f"id = {k + 1}", f"v > {3 * k}"])
    p = rng.choice(PARTS)
    q = rng.choice([x for x in PARTS if x != p])
    return rng.choice([f"p = '{p}'", f"p = '{p}'", f"p = '{p}' AND id > {k}", f"id > {k}",
                       f"p IN ('{p}', '{q}')"])


def gen_op(rng: random.Random, partitioned: bool, kind: str, seq: int) -> dict:
    op: dict[str, Any] = {"kind": kind, "seq": seq}
    part = rng.choice(PARTS) if partitioned else None
    if kind in ("insert", "insert_read"):
        op.update(part=part, ids=sorted(rng.sample(range(100 + 10 * seq, 110 + 10 * seq), 2)))
        if kind == "insert_read":
            op["read"] = _pred(rng, partitioned) if rng.random() < 0.5 else None  # None: whole table
    elif kind in ("delete", "update"):
        op["predicate"] = _pred(rng, partitioned)
    elif kind == "replace_where":
        if partitioned:
            op.update(part=part, predicate=f"p = '{part}'")
        else:
            k = rng.choice([15, 25, 35])
            op.update(predicate=f"id > {k}", part=None)
        op["ids"] = [200 + 10 * seq, 201 + 10 * seq]
        if not partitioned:
            op["ids"] = [i + 100 for i in op["ids"]]
    elif kind == "merge":
        op.update(ids=sorted(rng.sample(range(0, 50), 2)) + [300 + seq], part=part or rng.choice(PARTS),
                  literal=partitioned and rng.random() < 0.5)
    elif kind == "optimize":
        op["where"] = f"p = '{rng.choice(PARTS)}'" if partitioned and rng.random() < 0.5 else None
    elif kind == "zorder":
        op["where"] = None
    elif kind == "set_props":
        op["value"] = f"interval {rng.randint(8, 60)} days"
    elif kind == "add_columns":
        op["column"] = f"w{seq}"
    elif kind == "stream":
        op.update(app=rng.choice(["app-1", "app-2"]), part=part, ids=[400 + 10 * seq])
    return op


def gen_spec(seed: int, index: int, winner_kinds: tuple[str, ...] = WINNER_KINDS) -> dict:
    rng = random.Random(f"delta-forensics-differential-spark:{seed}:{index}")
    partitioned = rng.random() < 0.6
    batches = rng.choice([2, 3, 3, 4])
    loser = gen_op(rng, partitioned, rng.choice(LOSER_KINDS), 0)
    n = rng.choice([1, 1, 2, 2, 3])
    winners = [gen_op(rng, partitioned, rng.choice(winner_kinds), i + 1) for i in range(n)]
    return {"seed": seed, "index": index, "partitioned": partitioned, "batches": batches,
            "stream_setup": rng.random() < 0.3, "loser": loser, "winners": winners}


SPEED = {"spark.sql.shuffle.partitions": "1", "spark.databricks.delta.snapshotPartitions": "1",
         "spark.sql.adaptive.enabled": "false", "spark.databricks.delta.checkpointInterval": "1000",
         # tiny tables: compiling generated code costs more than interpreting a few rows
         "spark.sql.codegen.wholeStage": "false",
         # MERGE's source is a local view that cannot change under it: no materialisation job
         "spark.databricks.delta.merge.materializeSource": "none"}

# =============================================================================================
# The engine: Spark SQL for setup and winners, delta-spark's transaction API for the loser
# =============================================================================================


class Engine:
    """The Spark session with Delta's JVM side, and small py4j helpers (one session per process)."""

    def __init__(self, spark: Any):
        self.spark = spark
        self.jvm = spark._jvm  # noqa: SLF001
        self.delta = self.jvm.org.apache.spark.sql.delta
        for k, v in SPEED.items():  # tiny tables: one partition for every shuffle, Delta's state included
            spark.conf.set(k, v)

    def seq(self, items: list) -> Any:
        lst = self.jvm.java.util.ArrayList()
        for x in items:
            lst.add(x)
        return self.jvm.org.apache.spark.api.python.PythonUtils.toSeq(lst)

    def to_list(self, seq: Any) -> list:
        """A Scala collection's elements (Scala 2.12 and 2.13 alike: delta-spark 3.x runs on 2.12)."""
        it, out = seq.iterator(), []
        while it.hasNext():
            out.append(it.next())
        return out

    def some(self, x: Any) -> Any:
        return self.jvm.scala.Option.apply(x)

    def none(self) -> Any:
        return self.jvm.scala.Option.empty()

    def expr(self, text: str, path: str) -> Any:
        """`text` resolved against the table, as delta-spark's commands hand it to `filterFiles`
        (and record it: `(p#12 = a)`)."""
        df = self.spark.read.format("delta").load(path).where(text)
        return df._jdf.queryExecution().analyzed().condition()  # noqa: SLF001

    def filters(self, text: str, path: str, partition_columns: list[str]) -> Any:
        """`text` as delta-spark's DELETE/UPDATE hand it to `filterFiles`: split into its partition and
        data conjuncts (`DeltaTableUtils.splitMetadataAndDataPredicates`), so the partition conjuncts
        become the transaction's read predicates. One unsplit conjunction would read the whole table."""
        both = self.delta.DeltaTableUtils.splitMetadataAndDataPredicates(
            self.expr(text, path), self.seq(partition_columns), self.spark._jsparkSession)  # noqa: SLF001
        return self.seq(self.to_list(both._1()) + self.to_list(both._2()))

    def cls(self, name: str) -> Any:
        return getattr(self.delta, name)

    def op(self, name: str, *args: Any) -> Any:
        """A `DeltaOperations` case class from its leading arguments, the rest (Options with
        defaults, more of them in each release) left empty: one call for every release."""
        k = self.jvm.py4j.reflection.ReflectionUtil.classForName(f"org.apache.spark.sql.delta.{name}")
        n = min(a for a in (c.getParameterCount() for c in k.getConstructors()) if a >= len(args))
        return self.cls(name)(*args, *[self.none() for _ in range(n - len(args))])

    def sql(self, text: str) -> None:
        self.spark.sql(text).collect()

    def rows(self, ids: list[int], parts: list[str | None], partitioned: bool):
        data = [(i, i * 3, p or "a") for i, p in zip(ids, parts)]
        df = self.spark.createDataFrame(data, "id INT, v INT, p STRING")
        return df if partitioned else df.drop("p")


def setup_table(eng: Engine, path: str, spec: dict) -> int:
    part = spec["partitioned"]
    cols = "id INT, v INT" + (", p STRING" if part else "")
    props = " TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')" if spec.get("dv") else ""
    eng.sql(f"CREATE TABLE delta.`{path}` ({cols}) USING delta" + (" PARTITIONED BY (p)" if part else "") + props)
    for b in range(spec["batches"]):
        ids = list(range(b * 10, b * 10 + 10, 3))
        parts = [PARTS[(b + j) % 3] for j in range(len(ids))]
        eng.rows(ids, parts, part).repartition(2 if part else 1).write.format("delta").mode("append").save(path)
    if spec.get("stream_setup"):
        _stream_write(eng, path, {"app": "app-1", "ids": [500], "part": "a"}, part, version=0)
    return _latest(path)


class Templates:
    """Each starting table (partitioned or not, its batches, a streaming write or not) built once through
    SQL and copied for every race that starts from it: the copy is the same log and files a fresh build
    would write (other ids and times), without the five to eight Spark jobs per race."""

    def __init__(self, eng: Engine, root: Path | None = None):
        self.eng = eng
        self.root = root or Path(tempfile.mkdtemp(prefix="dspark-templates-"))
        self.built: dict[tuple, tuple[Path, int]] = {}

    def key(self, spec: dict) -> tuple:
        return (spec["partitioned"], spec["batches"], bool(spec.get("stream_setup")), bool(spec.get("dv")))

    def copy(self, spec: dict, path: str) -> int:
        k = self.key(spec)
        if k not in self.built:
            src = self.root / "-".join(str(x) for x in k)
            self.built[k] = (src, setup_table(self.eng, str(src), spec))
        src, R = self.built[k]
        shutil.copytree(src, path)  # file times kept: the log's commit times are the template's
        return R

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _latest(path: str) -> int:
    return max(int(p.stem) for p in Path(path, "_delta_log").glob("*.json"))


def _stream_write(eng: Engine, path: str, op: dict, partitioned: bool, version: int) -> None:
    df = eng.rows(op["ids"], [op.get("part")] * len(op["ids"]), partitioned)
    (df.write.format("delta").mode("append").option("txnAppId", op["app"]).option("txnVersion", str(version))
     .save(path))


def run_winner(eng: Engine, path: str, op: dict, partitioned: bool) -> None:
    k, t = op["kind"], f"delta.`{path}`"
    if k == "insert":
        eng.rows(op["ids"], [op["part"]] * len(op["ids"]), partitioned).write.format("delta").mode("append").save(path)
    elif k == "delete":
        eng.sql(f"DELETE FROM {t} WHERE {op['predicate']}")
    elif k == "update":
        eng.sql(f"UPDATE {t} SET v = v + 1 WHERE {op['predicate']}")
    elif k == "merge":
        src = eng.rows(op["ids"], [op["part"]] * len(op["ids"]), partitioned)
        src.createOrReplaceTempView("merge_src")
        on = "t.id = s.id" + (f" AND t.p = '{op['part']}'" if op.get("literal") else "")
        eng.sql(f"MERGE INTO {t} t USING merge_src s ON {on} WHEN MATCHED THEN UPDATE SET v = s.v + 1 "
                "WHEN NOT MATCHED THEN INSERT *")
    elif k == "optimize":
        eng.sql(f"OPTIMIZE {t}" + (f" WHERE {op['where']}" if op.get("where") else ""))
    elif k == "zorder":
        eng.sql(f"OPTIMIZE {t} ZORDER BY (id)")
    elif k == "replace_where":
        df = eng.rows(op["ids"], [op.get("part")] * len(op["ids"]), partitioned)
        df.write.format("delta").mode("overwrite").option("replaceWhere", op["predicate"]).save(path)
    elif k == "set_props":
        eng.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.logRetentionDuration' = '{op['value']}')")
    elif k == "add_columns":
        eng.sql(f"ALTER TABLE {t} ADD COLUMNS ({op['column']} INT)")
    elif k == "stream":
        _stream_write(eng, path, op, partitioned, version=100 + op["seq"])
    elif k == "add_constraint":  # writer version 3 (CHECK constraints), and a metadata change
        eng.sql(f"ALTER TABLE {t} ADD CONSTRAINT c{op['seq']} CHECK (id >= 0)")
    elif k == "enable_cdf":  # writer version 4 (change data feed), and a metadata change
        eng.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")


def start_loser(eng: Engine, path: str, op: dict, partitioned: bool, R: int) -> dict:
    """Start the loser's transaction at R and do its reads; its writes (`writeFiles`) wait for
    `write_loser`, after the winners, as a job writes its files at its end, just before it commits."""
    from pyspark.sql import functions as F

    log = eng.delta.DeltaLog.forTable(eng.spark._jsparkSession, path)  # noqa: SLF001
    txn = log.startTransaction()
    assert txn.readVersion() == R, (txn.readVersion(), R)
    k = op["kind"]
    parts = ["p"] if partitioned else []
    actions: list = []
    jop = None
    mode = eng.jvm.org.apache.spark.sql.SaveMode

    pending: list = []

    def write(df) -> list:
        pending.append(df)
        return []

    def removed_by(pred: str) -> tuple[list, list[str]]:
        files = eng.to_list(txn.filterFiles(eng.filters(pred, path, parts), False))
        now = int(time.time() * 1000)
        return [f.removeWithTimestamp(now, True) for f in files], [str(f.path()) for f in files]

    def survivors(paths: list[str], keep: str, update: str | None = None):
        df = eng.spark.read.format("delta").option("versionAsOf", R).load(path).withColumn("_f", F.input_file_name())
        names = [p.rsplit("/", 1)[-1] for p in paths]
        df = df.where(F.element_at(F.split("_f", "/"), -1).isin(names)).drop("_f")
        if update is not None:
            return df.withColumn("v", F.expr(f"CASE WHEN {update} THEN v + 1 ELSE v END"))
        return df.where(keep)

    if k in ("insert", "insert_read"):
        if k == "insert_read":
            if op.get("read"):
                txn.filterFiles(eng.filters(op["read"], path, parts), False)
            else:
                txn.readWholeTable()
        actions = write(eng.rows(op["ids"], [op["part"]] * len(op["ids"]), partitioned))
        jop = eng.op("DeltaOperations$Write", mode.Append, eng.some(eng.seq([])))
    elif k in ("delete", "update"):
        removes, paths = removed_by(op["predicate"])
        pred = op["predicate"]
        rewrite = survivors(paths, f"NOT ({pred})", pred if k == "update" else None) if paths else None
        adds = write(rewrite) if rewrite is not None and (k == "update" or not _partition_only(pred)) else []
        actions = removes + adds
        jop = (eng.op("DeltaOperations$Delete", eng.seq([eng.expr(pred, path)])) if k == "delete"
               else eng.op("DeltaOperations$Update", eng.some(eng.expr(pred, path))))
    elif k == "replace_where":
        removes, _ = removed_by(op["predicate"])
        actions = removes + write(eng.rows(op["ids"], [op.get("part")] * len(op["ids"]), partitioned))
        jop = eng.op("DeltaOperations$Write", mode.Overwrite, eng.some(eng.seq([])), eng.some(op["predicate"]))
    elif k == "stream":
        last = txn.txnVersion(op["app"])
        actions = write(eng.rows(op["ids"], [op.get("part")] * len(op["ids"]), partitioned))
        actions.append(eng.delta.actions.SetTransaction(op["app"], int(last) + 1, eng.some(int(time.time() * 1000))))
        om = eng.jvm.org.apache.spark.sql.streaming.OutputMode.Append()
        jop = eng.op("DeltaOperations$StreamingUpdate", om, "query-" + op["app"], int(last) + 1)
    return {"txn": txn, "actions": actions, "op": jop, "pending": pending}


def write_loser(eng: Engine, started: dict) -> None:
    """The loser's data files, written by its own transaction (`writeFiles`), not committed yet."""
    for df in started.pop("pending"):
        started["actions"] = eng.to_list(started["txn"].writeFiles(df._jdf)) + started["actions"]


def _partition_only(pred: str) -> bool:
    return "id" not in pred and "v " not in pred and "v>" not in pred


def commit_loser(eng: Engine, started: dict) -> dict:
    # The operation metrics of a DELETE/UPDATE are the SQL metrics its command registers; a bare
    # transaction has none (`key not found: numDeletedRows`), so the loser's commit records none.
    eng.spark.conf.set("spark.databricks.delta.history.metricsEnabled", "false")
    try:
        v = started["txn"].commit(eng.seq(started["actions"]), started["op"])
        return {"outcome": "commit", "version": int(v)}
    except Exception as e:  # noqa: BLE001 - the engine's exception, as py4j or delta-spark's Python side hands it over
        return read_exception(e)
    finally:
        eng.spark.conf.set("spark.databricks.delta.history.metricsEnabled", "true")


def read_exception(e: BaseException) -> dict:
    """What delta-spark threw: its class and message (the Java exception, or the Python class that
    keeps the Java name), "abort" for a concurrency conflict; the object itself under `_exception`."""
    java = getattr(e, "java_exception", None)
    if java is None:
        java = getattr(e, "_origin", None)
    if java is not None:
        name, message = str(java.getClass().getSimpleName()), str(java.getMessage())
    elif type(e).__module__.startswith(("delta.", "pyspark.")):  # converted: the class keeps the Java name
        name, message = type(e).__name__, str(getattr(e, "_desc", None) or e)
    else:
        return {"outcome": "error", "message": f"{type(e).__name__}: {e}"[:2000]}
    conc = "Concurrent" in name or name in ("MetadataChangedException", "ProtocolChangedException")
    return {"outcome": "abort" if conc else "error", "exception": name, "message": message, "_exception": e}


WINNER_RE = re.compile(r'committed at version (\d+)|Conflicting commit:\s*\{.*?"version"\s*:\s*(\d+)', re.S)
TXN_RE = re.compile(r'Conflicting commit:.*?"txnId"\s*:\s*"([0-9a-f-]{36})"', re.S)


def named_winner(message: str, path: str) -> int | None:
    """The winning version delta-spark names: `committed at version N`, or the conflicting commit's
    txnId (a UUID) found in the log."""
    m = WINNER_RE.search(message or "")
    if m:
        return int(m.group(1) or m.group(2))
    t = TXN_RE.search(message or "")
    if t:
        for f in sorted(Path(path, "_delta_log").glob("*.json")):
            if t.group(1) in f.read_text(encoding="utf-8"):
                return int(f.stem)
    return None


def whatif_request(op: dict, partitioned: bool) -> dict:
    req: dict[str, Any] = {"operation": WHATIF_OP[op["kind"]]}
    if op["kind"] in ("insert", "insert_read", "replace_where", "stream") and partitioned:
        req["partitions"] = [{"p": op["part"]}]
    if op["kind"] in ("delete", "update", "replace_where"):
        req["predicate"] = op["predicate"]
    if op["kind"] == "stream":
        req["app_id"] = op["app"]
    return req


def comparable(op: dict) -> bool:
    """whatif can state every loser but an INSERT that read the table (a user cannot say what it read)."""
    return op["kind"] != "insert_read"


# =============================================================================================
# One race
# =============================================================================================


def run_race(eng: Engine, spec: dict, workdir: Path, templates: Templates | None = None) -> dict:
    path = str(workdir / "table")
    part = spec["partitioned"]
    out: dict[str, Any] = {"spec": spec}
    clock = [time.time()]
    R = templates.copy(spec, path) if templates else setup_table(eng, path, spec)
    started = start_loser(eng, path, spec["loser"], part, R)
    for w in spec["winners"]:
        try:
            run_winner(eng, path, w, part)
        except Exception as e:  # noqa: BLE001 - a winner the engine refused is recorded, not raced
            w["failed"] = str(e).splitlines()[0][:200]
    until = _latest(path)
    before = data_files(path)
    write_loser(eng, started)
    written = sorted(data_files(path) - before)  # the loser's own files: orphans if it aborts
    real = commit_loser(eng, started)
    clock.append(time.time())
    L: dict[str, Any] = {"real": real, "read_version": R, "until": until, "files_written": written,
                         "whatif_request": whatif_request(spec["loser"], part),
                         "real_winner": named_winner(real.get("message", ""), path) if real["outcome"] == "abort" else None}
    compare(L, path, comparable(spec["loser"]))
    out["real"] = real
    out["loser"] = {k: v for k, v in L.items() if k != "real"}
    clock.append(time.time())
    out["seconds"] = {"engine": round(clock[1] - clock[0], 2), "tool": round(clock[2] - clock[1], 2)}
    out["agree"] = L["agree"]
    return out


def compare(L: dict, path: str, whatif_comparable: bool = True) -> None:
    """Every answer of the tool on this race against what delta-spark did: whatif, explain-error (the
    text alone, with the job's facts, the exception object), explain V and replay of a committed loser,
    and the aborted loser's orphan files in `evidence` (check 4 of bench/differential.py)."""
    from forensics import Table

    real = L["real"]
    exc = real.pop("_exception", None)  # the live object: not recorded, handed to explain_error below
    if L["until"] == L["read_version"]:
        L["note"] = "no winner committed"
    t = Table(path)
    rows = {r["version"]: r for r in t.replay().to_dicts()}
    same = {real["message"]: {L["real_winner"]}} if real["outcome"] == "abort" and L["real_winner"] is not None else {}
    check_loser(L, t, t, rows, same)
    if not whatif_comparable:  # whatif cannot state what the loser read: drop whatif's reasons
        L["reasons"] = [r for r in L["reasons"] if r["check"] != "whatif"]
    if real["outcome"] == "abort":
        check_blame([L], t)
        b = L.get("blame") or {}
        if b.get("found"):
            # One loser per race: every orphan file is its own. How many attempts `evidence` made of
            # them is recorded; the blame figures count the race (check_blame skips shared files,
            # which with several losers would be another loser's).
            mine = set(L["files_written"])
            over = [a for a in t.evidence().attempts if mine & {f.path for f in a.files}]
            b["attempts_over_files"] = len(over)
            b["attempt_files"] = len(over[0].files)
            if b["shared_files"] and L.get("real_winner") is not None and not b["among"]:
                L["reasons"].append({"check": "blame", "class": "blame: the candidates miss the winner",
                                     "detail": f"engine v{L['real_winner']} {real['exception']}; tool {b['candidates'][:6]}"})
            b["shared_files"] = False
        if exc is not None:
            check_exception_object(L, t, exc)
    if real["outcome"] == "commit":
        ex = t.explain(real["version"]).to_dict()
        verdict = (ex.get("verdict") or {}).get("verdict")
        L["explain"] = {"verdict": verdict, "exception": ex.get("exception")}
        if verdict == "anomaly":
            L["reasons"].append({"check": "explain", "class": f"explain calls a real commit an anomaly ({ex.get('exception')})",
                                 "detail": (ex.get("message") or "")[:300]})
    stray = [v for v, r in rows.items() if r.get("verdict") == "anomaly" and v != real.get("version")]
    if stray:
        L["reasons"].append({"check": "replay", "class": "replay calls a winner an anomaly", "detail": str(stray)})
    if real["outcome"] != "error":
        L["agree"] = not L["reasons"]


def check_exception_object(L: dict, t: Any, exc: BaseException) -> None:
    """The exception object the job caught (py4j's Py4JJavaError for a transaction driven over py4j,
    delta.exceptions.* for SQL), handed to explain_error as it is: same exception and winner as the text."""
    real = L["real"]
    try:
        e = t.explain_error(exc).to_dict()
    except Exception as ex:  # noqa: BLE001
        L["explain_error_object"] = {"error": _err(ex), "type": f"{type(exc).__module__}.{type(exc).__name__}"}
        L["reasons"].append({"check": "explain_error(object)", "class": _err_class("explain_error(object)", ex), "detail": _err(ex)})
        return
    L["explain_error_object"] = {**_short_explain(e), "type": f"{type(exc).__module__}.{type(exc).__name__}"}
    if e.get("exception") != real["exception"]:
        L["reasons"].append({"check": "explain_error(object)", "class": f"explain_error(object) {e.get('exception')} / engine {real['exception']}",
                             "detail": f"{type(exc).__name__} read as {e.get('exception')}"})
    elif L.get("real_winner") is not None and e.get("winningVersion") != L["real_winner"]:
        wm = e.get("winnerMatch") or {}
        if not (wm.get("ambiguous") and L["real_winner"] in (wm.get("candidates") or [])):
            L["reasons"].append({"check": "explain_error(object)", "class": "explain_error(object) names another winner",
                                 "detail": f"engine v{L['real_winner']}; tool v{e.get('winningVersion')}"})


def _reset_delta_log_cache(eng: Engine) -> None:
    try:
        eng.delta.DeltaLog.clearCache()
    except Exception:  # noqa: BLE001
        pass


def delta_engine() -> "Engine | None":
    """The tool's own session with delta-spark's JVM classes, driven as the races need; None (said on
    stderr) when the jars are not on the classpath."""
    from forensics.runtime.delta_jvm import loaded
    from forensics.runtime.spark import get_spark

    spark = get_spark()
    if not loaded(spark):
        print("delta-spark's JVM classes are not on the classpath (see forensics/runtime/delta_jvm.py)", file=sys.stderr)
        return None
    return Engine(spark)


def run_races(eng: Any, args: Any, indexes: list[int], make_spec: Any, run_one: Any, templates: Any, prefix: str) -> list[dict]:
    """Each race in its own directory, one JSON line each in `args.out` as it ends; a harness
    failure is recorded and the run goes on; stops after `args.minutes`; `--index` keeps the
    directories and prints each record."""
    results = []
    t0 = time.time()
    with open(args.out, "a", encoding="utf-8") as fh:
        for i in indexes:
            if args.minutes and time.time() - t0 > args.minutes * 60:
                break
            spec = make_spec(i)
            work = Path(tempfile.mkdtemp(prefix=f"{prefix}-{i}-"))
            try:
                r = run_one(eng, spec, work, templates)
            except Exception as e:  # noqa: BLE001 - a harness failure is reported, the run goes on
                r = {"spec": spec, "harness_error": f"{type(e).__name__}: {str(e)[:500]}", "agree": None}
            finally:
                _reset_delta_log_cache(eng)
                # py4j frees a JVM object when its Python proxy is collected; proxies caught in
                # reference cycles wait for a full collection, and their plans filled the driver's heap
                gc.collect()
                if not args.index:
                    shutil.rmtree(work, ignore_errors=True)
            results.append(r)
            fh.write(json.dumps(r, default=str) + "\n")
            fh.flush()
            if args.index:
                print(json.dumps(r, indent=1, default=str)[:8000])
    return results


def in_chunks(script: str, argv: list[str], args: Any, count_flag: str, total: int) -> list[dict]:
    """A run of more than `--chunk` races, in child processes of `--chunk` races each, one after the
    other, each with a fresh JVM: one driver running hundreds of races filled its heap (the plans of
    DataFrames whose Python proxies sat in reference cycles, now collected after each race; on
    Spark 3.5 full collections had taken a race from 5 s to 88 s by race 150), and a fresh JVM
    bounds whatever else a long run accumulates. Returns the records the children appended to `--out`."""
    import subprocess

    drop = {"--chunk", "--start", count_flag, "--minutes"}
    base, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a.split("=", 1)[0] in drop:
            skip = "=" not in a
            continue
        base.append(a)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    before = out.stat().st_size if out.exists() else 0
    t0 = time.time()
    for start in range(args.start, args.start + total, args.chunk):
        left = None if args.minutes is None else args.minutes - (time.time() - t0) / 60
        if left is not None and left <= 0:
            break
        n = min(args.chunk, args.start + total - start)
        cmd = [sys.executable, script, *base, "--start", str(start), count_flag, str(n), "--chunk", "0"]
        if left is not None:
            cmd += ["--minutes", f"{max(left, 0.01):.2f}"]
        if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode == 2:
            break  # no Delta engine here
    if not out.exists():
        return []
    with open(out, "rb") as fh:
        fh.seek(before)
        return [json.loads(line) for line in fh.read().decode("utf-8").splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=20261125)
    ap.add_argument("--scenarios", type=int, default=10)
    ap.add_argument("--chunk", type=int, default=100, help="races per JVM (child processes); 0: all in this one")
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--index", type=int, action="append")
    ap.add_argument("--out", default=str(HERE / "out" / "differential_spark.jsonl"))
    ap.add_argument("--minutes", type=float, default=None, help="stop starting races after this long")
    ap.add_argument("--generator", type=int, choices=(1, 2), default=2, help="1: the first run's winner kinds")
    ap.add_argument("--rebuild", action="store_true", help="build every race's table through SQL (no templates)")
    args = ap.parse_args(argv)
    if args.chunk and not args.index and args.scenarios > args.chunk:
        import pyspark

        t0 = time.time()
        results = in_chunks(__file__, sys.argv[1:] if argv is None else argv, args, "--scenarios", args.scenarios)
        return report(results, pyspark.__version__, t0, args.out) if results else 2
    eng = delta_engine()
    if eng is None:
        return 2
    spark = eng.spark
    indexes = args.index or list(range(args.start, args.start + args.scenarios))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    templates = None if args.rebuild else Templates(eng)
    t0 = time.time()
    kinds = WINNER_KINDS_1 if args.generator == 1 else WINNER_KINDS
    results = run_races(eng, args, indexes, lambda i: gen_spec(args.seed, i, kinds), run_race, templates, "dspark")
    if templates:
        templates.close()
    return report(results, spark.version, t0, args.out)


def report(results: list[dict], spark_version: str, t0: float, out: str, **extra: Any) -> int:
    """The run's summary, printed and written beside `out`; 1 when any race disagreed."""
    summary = summarise(results, spark_version)
    summary["minutes"] = round((time.time() - t0) / 60, 1)
    summary["races_per_minute"] = round(len(results) / max(summary["minutes"], 0.01), 1)
    summary.update({k: f(results) for k, f in extra.items()})
    print(json.dumps(summary, indent=1))
    Path(out + ".summary.json").write_text(json.dumps(summary, indent=1))
    return 0 if not summary["disagree"] else 1


def summarise(results: list[dict], spark_version: str) -> dict:
    import importlib.metadata as md

    outcomes, classes, kinds = Counter(), Counter(), Counter()
    examples: dict[str, list] = {}
    blame = Summary()  # bench/differential.py's blame figures: one definition for both engines
    checks: Counter = Counter()  # answers compared, by check
    for r in results:
        L = r.get("loser")
        if L and "real" in r:
            blame._blame({**L, "real": r["real"]})  # noqa: SLF001
            for key in ("whatif", "explain_error", "explain_error_facts", "explain_error_sql", "explain_error_object", "explain"):
                checks[key] += key in L and not (key == "whatif" and r["real"].get("outcome") == "noop")
            checks["replay (committed loser)"] += bool(L.get("replay"))
            checks["evidence (orphan files)"] += bool((L.get("blame") or {}).get("found"))
        real = r.get("real") or {}
        label = real.get("exception") if real.get("outcome") == "abort" else real.get("outcome", "harness error")
        outcomes[label] += 1
        kinds[f"{r['spec']['loser']['kind']} -> {label}"] += 1
        for reason in (r.get("loser") or {}).get("reasons", []):
            classes[reason["class"]] += 1
            examples.setdefault(reason["class"], []).append(r["spec"]["index"])
    return {
        "races": len(results), "agree": sum(1 for r in results if r.get("agree") is True),
        "disagree": sum(1 for r in results if r.get("agree") is False),
        "not_compared": sum(1 for r in results if r.get("agree") is None),
        "outcomes": dict(outcomes), "loser_kinds": dict(kinds),
        "classes": {c: {"count": n, "examples": examples[c][:5]} for c, n in classes.most_common()},
        "checks": dict(checks), "blame": blame.blame_figures(),
        "engine": {"delta-spark": md.version("delta-spark"), "pyspark": spark_version},
    }


if __name__ == "__main__":
    raise SystemExit(main())
