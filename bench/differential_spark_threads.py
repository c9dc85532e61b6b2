"""Whole-statement races against live delta-spark: two real SQL statements on one SparkSession, from
two Python threads, compared with delta-forensics.

The loser (DELETE, UPDATE or MERGE) carries a Python UDF `gate(id)` that is always true: its first
call, made while the loser's transaction is open (after delta-spark took its snapshot, while it scans
for the rows it touches), waits until the winner (DELETE, UPDATE, MERGE, OPTIMIZE or INSERT, from the
other thread) has committed. No sleeps to tune: the UDF marks a file when it is first called, the
harness runs the winner then, and opens the gate. The loser then writes its files and commits;
delta-spark's own conflict checker commits it or throws (delta.exceptions.*, captured from the JVM).
Tables partitioned or not, deletion vectors on or off.

Compared (bench/differential_spark.py `compare`, bench/differential.py `check_loser`/`check_blame`):
whatif (the statement as its author states it: operation, condition without the always-true UDF,
partitions written), explain-error from the text alone, with the job's facts, with the statement
itself (`sql=`, UDF and all) and with the exception object; `explain V` and replay of a committed
loser; for an abort, the loser's orphan files in `evidence` (is the engine's winner first / among
the candidates).

    python bench/differential_spark_threads.py --races N --seed S [--out results.jsonl] [--start I]
    python bench/differential_spark_threads.py --seed S --index I   # one race, printed, its table kept
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.differential import data_files  # noqa: E402
from bench.differential_spark import (  # noqa: E402 - one engine driver, one comparison
    PARTS, Engine, Templates, _latest, compare, delta_engine, in_chunks, named_winner, read_exception, report, run_races,
    run_winner)

LOSERS = ("delete", "update", "merge")
WINNERS = ("delete", "update", "merge", "optimize", "insert")
GATE_WAIT_S = 180  # the gate opens by itself after this: a harness that lost the winner cannot hang


def gen_spec(seed: int, index: int) -> dict:
    rng = random.Random(f"delta-forensics-differential-spark-threads:{seed}:{index}")
    partitioned = rng.random() < 0.5
    dv = rng.random() < 0.5
    loser = _op(rng, partitioned, rng.choice(LOSERS), 0)
    winner = _op(rng, partitioned, rng.choice(WINNERS), 1)
    return {"seed": seed, "index": index, "partitioned": partitioned, "dv": dv, "batches": rng.choice([2, 3]),
            "stream_setup": False, "loser": loser, "winners": [winner], "threads": True}


def _op(rng: random.Random, partitioned: bool, kind: str, seq: int) -> dict:
    op: dict[str, Any] = {"kind": kind, "seq": seq}
    if kind in ("delete", "update"):
        op["predicate"] = _tpred(rng, partitioned)
    elif kind == "merge":  # partitioned: most MERGEs name their partition in the ON condition
        op.update(ids=sorted(rng.sample(range(0, 50), 2)) + [300 + seq], part=rng.choice(PARTS),
                  literal=partitioned and rng.random() < 0.7)
    elif kind == "optimize":
        op["where"] = f"p = '{rng.choice(PARTS)}'" if partitioned and rng.random() < 0.5 else None
    elif kind == "insert":
        op.update(part=rng.choice(PARTS) if partitioned else None, ids=[100 + 10 * seq, 101 + 10 * seq])
    return op


def _tpred(rng: random.Random, partitioned: bool) -> str:
    """A condition that matches rows of the two or three starting batches (ids 0-29) more often than
    not: a statement that matches nothing commits nothing and races nothing."""
    k = rng.choice([5, 15, 25])
    if not partitioned:
        return rng.choice([f"id > {k}", f"id < {k}", f"id = {rng.choice([3, 6, 13, 16])}", f"v > {3 * k}"])
    p = rng.choice(PARTS)
    q = rng.choice([x for x in PARTS if x != p])
    return rng.choice([f"p = '{p}'", f"p = '{p}' AND id > {k}", f"id > {k}", f"p IN ('{p}', '{q}')"])


# ---- the gate: a Python UDF that holds the loser's transaction open -------------------------------


def register_gate(eng: Engine, gate_dir: str) -> None:
    """`gate(x)`: true. Its first call anywhere (O_EXCL on `started`) waits for `open`; every other
    call passes, so one task slot stays free for the winner (local[2])."""
    from pyspark.sql.types import BooleanType

    def gate(_x: Any, d: str = gate_dir, wait: float = GATE_WAIT_S) -> bool:
        import os as _os
        import time as _time

        if _os.path.exists(d + "/open"):
            return True
        try:
            _os.close(_os.open(d + "/started", _os.O_CREAT | _os.O_EXCL | _os.O_WRONLY))
        except FileExistsError:
            return True
        t = _time.time()
        while not _os.path.exists(d + "/open") and _time.time() - t < wait:
            _time.sleep(0.02)
        return True

    eng.spark.udf.register("gate", gate, BooleanType())


def loser_statement(eng: Engine, path: str, op: dict, partitioned: bool) -> str:
    t, k = f"delta.`{path}`", op["kind"]
    if k == "delete":
        return f"DELETE FROM {t} WHERE ({op['predicate']}) AND gate(id)"
    if k == "update":
        return f"UPDATE {t} SET v = v + 1 WHERE ({op['predicate']}) AND gate(id)"
    src = eng.rows(op["ids"], [op["part"]] * len(op["ids"]), partitioned).where("gate(id)")
    src.createOrReplaceTempView("loser_src")  # the winner's MERGE uses `merge_src`
    on = "t.id = s.id" + (f" AND t.p = '{op['part']}'" if op.get("literal") else "")
    return (f"MERGE INTO {t} t USING loser_src s ON {on} WHEN MATCHED THEN UPDATE SET v = s.v + 1 "
            "WHEN NOT MATCHED THEN INSERT *")


def whatif_request(op: dict, partitioned: bool) -> dict:
    """The statement as its author would state it (the UDF is always true, so it is left out)."""
    k = op["kind"]
    if k in ("delete", "update"):
        return {"operation": k.upper(), "predicate": op["predicate"]}
    req: dict[str, Any] = {"operation": "MERGE", "predicate": f"p = '{op['part']}'" if op.get("literal") else None}
    if partitioned:
        req["partitions"] = [{"p": op["part"]}]
    return req


def table_files(path: str) -> set[str]:
    """Every data file and deletion-vector file under the table root (relative), the log left out."""
    root = Path(path)
    dvs = {p.relative_to(root).as_posix() for p in root.rglob("deletion_vector_*.bin") if "_delta_log" not in p.parts}
    return data_files(path) | dvs


def run_race(eng: Engine, spec: dict, workdir: Path, templates: Templates) -> dict:
    path = str(workdir / "table")
    part = spec["partitioned"]
    out: dict[str, Any] = {"spec": spec}
    clock = [time.time()]
    R = templates.copy(spec, path)
    gate_dir = str(workdir / "gate")
    os.makedirs(gate_dir)
    register_gate(eng, gate_dir)
    stmt = loser_statement(eng, path, spec["loser"], part)
    result: dict[str, Any] = {}

    def loser() -> None:
        try:
            eng.spark.sql(stmt).collect()
            result["done"] = True
        except Exception as e:  # noqa: BLE001 - the engine's exception is the outcome
            result["exc"] = e

    th = threading.Thread(target=loser, name="loser", daemon=True)
    th.start()
    t0 = time.time()
    while not os.path.exists(gate_dir + "/started") and th.is_alive() and time.time() - t0 < GATE_WAIT_S:
        time.sleep(0.02)
    gated = os.path.exists(gate_dir + "/started")
    w = spec["winners"][0]
    try:
        run_winner(eng, path, w, part)
    except Exception as e:  # noqa: BLE001 - a winner the engine refused is recorded
        w["failed"] = str(e).splitlines()[0][:200]
    until = _latest(path)
    before = table_files(path)  # the loser writes nothing until its gate opens
    Path(gate_dir, "open").touch()
    th.join(GATE_WAIT_S + 60)
    clock.append(time.time())
    latest = _latest(path)
    if "exc" in result:
        real = read_exception(result["exc"])
    elif latest > until:
        real = {"outcome": "commit", "version": latest}
    else:
        real = {"outcome": "noop"}  # delta-spark commits nothing when the statement changed nothing
    real["gated"] = gated  # False: the loser finished or failed before its UDF ran (not a race)
    written = sorted(table_files(path) - before)  # the loser's files: orphans when it aborted
    out["statement"] = stmt.replace(path, "<table>")
    L: dict[str, Any] = {"real": real, "read_version": R, "until": until, "files_written": written,
                         "whatif_request": whatif_request(spec["loser"], part),
                         "real_winner": named_winner(real.get("message", ""), path) if real["outcome"] == "abort" else None}
    if real["outcome"] == "commit":
        ci = _commit_info(path, real["version"])
        L["recorded_read_version"] = ci.get("readVersion")
        if ci.get("readVersion") != R:
            L["note"] = f"the loser read v{ci.get('readVersion')}, not v{R}: no race"
    compare(L, path)
    if real["outcome"] == "abort":
        check_sql_facts(L, path, stmt)
        if L["reasons"]:
            L["agree"] = False
    out["real"] = real
    out["loser"] = {k: v for k, v in L.items() if k != "real"}
    clock.append(time.time())
    out["seconds"] = {"engine": round(clock[1] - clock[0], 2), "tool": round(clock[2] - clock[1], 2)}
    out["agree"] = L.get("agree")
    return out


def _commit_info(path: str, version: int) -> dict:
    for line in Path(path, "_delta_log", f"{version:020d}.json").read_text(encoding="utf-8").splitlines():
        if '"commitInfo"' in line:
            return json.loads(line)["commitInfo"]
    return {}


def check_sql_facts(L: dict, path: str, stmt: str) -> None:
    """explain_error told the read version and the statement itself (parsed, never run; UDF and all)."""
    from bench.differential import _err, _err_class, _short_explain
    from forensics import Table

    real = L["real"]
    try:
        e = Table(path).explain_error(real["message"], read_version=L["read_version"], sql=stmt).to_dict()
    except Exception as ex:  # noqa: BLE001
        L["explain_error_sql"] = {"error": _err(ex)}
        L["reasons"].append({"check": "explain_error+sql", "class": _err_class("explain_error+sql", ex), "detail": _err(ex)})
        return
    L["explain_error_sql"] = _short_explain(e)
    wm = e.get("winnerMatch") or {}
    if e.get("exception") != real["exception"]:
        L["reasons"].append({"check": "explain_error+sql", "class": f"explain_error+sql {e.get('exception')} / engine {real['exception']}",
                             "detail": "text parsed as another exception"})
    elif L.get("real_winner") is not None and e.get("winningVersion") != L["real_winner"] and not (
            wm.get("ambiguous") and L["real_winner"] in (wm.get("candidates") or [])):
        L["reasons"].append({"check": "explain_error+sql", "class": "explain_error+sql names another winner",
                             "detail": f"engine v{L['real_winner']}; tool v{e.get('winningVersion')}"})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=20261127)
    ap.add_argument("--races", type=int, default=10)
    ap.add_argument("--chunk", type=int, default=100, help="races per JVM (child processes); 0: all in this one")
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--index", type=int, action="append")
    ap.add_argument("--out", default=str(HERE / "out" / "differential_spark_threads.jsonl"))
    ap.add_argument("--minutes", type=float, default=None, help="stop starting races after this long")
    args = ap.parse_args(argv)
    not_raced = lambda rs: sum(1 for r in rs if not (r.get("real") or {}).get("gated", True))  # noqa: E731
    if args.chunk and not args.index and args.races > args.chunk:
        import pyspark

        t0 = time.time()
        results = in_chunks(__file__, sys.argv[1:] if argv is None else argv, args, "--races", args.races)
        return report(results, pyspark.__version__, t0, args.out, not_raced=not_raced) if results else 2
    eng = delta_engine()
    if eng is None:
        return 2
    spark = eng.spark
    templates = Templates(eng)
    indexes = args.index or list(range(args.start, args.start + args.races))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    results = run_races(eng, args, indexes, lambda i: gen_spec(args.seed, i), run_race, templates, "dspark-threads")
    templates.close()
    return report(results, spark.version, t0, args.out, not_raced=not_raced)


if __name__ == "__main__":
    raise SystemExit(main())
