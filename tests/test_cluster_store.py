"""A cluster's executors read a remote table from the store, not from the driver's mirror.

A standalone master and a worker on 127.0.0.1, the worker in its own mount namespace in which the
driver's cache directory (where local mode mirrors `_delta_log`) is an empty tmpfs: what its
executors read, they read from the local S3 server through Hadoop's S3A connector
(forensics/storage/connectors.py, jars from `make jars`: DELTA_FORENSICS_STORE_JARS). The
answers must equal local mode's on the same table. A control run shows the namespace does hide
the driver's cache: a table the driver holds there cannot be read by that worker.
(A network namespace would need a virtual link to reach the master and the store; not used.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import servers
from servers import upload_dir
from test_cluster import HOST, _cli, _env, _free_port, _spark_home, _start, _stop, _wait_port, _wait_text

pytestmark = [pytest.mark.live, pytest.mark.slow]

s3_server = servers.s3_server


def _can_unshare() -> str | None:
    """Why a private mount namespace cannot be had here (None: it can)."""
    if shutil.which("unshare") is None:
        return "unshare(1) is absent"
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
                       capture_output=True, text=True, timeout=30)
    return None if r.returncode == 0 else f"no private mount namespace: {r.stderr.strip()[:200]}"


@pytest.fixture
def store_jars() -> str:
    d = os.environ.get("DELTA_FORENSICS_STORE_JARS", "")
    if not d or not list(Path(d).glob("hadoop-aws-*.jar")):
        pytest.skip("DELTA_FORENSICS_STORE_JARS names no S3A connector jars (make jars fetches them; make test-live sets it)")
    return d


@pytest.fixture
def hidden_cache_cluster(tmp_path):
    """(master URL, env, the driver's cache dir): one worker that cannot see that directory."""
    why = _can_unshare()
    if why:
        pytest.skip(why)
    spark_class = _spark_home() / "bin" / "spark-class"
    env = _env(tmp_path)
    for d in ("logs", "work", "cli-cache"):
        (tmp_path / d).mkdir()
    cache = tmp_path / "cli-cache"  # the CLI's DELTA_FORENSICS_CACHE_DIR (test_cluster._cli)
    port = _free_port()
    master = worker = None
    try:
        master = _start([str(spark_class), "org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(port),
                         "--webui-port", "0"], env, tmp_path / "master.log")
        assert _wait_port(port, master, 180), "master did not start:\n" + (tmp_path / "master.log").read_text()[-2000:]
        url = f"spark://{HOST}:{port}"
        hide = ('mount -t tmpfs tmpfs "$1" && [ -z "$(ls -A "$1")" ] && echo "driver cache hidden: $1" && '
                'exec "$2" org.apache.spark.deploy.worker.Worker "$3" --host "$4" --cores 1 --memory 1g --webui-port 0 --work-dir "$5"')
        worker = _start(["unshare", "-m", "--propagation", "private", "sh", "-c", hide, "sh", str(cache), str(spark_class), url, HOST,
                         str(tmp_path / "work")], env, tmp_path / "worker.log")
        assert _wait_text(tmp_path / "worker.log", "Successfully registered with master", worker, 180), (
            "worker did not register:\n" + (tmp_path / "worker.log").read_text()[-2000:])
        assert f"driver cache hidden: {cache}" in (tmp_path / "worker.log").read_text()
        yield url, env, cache
    finally:
        _stop(worker)
        _stop(master)


def _json(r: subprocess.CompletedProcess) -> object:
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def test_executors_that_cannot_see_the_mirror_read_the_table_from_s3(hidden_cache_cluster, store_jars, s3_server,
                                                                       sample_logs, tmp_path):
    url, env, cache = hidden_cache_cluster
    local_table = sample_logs / "quickstart" / "table"  # 20 commits and a checkpoint at v18
    bucket = f"cl-{uuid.uuid4().hex[:10]}"
    s3_server.create_bucket(bucket)
    upload_dir(s3_server.store(bucket, "t"), local_table)
    uri = f"s3://{bucket}/t"
    canary = f"canary-{uuid.uuid4().hex}"  # moto takes any secret: this one must show up nowhere
    opts = [a for k, v in s3_server.options(AWS_SECRET_ACCESS_KEY=canary).items() for a in ("--storage-option", f"{k}={v}")]
    env = {**env, "DELTA_FORENSICS_STORE_JARS": store_jars}

    for command in (["history"], ["replay"], ["snapshot", "--version", "19"]):
        on_cluster = _cli([*command[:1], uri, *command[1:], "--json", "-q", "--master", url, *opts], tmp_path, env)
        local = _cli([*command[:1], str(local_table), *command[1:], "--json", "-q", "--no-cache"], tmp_path, env)
        got, want = _json(on_cluster), _json(local)
        if command[0] == "history":
            assert [c["version"] for c in got] == list(range(20))
            for c in [*got, *want]:
                c.pop("table", None)
        else:
            got.pop("table", None), want.pop("table", None)
        assert got == want, command
        assert canary not in on_cluster.stdout + on_cluster.stderr
    # the worker ran executors for these commands, and the mirror exists on the driver's side only
    assert any((tmp_path / "work").iterdir()), "no executor ran on the worker"
    assert any((cache / "mirrors").iterdir())
    # nor in the driver's cache (spark.log included), the worker's and the executors' logs
    for root in (cache, tmp_path / "work", tmp_path / "logs"):
        for f in (p for p in root.rglob("*") if p.is_file()):
            assert canary.encode() not in f.read_bytes(), f
    assert canary not in (tmp_path / "worker.log").read_text(errors="replace")


def test_control_the_worker_cannot_read_what_only_the_drivers_cache_holds(hidden_cache_cluster, sample_logs, tmp_path):
    url, env, cache = hidden_cache_cluster
    copy = cache / "a-local-table"
    shutil.copytree(sample_logs / "quickstart" / "table", copy)
    r = _cli(["history", str(copy), "--json", "-q", "--no-cache", "--master", url], tmp_path, env)
    assert r.returncode != 0, "the worker read a path only the driver has: the namespace hides nothing"
    assert "delta-forensics: error:" in r.stderr and "Traceback" not in r.stderr
    assert "FileNotFoundException" in r.stderr and str(copy) in r.stderr  # read on the worker, where it is not


# A follower on the cluster (the Python API's `Table.refresh`, what `watch` runs): it prints the
# versions it opened with, waits for the test to commit one more, refreshes and prints its history.
FOLLOWER = r"""
import json, pathlib, sys, time
from forensics import Table
uri, master, opts, go = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), pathlib.Path(sys.argv[4])
t = Table(uri, master=master, storage_options=opts)
print(json.dumps(list(t.versions)), flush=True)
while not go.exists():
    time.sleep(0.1)
print(t.refresh().history_json(), flush=True)
"""


def test_a_refresh_on_the_cluster_reads_the_new_commits_from_s3(hidden_cache_cluster, store_jars, s3_server, sample_logs,
                                                                  tmp_path):
    """`Table.refresh()` of a remote table on a cluster hands the executors the store's URI too, not
    the driver's mirror (which this worker cannot see): the new commit's parse equals local mode's."""
    url, env, cache = hidden_cache_cluster
    local_table = sample_logs / "quickstart" / "table"  # 20 commits, a checkpoint at v18
    first = tmp_path / "first"
    shutil.copytree(local_table, first)
    (first / "_delta_log" / f"{19:020d}.json").unlink()
    bucket = f"rf-{uuid.uuid4().hex[:10]}"
    s3_server.create_bucket(bucket)
    upload_dir(s3_server.store(bucket, "t"), first)
    go = tmp_path / "go"
    e = {**env, "DELTA_FORENSICS_STORE_JARS": store_jars, "DELTA_FORENSICS_CACHE_DIR": str(cache),
         "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    p = subprocess.Popen([sys.executable, "-c", FOLLOWER, f"s3://{bucket}/t", url, json.dumps(s3_server.options()), str(go)],
                         env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        opened = p.stdout.readline()
        assert json.loads(opened or "null") == list(range(19)), p.stderr.read()[-3000:] if not opened else opened
        import obstore

        name = f"_delta_log/{19:020d}.json"
        obstore.put(s3_server.store(bucket, "t"), name, (local_table / name).read_bytes())
        go.touch()
        out, err = p.communicate(timeout=600)
    finally:
        p.kill()
    assert p.returncode == 0, err[-3000:]
    got = json.loads(out)
    want = _json(_cli(["history", str(local_table), "--json", "-q", "--no-cache"], tmp_path, env))
    for c in [*got, *want]:
        c.pop("table", None)
    assert [c["version"] for c in got] == list(range(20)) and got == want
