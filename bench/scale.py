"""The scale a cluster carries: a 1,000,000-commit log read and replayed, locally and on a standalone
cluster of two workers the bench starts, side by side with deltalake's `history()` on the same log.

    python bench/scale.py [--commits 1000000] [--work DIR] [--log EXISTING_TABLE] [--skip-cluster] [--pages warm|cold]

Every measurement is a fresh process; time is wall clock, memory the peak summed RSS of its process
tree (bench/proctree.py; the JVM counts). Each starts from the same page cache (`--pages`): warm,
every file of the log read once just before (as right after the synth wrote it; by default), or
cold, the kernel's caches dropped just before (root only). Without that the first measurement
read a log a test run may have pushed out of memory and the later ones the pages it brought back
(session 20: 247.1 s cold against 141.3 s warm for the same first look). For the cluster the tree is the client (the driver JVM
with it); the master's and the workers' JVMs are sampled apart and reported beside it. Writes
bench/out/scale.json; BENCHMARKS.md records a run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests"))

from proctree import run, tree_rss_mb  # noqa: E402
from run import _DELTA_RS_HISTORY, _REPLAY, machine, py, synth  # noqa: E402

PY = sys.executable
CLI = [PY, "-m", "forensics"]
TIMEOUT = 3600


def _history(table: Path, out: Path, extra: list[str]) -> list[str]:
    """`history --json` into a file (a million rows through a pipe would be the bench's memory)."""
    cmd = " ".join([*CLI, "history", str(table), "--json", "--no-engine", *extra])
    return ["sh", "-c", f"exec {cmd} > {out}"]


def _pages(table: Path, how: str) -> None:
    """The same page cache before each measurement (`--pages`), untimed."""
    if how == "cold":
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as fh:  # PermissionError unless root: main says so
            fh.write("3\n")
        return
    from concurrent.futures import ThreadPoolExecutor

    def read(path: str) -> None:
        with open(path, "rb") as fh:
            while fh.read(1 << 20):
                pass

    paths = [str(p) for p in (table / "_delta_log").rglob("*") if p.is_file()]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(read, paths, chunksize=1024))


def _record(name: str, r, results: dict, **more) -> None:
    ok = r.returncode == 0
    results[name] = {"seconds": round(r.seconds, 1), "peak_rss_mb": round(r.peak_rss_mb), "ok": ok, **more}
    if not ok:
        results[name]["error"] = r.stderr.decode("utf-8", "replace")[-600:]
    print(f"  {name:52s} {r.seconds:8.1f} s {r.peak_rss_mb:8.0f} MB{'' if ok else '  FAILED'}", flush=True)


