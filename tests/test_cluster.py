"""Scale-out: the CLI against a Spark standalone cluster and a Spark Connect server on 127.0.0.1.

Both are started from the pyspark installation (`bin/spark-class`, `bin/spark-submit`) as
subprocesses in their own process groups and always torn down. The CLI runs as a separate
process (this test process already holds a local SparkSession) and its JSON must equal what
the local-mode reader gives for the same table.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forensics import Table, json_document
from forensics.log.delta_log import DeltaLog
from forensics.replay.windows import replay_table

HOST = "127.0.0.1"


def _spark_home() -> Path:
    import pyspark

    return Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, timeout: float) -> bool:
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            return False
        with socket.socket() as s:
            s.settimeout(1)
            if s.connect_ex((HOST, port)) == 0:
                return True
        time.sleep(0.5)
    return False


def _wait_text(path: Path, text: str, proc: subprocess.Popen, timeout: float) -> bool:
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            return False
        if path.exists() and text in path.read_text(errors="replace"):
            return True
        time.sleep(0.5)
    return False


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(_spark_home()),
        SPARK_LOCAL_IP=HOST,
        SPARK_LOCAL_HOSTNAME="localhost",
        SPARK_LOG_DIR=str(tmp / "logs"),
        SPARK_WORKER_DIR=str(tmp / "work"),
        SPARK_PID_DIR=str(tmp),
        PYSPARK_PYTHON=sys.executable,
    )
    return env


def _start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    fh = open(log, "wb")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)


def _stop(proc: subprocess.Popen | None) -> None:
    """SIGTERM the process group (executors and the JVMs' children included), then SIGKILL."""
    if proc is None:
        return
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        return
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        # the group may still hold children (executors) after the leader exits
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            break
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _cli(args: list[str], tmp: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    e = dict(env)
    e["DELTA_FORENSICS_CACHE_DIR"] = str(tmp / "cli-cache")
    e["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    return subprocess.run([sys.executable, "-m", "forensics", *args], env=e, capture_output=True, text=True, timeout=900)


def _local_history(table: Path) -> list:
    """What `history --json` prints in local mode (the same documents, schema_version and ISO twins included)."""
    return json.loads(Table(str(table), use_cache=False).history_json())


def _local_replay(table: Path) -> dict:
    log = DeltaLog.open(str(table), use_cache=False)
    return json.loads(json.dumps(json_document("replay", replay_table(log).to_dict()), default=str))


@pytest.fixture
def quickstart(sample_logs) -> Path:
    t = sample_logs / "quickstart" / "table"
    if not (t / "_delta_log").is_dir():
        pytest.skip("sample_logs/quickstart is absent")
    return t


@pytest.fixture
def standalone(tmp_path):
    """A standalone master and one worker (1 core, 1g) on 127.0.0.1; yields the master URL."""
    spark_class = _spark_home() / "bin" / "spark-class"
    if not spark_class.exists():
        pytest.skip(f"{spark_class} is absent (pyspark without launch scripts)")
    env = _env(tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "work").mkdir()
    port = _free_port()
    master = worker = None
    try:
        master = _start(
            [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(port), "--webui-port", "0"],
            env, tmp_path / "master.log",
        )
        assert _wait_port(port, master, 180), "master did not start:\n" + (tmp_path / "master.log").read_text()[-2000:]
        url = f"spark://{HOST}:{port}"
        worker = _start(
            [str(spark_class), "org.apache.spark.deploy.worker.Worker", url, "--host", HOST, "--cores", "1", "--memory", "1g",
             "--webui-port", "0", "--work-dir", str(tmp_path / "work")],
            env, tmp_path / "worker.log",
        )
        assert _wait_text(tmp_path / "worker.log", "Successfully registered with master", worker, 180), (
            "worker did not register:\n" + (tmp_path / "worker.log").read_text()[-2000:]
        )
        yield url, env
    finally:
        _stop(worker)
        _stop(master)


@pytest.mark.slow
def test_history_and_replay_on_a_standalone_cluster_match_local_mode(standalone, quickstart, tmp_path, spark):
    url, env = standalone
    h = _cli(["history", str(quickstart), "--json", "-q", "--no-cache", "--master", url], tmp_path, env)
    assert h.returncode == 0, h.stderr[-2000:]
    assert json.loads(h.stdout) == _local_history(quickstart)
    r = _cli(["replay", str(quickstart), "--json", "-q", "--no-cache", "--master", url], tmp_path, env)
    assert r.returncode == 0, r.stderr[-2000:]
    local = _cli(["replay", str(quickstart), "--json", "-q", "--no-cache"], tmp_path, env)  # the same command, local mode
    assert local.returncode == 0, local.stderr[-2000:]
    assert json.loads(r.stdout) == json.loads(local.stdout)
    assert json.loads(r.stdout)["commits"] == _local_replay(quickstart)["commits"]
    # the work really ran on the cluster: the worker launched an executor for our app
    assert any((tmp_path / "work").iterdir()), "no executor directory under the worker's work dir"


@pytest.fixture
def connect_server(tmp_path):
    """A Spark Connect server (local[1]) on 127.0.0.1; skipped when it cannot start here."""
    for mod in ("grpc", "pandas", "google.protobuf"):
        try:
            __import__(mod)
        except ImportError:
            pytest.skip(f"Spark Connect client needs {mod} (pip install 'pyspark[connect]')")
    home = _spark_home()
    jars = list((home / "jars").glob("spark-connect_*.jar"))
    if not jars:
        pytest.skip("this pyspark installation ships no Spark Connect server jar")
    env = _env(tmp_path)
    (tmp_path / "logs").mkdir()
    port = _free_port()
    proc = None
    try:
        proc = _start(
            [str(home / "bin" / "spark-submit"), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
             "--master", "local[1]", "--conf", f"spark.connect.grpc.binding.address={HOST}",
             "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.ui.enabled=false",
             "--conf", "spark.hadoop.fs.file.impl=org.apache.hadoop.fs.RawLocalFileSystem",
             "--conf", "spark.sql.session.timeZone=UTC", "spark-internal"],
            env, tmp_path / "connect.log",
        )
        if not _wait_port(port, proc, 180):
            pytest.skip("Spark Connect server did not start here:\n" + (tmp_path / "connect.log").read_text()[-1000:])
        yield f"sc://{HOST}:{port}", env
    finally:
        _stop(proc)


@pytest.mark.slow
def test_history_over_spark_connect_matches_local_mode(connect_server, quickstart, tmp_path, spark):
    url, env = connect_server
    h = _cli(["history", str(quickstart), "--json", "-q", "--no-cache", "--remote", url], tmp_path, env)
    assert h.returncode == 0, h.stderr[-2000:]
    assert json.loads(h.stdout) == _local_history(quickstart)


def test_an_unreachable_spark_connect_server_is_said_at_once(quickstart, tmp_path):
    """pyspark's own client retries an address where nothing listens for ten minutes; the tool tries
    the address first and says which, in one line, with the Spark exit code."""
    url = f"sc://{HOST}:{_free_port()}/"
    t0 = time.monotonic()
    r = _cli(["history", str(quickstart), "--no-cache", "--no-engine", "--remote", url], tmp_path, dict(os.environ))
    took = time.monotonic() - t0
    assert r.returncode == 6, (r.returncode, r.stderr[-2000:])  # 6: Spark
    assert r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert f"cannot reach Spark Connect at {url}: no server at {HOST}:" in r.stderr, r.stderr
    assert took < 60, took


@pytest.mark.parametrize("url, where", [
    ("sc://localhost", ("localhost", 15002)),
    ("sc://h.example:443/;token=t;use_ssl=true", ("h.example", 443)),
    ("sc://[::1]:15003/;user_id=me", ("::1", 15003)),
    ("sc:///;token=t", None),
    ("sc://h:notaport/", None),
    ("http://h:1", None),
])
def test_the_connect_address_is_read_from_the_url(url, where):
    from forensics.runtime.connect import address

    assert address(url) == where
