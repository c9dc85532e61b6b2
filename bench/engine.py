"""Benchmark the warm engine: a 20-version table's `history`, in-process vs through the engine,
side by side with deltalake's `DeltaTable(path).history()` in one run.

Every figure is a fresh client process (`python -m forensics history T`, wall clock, the
interpreter's start included), on copies of sample_logs/quickstart/table (20 versions, written
by delta-rs) so each "first look" is at a table the cache has never seen:
- in-process cold: --no-engine, empty cache (JVM start + Spark parse); in-process cached: again;
- engine cold: the first command with no engine running (it runs in-process and starts the
  engine as it ends); then the wait for the engine to start Spark and warm its JIT;
- engine warm, first look: a new copy of the table, the engine's Spark parses it (median of N);
- engine warm, repeat look: the same table again (cache hit in the engine; median of N);
- client-side: a warm answer's wall clock minus the engine's own time for it (`engine status`
  reports the last command's), i.e. what the client process costs: start, imports, argv
  parsing, the socket round trip, printing; and the client process's CPU time (user + system);
- deltalake: `DeltaTable(path).history()` in a fresh process, its import included (median of N);
- JVM start: a fresh process that starts the tool's Spark session and runs one job.
The client's imports are listed with `python -X importtime` (pyspark, polars, pyarrow must be absent).
Prints one JSON object; BENCHMARKS.md records the figures.

    python bench/engine.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "sample_logs" / "quickstart" / "table"
CLI = [sys.executable, "-m", "forensics"]
HEAVY = ("pyspark", "polars", "pyarrow", "py4j", "numpy", "pandas")


_LAST_CPU = [0.0]  # the last command's CPU time (user + system) in its own process


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
    seconds = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    _LAST_CPU[0] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"  {seconds:7.3f} s  {' '.join(c if len(c) < 60 else '…' + c[-40:] for c in cmd[2:])}", file=sys.stderr, flush=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr[-500:]}")
    return seconds, p


def engine_info(env: dict[str, str], cwd: Path) -> dict:
    """The running engine's own figures, from the engine (not its CLI rendering)."""
    code = ("import json; from forensics.engine import client, control; "
            "print(json.dumps(client.status(control.current_place()[0]).info))")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    return json.loads(out.stdout or "null") or {}


def wait_for_warm_engine(env: dict[str, str], cwd: Path, limit_s: float = 600) -> dict:
    """Wait until the engine the last command started is up and has finished its JIT warm-up
    (forensics/engine/warmup.py): a warm engine is one that has been idle that long. Returns
    what the warm-up did and how long the wait was."""
    start = time.monotonic()
    jit: dict = {}
    while time.monotonic() - start < limit_s:
        jit = engine_info(env, cwd).get("jit") or {}
        if jit.get("state") in ("done", "interrupted", "failed", "off"):
            break
        time.sleep(2)
    return {**jit, "ready_after_seconds": round(time.monotonic() - start, 1)}


def after_answer_count(env: dict[str, str], cwd: Path) -> int:
    """How many tasks the engine has finished after their commands' answers (cache writes)."""
    return int(engine_info(env, cwd).get("afterAnswer") or 0)


def wait_for_settled_engine(env: dict[str, str], cwd: Path, before: int, limit_s: float = 120, read_s: float = 1.0) -> float:
    """Wait until the engine has finished the work the last command left until after its answer
    (its cache write: forensics/runtime/after_answer.py; `before`: the count before that command),
    then `read_s` more (the collection it runs after that), as when a user has read the answer;
    the seconds waited."""
    start = time.monotonic()
    while time.monotonic() - start < limit_s and after_answer_count(env, cwd) <= before:
        time.sleep(0.1)
    time.sleep(read_s)
    return round(time.monotonic() - start, 2)


def copy_table(work: Path, name: str) -> Path:
    dst = work / name
    shutil.copytree(TABLE, dst)
    return dst