class _Sampler:
    """Peak summed RSS of other process trees (the cluster's master and workers) while a run goes."""

    def __init__(self, pids: list[int]):
        self.pids, self.peak, self._stop = pids, 0.0, threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, sum(tree_rss_mb(p) for p in self.pids))
            time.sleep(0.2)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def _cluster(work: Path, workers: int, memory: str):
    """A standalone master and `workers` workers (1 core each) on 127.0.0.1, as tests/test_cluster.py starts them."""
    from test_cluster import HOST, _env, _free_port, _spark_home, _start, _stop, _wait_port, _wait_text

    spark_class = _spark_home() / "bin" / "spark-class"
    work.mkdir(parents=True, exist_ok=True)
    env = _env(work)
    (work / "logs").mkdir(exist_ok=True)
    procs = []
    port = _free_port()
    master = _start([str(spark_class), "org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(port),
                     "--webui-port", "0"], env, work / "master.log")
    procs.append(master)
    if not _wait_port(port, master, 180):
        raise RuntimeError("master did not start: " + (work / "master.log").read_text()[-1000:])
    url = f"spark://{HOST}:{port}"
    for i in range(workers):
        (work / f"work{i}").mkdir(exist_ok=True)
        log = work / f"worker{i}.log"
        w = _start([str(spark_class), "org.apache.spark.deploy.worker.Worker", url, "--host", HOST, "--cores", "1",
                    "--memory", memory, "--webui-port", "0", "--work-dir", str(work / f"work{i}")], env, log)
        procs.append(w)
        if not _wait_text(log, "Successfully registered with master", w, 180):
            raise RuntimeError(f"worker {i} did not register: " + log.read_text()[-1000:])
    return url, env, procs, lambda: [_stop(p) for p in reversed(procs)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=32)
    ap.add_argument("--work", type=Path, help="where the log and caches go (default: a temporary directory)")
    ap.add_argument("--log", type=Path, help="an existing synth table to use instead of building one")
    ap.add_argument("--skip-local", action="store_true", help="only the cluster run (and deltalake unless skipped)")
    ap.add_argument("--skip-cluster", action="store_true")
    ap.add_argument("--skip-delta-rs", action="store_true")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--worker-memory", default="4g")
    ap.add_argument("--out", type=Path, default=HERE / "out" / "scale.json")
    ap.add_argument("--pages", choices=("warm", "cold"), default="warm",
                    help="the page cache each measurement starts from: the log read once just before, or dropped (root)")
    a = ap.parse_args(argv)
    if a.pages == "cold" and not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        ap.error("--pages cold drops the kernel's caches: it needs root (/proc/sys/vm/drop_caches)")
    work = a.work or Path(tempfile.mkdtemp(prefix="df-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    res: dict = {"machine": machine(), "commits": a.commits, "pages": a.pages, "measurements": {}}
    m = res["measurements"]
    table = a.log
    if table is None:
        table = work / "t"
        if not (table / "_delta_log").is_dir():
            res["synth"] = synth(table, a.commits, a.partitions, 1000)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DELTA_FORENSICS_")}
    env.update(DELTA_FORENSICS_ENGINE="off", PYTHONPATH=str(REPO))
    out = work / "history.json"
    try:
        if not a.skip_local:
            print(f"history of {table} ({a.commits} commits), local[2], empty cache", flush=True)
            env_local = dict(env, DELTA_FORENSICS_CACHE_DIR=str(work / "cache-local"))
            shutil.rmtree(work / "cache-local", ignore_errors=True)
            _pages(table, a.pages)
            r = run(_history(table, out, []), env=env_local, timeout=TIMEOUT)
            _record("history --json, cold (local[2], empty cache)", r, m, rows=_rows(out) if r.returncode == 0 else None)
            _save(res, a.out)
            _pages(table, a.pages)
            r = run(py(_REPLAY, str(table)), env=env_local, timeout=TIMEOUT)
            _record("replay: open from the cache + replay (local)", r, m, **(json.loads(r.stdout) if r.returncode == 0 else {}))
            _save(res, a.out)
        if not a.skip_delta_rs:
            _pages(table, a.pages)
            r = run(py(_DELTA_RS_HISTORY, str(table)), env=env, timeout=TIMEOUT)
            _record("deltalake history() (fresh process)", r, m)
            _save(res, a.out)
        if not a.skip_cluster:
            url, cenv, procs, stop = _cluster(work / "cluster", a.workers, a.worker_memory)
            try:
                env_cluster = dict(cenv, **{k: v for k, v in env.items() if k.startswith(("DELTA_FORENSICS_", "PYTHON"))},
                                   DELTA_FORENSICS_CACHE_DIR=str(work / "cache-cluster"))
                _pages(table, a.pages)
                with _Sampler([p.pid for p in procs]) as s:
                    r = run(_history(table, out, ["--master", url, "--no-cache"]), env=env_cluster, timeout=TIMEOUT)
                _record(f"history --json on a standalone cluster ({a.workers} workers x 1 core)", r, m,
                        rows=_rows(out) if r.returncode == 0 else None, cluster_peak_rss_mb=round(s.peak))
            finally:
                stop()
    finally:
        out.unlink(missing_ok=True)
    _save(res, a.out)
    print(f"wrote {a.out}")
    return 0 if all(v.get("ok") for v in m.values()) else 1


def _save(res: dict, path: Path) -> None:
    """After every measurement: a run stopped later keeps what it measured."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(res, indent=2))


def _rows(path: Path) -> int | None:
    """How many history rows the output holds (one JSON array; counted without loading it)."""
    try:
        tok, n, tail = b'"schema_version"', 0, b""
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 24), b""):
                buf = tail + chunk
                n += buf.count(tok)
                tail = buf[-(len(tok) - 1):]  # too short to hold a whole token: none is counted twice
        return n
    except OSError:
        return None


if __name__ == "__main__":
    sys.exit(main())
