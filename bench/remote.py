"""Remote tables: first look and +100-commit refresh of a log served by a local S3 server, side by
side with deltalake's `history()` against the same server, in one run.

    python bench/remote.py [--commits 2000 20000] [--work DIR] [--rounds N]

Per size: synthesize the log (delta-spark format, `delta-forensics synth`), upload every file but
the last 100 commits to moto's S3 server on 127.0.0.1, then time, each as a fresh process
(JVM start included): deltalake `DeltaTable(uri, storage_options).history()`; `delta-forensics
history URI --json` with an empty cache (mirror + Spark); then upload the 100 commits and time
both again (ours: the refresh fetches only the new files). With `--rounds N` our refresh and a
JVM start are alternated N times, the cache put back before each refresh as it was before the
first (the same refresh each time), and their medians reported: a shared machine's load moves one
run by seconds. Prints a table, writes bench/out/remote.json; BENCHMARKS.md records a run's figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from proctree import run  # noqa: E402
from run import hide_tail, machine, synth  # noqa: E402

PY = sys.executable
TAIL = 100
REFRESH = f"delta-forensics history refresh +{TAIL}"
JVM = "JVM start (local Spark, one job)"
JVM_CMD = [PY, "-c", "from forensics.runtime.spark import get_spark; get_spark().range(1).count()"]
KEY, SECRET, REGION = "bench", "bench-secret", "us-east-1"

_DELTA_RS_HISTORY = """
import json, sys
from deltalake import DeltaTable
h = DeltaTable(sys.argv[1], storage_options=json.loads(sys.argv[2])).history()
print(len(h))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto(work: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    log = open(work / "moto.log", "w")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen([PY, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url + "/moto-api/", timeout=2).read()
            return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("moto server did not start")


def options(endpoint: str) -> dict[str, str]:
    return {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true"}


def upload(endpoint: str, bucket: str, prefix: str, root: Path, only: list[Path] | None = None) -> float:
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name=REGION, aws_access_key_id=KEY, aws_secret_access_key=SECRET)
    files = only if only is not None else [p for p in root.rglob("*") if p.is_file()]
    t = time.perf_counter()
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda p: s3.upload_file(str(p), bucket, f"{prefix}/{p.relative_to(root).as_posix()}"), files))
    return time.perf_counter() - t


def timed(name: str, cmd: list[str], env: dict[str, str], results: dict) -> None:
    r = run(cmd, env=env, timeout=3600)
    ok = r.returncode == 0
    results[name] = {"seconds": round(r.seconds, 2), "peak_rss_mb": round(r.peak_rss_mb, 1), "ok": ok}
    if not ok:
        results[name]["error"] = r.stderr.decode("utf-8", "replace")[-400:]
    print(f"  {name:44s} {r.seconds:8.2f} s  {r.peak_rss_mb:7.0f} MB{'' if ok else '  FAILED'}", flush=True)


def refresh_rounds(ours: list[str], env: dict[str, str], cache: Path, rounds: int, res: dict) -> None:
    """Our refresh, then a JVM start, `rounds` times; before each refresh but the first the cache
    (parsed log and mirror) is put back as it was, so each run is the same +100 refresh. Each
    figure is the median, its runs beside it; "refresh minus JVM start" pairs the runs of a round."""
    backup = cache.with_name(cache.name + "-before-refresh")
    if rounds > 1:
        shutil.copytree(cache, backup, symlinks=True)
    runs: dict[str, list[dict]] = {REFRESH: [], JVM: []}
    for i in range(rounds):
        if i:
            shutil.rmtree(cache)
            shutil.copytree(backup, cache, symlinks=True)
        for name, cmd in ((REFRESH, ours), (JVM, JVM_CMD)):
            one: dict = {}
            timed(name, cmd, env, one)
            runs[name].append(one[name])
    shutil.rmtree(backup, ignore_errors=True)
    for name, rs in runs.items():
        res[name] = {"seconds": statistics.median(r["seconds"] for r in rs), "peak_rss_mb": max(r["peak_rss_mb"] for r in rs),
                     "ok": all(r["ok"] for r in rs), "runs": [r["seconds"] for r in rs]}
    res["refresh minus JVM start (s)"] = round(statistics.median(
        a["seconds"] - b["seconds"] for a, b in zip(runs[REFRESH], runs[JVM])), 2)


def one_size(commits: int, work: Path, endpoint: str, results: dict, rounds: int = 1) -> None:
    import boto3

    table = work / f"t{commits}"
    synth(table, commits, 20, 100)
    side = hide_tail(table, commits - TAIL)
    bucket = f"bench{commits}"
    boto3.client("s3", endpoint_url=endpoint, region_name=REGION, aws_access_key_id=KEY,
                 aws_secret_access_key=SECRET).create_bucket(Bucket=bucket)
    up = upload(endpoint, bucket, "t", table)
    print(f"{commits} commits: uploaded in {up:.1f} s", flush=True)
    uri = f"s3://{bucket}/t"
    opts = options(endpoint)
    cache = work / f"cache{commits}"
    env = {**os.environ, "DELTA_FORENSICS_CACHE_DIR": str(cache)}
    res: dict = {}
    timed("delta-rs history() first look", [PY, "-c", _DELTA_RS_HISTORY, uri, json.dumps(opts)], env, res)
    ours = [PY, "-m", "forensics", "history", uri, "--json", "-q"] + [a for k, v in opts.items() for a in ("--storage-option", f"{k}={v}")]
    timed("delta-forensics history first look", ours, env, res)
    tail = sorted(side.iterdir())
    up2 = upload(endpoint, bucket, "t/_delta_log", side, tail)
    print(f"  +{TAIL} commits uploaded in {up2:.1f} s", flush=True)
    timed(f"delta-rs history() after +{TAIL}", [PY, "-c", _DELTA_RS_HISTORY, uri, json.dumps(opts)], env, res)
    refresh_rounds(ours, env, cache, rounds, res)
    first = res["delta-forensics history first look"]["seconds"] / res["delta-rs history() first look"]["seconds"]
    res["ratio first look (ours / delta-rs)"] = round(first, 2)
    print(f"  first look ratio {first:.2f}x; refresh - JVM start {res['refresh minus JVM start (s)']:.2f} s", flush=True)
    results[str(commits)] = res
    shutil.rmtree(table, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, nargs="+", default=[2000, 20000])
    ap.add_argument("--work", type=Path)
    ap.add_argument("--rounds", type=int, default=1, help="refresh and JVM start this many times each (medians)")
    a = ap.parse_args(argv)
    work = a.work or Path(tempfile.mkdtemp(prefix="df-remote-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict = {"machine": machine()}
    proc, endpoint = start_moto(work)
    try:
        for n in a.commits:
            one_size(n, work, endpoint, results, a.rounds)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    results["loadavg_end"] = os.getloadavg()
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / "remote.json").write_text(json.dumps(results, indent=1))
    print(f"wrote {out / 'remote.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