def client_imports(env: dict[str, str], table: Path, cwd: Path) -> dict:
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "forensics", "history", str(table)], env=env, cwd=cwd,
                       capture_output=True, text=True, timeout=120)
    rows = []
    for line in p.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            parts = [x.strip() for x in line[len("import time:"):].split("|")]
            if parts[0].isdigit():
                rows.append((int(parts[1]), parts[2]))
    names = {n.strip() for _, n in rows}
    top = sorted(((us, n.strip()) for us, n in rows if not n.startswith(" ")), reverse=True)[:8]
    return {"heavy_imported": sorted(h for h in HEAVY if h in names),
            "top_level_imports_ms": [[n, round(us / 1000, 1)] for us, n in top]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-engine-"))
    cache = work / "cache"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DELTA_FORENSICS_ENGINE")}
    env.update(DELTA_FORENSICS_CACHE_DIR=str(cache), DELTA_FORENSICS_ENGINE="on", PYTHONPATH=str(ROOT))
    res: dict = {"machine": {"nproc": os.cpu_count(), "python": platform.python_version(),
                             "loadavg_start": os.getloadavg()}}
    try:
        import deltalake
        import pyspark

        res["machine"].update(pyspark=pyspark.__version__, deltalake=deltalake.__version__)
        jvm = "from forensics.runtime.spark import get_spark\nget_spark().range(1).count()\n"
        res["jvm_start_s"] = round(timed([sys.executable, "-c", jvm], {**env, "DELTA_FORENSICS_CACHE_DIR": str(work / "c0")}, work)[0], 3)

        t = copy_table(work, "t-inproc")
        res["in_process_cold_s"] = round(timed(CLI + ["history", str(t), "--no-engine"], env, work)[0], 3)
        res["in_process_cached_s"] = statistics.median(
            round(timed(CLI + ["history", str(t), "--no-engine"], env, work)[0], 3) for _ in range(args.runs))

        t = copy_table(work, "t-cold")
        res["engine_cold_s"] = round(timed(CLI + ["history", str(t)], env, work)[0], 3)  # runs here, starts the engine after
        res["engine_jit_warmup"] = wait_for_warm_engine(env, work)

        first, repeat, client_side, client_cpu = [], [], [], []
        for i in range(args.runs):
            t = copy_table(work, f"t-warm-{i}")
            s, _ = timed(CLI + ["history", str(t)], env, work)
            first.append(round(s, 3))
            s, _ = timed(CLI + ["history", str(t)], env, work)
            repeat.append(round(s, 3))
            client_cpu.append(round(_LAST_CPU[0], 3))
            info = engine_info(env, work)
            client_side.append(round(s - float(info.get("lastRunSeconds") or 0.0), 3))
        res["engine_warm_first_look_s"] = {"median": statistics.median(first), "runs": first}
        res["engine_warm_repeat_look_s"] = {"median": statistics.median(repeat), "runs": repeat}
        res["client_side_s"] = {"median": statistics.median(client_side), "runs": client_side}
        res["client_cpu_s"] = {"median": statistics.median(client_cpu), "runs": client_cpu}

        dl = "import sys\nfrom deltalake import DeltaTable\nprint(len(DeltaTable(sys.argv[1]).history()))\n"
        res["deltalake_history_s"] = statistics.median(
            round(timed([sys.executable, "-c", dl, str(TABLE)], env, work)[0], 3) for _ in range(args.runs))
        res["client_imports"] = client_imports(env, t, work)
        d = res["deltalake_history_s"]
        res["ratios"] = {
            "engine_warm_first_look_vs_deltalake": round(res["engine_warm_first_look_s"]["median"] / d, 1),
            "engine_warm_repeat_look_vs_deltalake": round(res["engine_warm_repeat_look_s"]["median"] / d, 1),
            "in_process_cached_vs_deltalake": round(res["in_process_cached_s"] / d, 1),
            "engine_cold_minus_jvm_start_s": round(res["engine_cold_s"] - res["jvm_start_s"], 2),
        }
        res["machine"]["loadavg_end"] = os.getloadavg()
    finally:
        subprocess.run(CLI + ["engine", "stop", "--all"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
