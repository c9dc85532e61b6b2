"""Failing stores, proved: faults injected for real between the client and moto's S3 server.

tests/faultproxy.py sits on 127.0.0.1 in front of the `s3_server` fixture as the table's
`AWS_ENDPOINT_URL` and throttles (503 SlowDown), resets connections, cuts or truncates bodies and
stalls, request by request. Within the retry budget (2 retries) the command's answers equal a run
without the proxy; beyond it, one line and the documented exit code; an interrupted refresh (a
transfer cut, a SIGKILL) leaves no partial file and the next run repairs it. The proxy's counts
prove the retries happened and that only GET, LIST and HEAD requests reach the store.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import servers
from faultproxy import FaultProxy
from helpers import run_cli
from servers import upload_dir

from forensics.errors import ExitCode
from forensics.runtime.paths import mirror_dir
from forensics.storage.mirror import LOG_DIR, MANIFEST

s3_server = servers.s3_server
pytestmark = pytest.mark.usefixtures("spark")
REPO = Path(__file__).resolve().parent.parent
QUICKSTART = REPO / "sample_logs" / "quickstart" / "table"
COMMIT_3 = r"_delta_log/00000000000000000003\.json$"
TMP_DIR = ".delta-forensics-mirror.tmp"


@pytest.fixture(autouse=True)
def _no_cloud_env(monkeypatch):
    """Each test says where its credentials come from; none leak in from the machine."""
    for k in list(os.environ):
        if k.upper().startswith(("AWS_", "AZURE_", "GOOGLE_", "DELTA_FORENSICS_PROFILE")) or "PROXY" in k.upper():
            monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def proxy(s3_server):
    """A fault proxy in front of moto, for one test; stopped (every stall ended) afterwards."""
    with FaultProxy(s3_server.endpoint) as p:
        yield p


def cli(*argv: str) -> tuple[int, str, str]:
    return run_cli(list(argv))


def _opts(options: dict[str, str]) -> list[str]:
    return [a for k, v in options.items() for a in ("--storage-option", f"{k}={v}")]


def _upload(s3_server, local: Path, name: str) -> str:
    bucket = f"f{uuid.uuid4().hex[:12]}"
    s3_server.create_bucket(bucket)
    upload_dir(s3_server.store(bucket, name), local)
    return f"s3://{bucket}/{name}"


def _through(proxy: FaultProxy, s3_server, **extra: str) -> list[str]:
    return _opts(s3_server.options(AWS_ENDPOINT_URL=proxy.endpoint, **extra))


def _assert_no_partial_file(uri: str, source_log: Path) -> None:
    """Every file the mirror holds is whole (the store's bytes), and no temporary is left."""
    root = mirror_dir(uri)
    assert not (root / TMP_DIR).exists()
    for path in (root / LOG_DIR).rglob("*"):
        if path.is_file():
            assert path.read_bytes() == (source_log / path.relative_to(root / LOG_DIR)).read_bytes(), path


# --------------------------------------------------------------------------------------
# Within the budget: the same answers
# --------------------------------------------------------------------------------------

TRANSIENT = {
    "503 SlowDown on a GET": (lambda p: p.throttle(COMMIT_3, times=2), "GET"),
    "503 SlowDown on the listing": (lambda p: p.throttle(kind="LIST", times=2), "LIST"),
    "500 InternalError on a GET": (lambda p: p.error(500, "InternalError", COMMIT_3, times=2), "GET"),
    "reset before the reply": (lambda p: p.reset(COMMIT_3, times=2), "GET"),
    "reset after 100 body bytes": (lambda p: p.reset(COMMIT_3, times=2, after_bytes=100), "GET"),
    "body cut after 100 of its bytes": (lambda p: p.cut(COMMIT_3, times=2, after_bytes=100), "GET"),
    "body truncated, length rewritten": (lambda p: p.truncate(COMMIT_3, times=2, after_bytes=100), "GET"),
    "listing body cut": (lambda p: p.cut(kind="LIST", times=2, after_bytes=100), "LIST"),
    "listing reset mid-body": (lambda p: p.reset(kind="LIST", times=2, after_bytes=100), "LIST"),
    "stalled past the 1 s timeout": (lambda p: p.stall(5, COMMIT_3, times=2), "GET"),
}


@pytest.fixture(scope="module")
def quickstart_s3(s3_server) -> tuple[str, str]:
    """quickstart in S3, and its `history --json` read without the proxy."""
    uri = _upload(s3_server, QUICKSTART, "quickstart")
    code, out, err = cli("history", uri, "--json", "-q", "--no-cache", *_opts(s3_server.options()))
    assert code == 0, err
    return uri, out


@pytest.mark.parametrize("fault", list(TRANSIENT))
def test_transient_faults_within_the_retry_budget_change_no_answer(fault, proxy, s3_server, quickstart_s3):
    uri, clean = quickstart_s3
    inject, kind = TRANSIENT[fault]
    inject(proxy)
    code, out, err = cli("history", uri, "--json", "-q", "--no-cache", *_through(proxy, s3_server, AWS_TIMEOUT="1s"))
    assert code == 0, err
    assert json.loads(out) == json.loads(clean)
    assert sum(proxy.injected.values()) == 2
    target = COMMIT_3 if kind == "GET" else "list-type"
    assert proxy.requests_for(target, kind) == 3  # two faults, two retries, one answer
    if fault == "body cut after 100 of its bytes":  # the GET resumed where the body broke off
        assert [r for _, r in proxy.ranges] == ["bytes=100-842", "bytes=200-842"]  # of 843 bytes


# --------------------------------------------------------------------------------------
# Beyond the budget: one line, the documented exit code, no partial file
# --------------------------------------------------------------------------------------

EXHAUSTED = {
    "503 SlowDown on every GET": (lambda p: p.throttle(COMMIT_3, times=None), "GET", ExitCode.STORE_THROTTLED, "kept throttling"),
    "503 SlowDown on every listing": (lambda p: p.throttle(kind="LIST", times=None), "LIST", ExitCode.STORE_THROTTLED,
                                      "kept throttling"),
    "429 TooManyRequests on every GET": (lambda p: p.error(429, "TooManyRequests", COMMIT_3, times=None), "GET",
                                         ExitCode.STORE_THROTTLED, "kept throttling"),
    "500 InternalError on every GET": (lambda p: p.error(500, "InternalError", COMMIT_3, times=None), "GET",
                                       ExitCode.STORE_UNREACHABLE, "HTTP 500 InternalError"),
    "every connection reset": (lambda p: p.reset(COMMIT_3, times=None), "GET", ExitCode.STORE_UNREACHABLE, "connection dropped"),
    "every body cut": (lambda p: p.cut(COMMIT_3, times=None, after_bytes=100), "GET", ExitCode.STORE_UNREACHABLE,
                       "transfer cut short"),
    "every body truncated": (lambda p: p.truncate(COMMIT_3, times=None, after_bytes=100), "GET", ExitCode.STORE_UNREACHABLE,
                             "transfer cut short"),
    "every listing cut": (lambda p: p.cut(kind="LIST", times=None, after_bytes=100), "LIST", ExitCode.STORE_UNREACHABLE,
                          "transfer cut short"),
    "every reply stalled": (lambda p: p.stall(5, COMMIT_3, times=None), "GET", ExitCode.STORE_UNREACHABLE, "timed out"),
}


@pytest.mark.parametrize("fault", list(EXHAUSTED))
def test_faults_beyond_the_retry_budget_exit_with_their_code_in_one_line(fault, proxy, s3_server, quickstart_s3):
    uri, _ = quickstart_s3
    inject, kind, exit_code, reason = EXHAUSTED[fault]
    inject(proxy)
    t0 = time.monotonic()
    code, out, err = cli("history", uri, "--json", "-q", *_through(proxy, s3_server, AWS_TIMEOUT="1s"))
    seconds = time.monotonic() - t0
    assert code == exit_code, err
    assert out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert reason in err and uri in err and s3_server.secret_key not in err
    target = COMMIT_3 if kind == "GET" else "list-type"
    assert proxy.requests_for(target, kind) == 3  # the first attempt and two retries, no more
    assert seconds < 15
    _assert_no_partial_file(uri, QUICKSTART / LOG_DIR)


def test_throttled_heads_on_a_refresh_exit_12(proxy, s3_server, quickstart_s3):
    """A refresh HEADs the oldest mirrored commit; a 503 there (no body, no code) is throttling too."""
    uri, _ = quickstart_s3
    code, _, err = cli("history", uri, "--json", "-q", *_through(proxy, s3_server))
    assert code == 0, err
    proxy.throttle(kind="HEAD", times=None)
    code, _, err = cli("history", uri, "--json", "-q", *_through(proxy, s3_server))
    assert code == ExitCode.STORE_THROTTLED == 12, err
    assert proxy.counts["HEAD"] == 3 and "(HTTP 503; 2 retries over" in err


def test_exit_codes_page_documents_code_12():
    codes = (REPO / "docs" / "exit-codes.md").read_text()
    assert "| 12 | an object store kept throttling" in codes


# --------------------------------------------------------------------------------------
# An interrupted refresh is repaired by the next run
# --------------------------------------------------------------------------------------


@pytest.fixture
def growing_table(s3_server, tmp_path) -> tuple[str, Path, Callable[[], list[str]]]:
    """busy in S3 without its last 3 commits; `grow()` uploads them (a writer committed)."""
    src = tmp_path / "busy"
    shutil.copytree(REPO / "sample_logs" / "busy" / "table", src)
    held = sorted((src / LOG_DIR).glob("0*.json"))[-3:]
    data = {p.name: p.read_bytes() for p in held}
    for p in held:
        p.unlink()
    uri = _upload(s3_server, src, "busy")
    bucket = uri.split("/")[2]
    store = s3_server.store(bucket, "busy")
    for name, body in data.items():
        (src / LOG_DIR / name).write_bytes(body)

    def grow() -> list[str]:
        for name, body in data.items():
            store.put(f"{LOG_DIR}/{name}", body)
        return sorted(data)

    return uri, src, grow


def _fresh_answers(uri: str, s3_server) -> dict:
    code, out, err = cli("history", uri, "--json", "-q", "--no-cache", *_opts(s3_server.options()))
    assert code == 0, err
    return json.loads(out)


def test_a_refresh_cut_mid_file_leaves_no_partial_file_and_the_next_run_repairs_it(proxy, s3_server, growing_table):
    uri, src, grow = growing_table
    code, _, err = cli("history", uri, "--json", "-q", *_through(proxy, s3_server))
    assert code == 0, err
    new = grow()
    proxy.cut(new[0].replace(".", r"\."), times=None, after_bytes=200)  # 402.json: 10 kB
    code, _, err = cli("history", uri, "--json", "-q", *_through(proxy, s3_server))
    assert code == ExitCode.STORE_UNREACHABLE and "transfer cut short" in err, err
    assert not (mirror_dir(uri) / LOG_DIR / new[0]).exists()
    _assert_no_partial_file(uri, src / LOG_DIR)
    proxy.clear()
    code, out, err = cli("history", uri, "--json", "-q", *_through(proxy, s3_server))
    assert code == 0, err
    assert json.loads(out) == _fresh_answers(uri, s3_server)
    assert proxy.requests_for(new[0].replace(".", r"\."), "GET") == 1
    assert proxy.requests_for(new[2].replace(".", r"\."), "GET") == 0  # fetched before the failure: kept
    _assert_no_partial_file(uri, src / LOG_DIR)


def test_a_refresh_killed_mid_file_is_repaired_by_the_next_run(proxy, s3_server, growing_table):
    uri, src, grow = growing_table
    code, _, err = cli("history", uri, "--json", "-q", *_through(proxy, s3_server))
    assert code == 0, err
    new = grow()
    stalled = proxy.stall(60, new[1].replace(".", r"\."), after_bytes=200)  # half a file sent, then nothing
    argv = [sys.executable, "-m", "forensics", "history", uri, "--json", "-q", *_through(proxy, s3_server)]
    child = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ))
    try:
        assert stalled.reached.wait(120), "the refresh never asked for the new commit"
        time.sleep(0.5)  # the other new commits land meanwhile
        child.send_signal(signal.SIGKILL)
        assert child.wait(30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(30)
    root = mirror_dir(uri)
    assert json.loads((root / MANIFEST).read_text())["files"]  # the earlier mirror's, never rewritten
    for path in (root / LOG_DIR).rglob("*"):  # whatever landed is whole
        if path.is_file():
            assert path.read_bytes() == (src / LOG_DIR / path.relative_to(root / LOG_DIR)).read_bytes(), path
    proxy.clear()
    code, out, err = cli("history", uri, "--json", "-q", *_through(proxy, s3_server))
    assert code == 0, err
    assert json.loads(out) == _fresh_answers(uri, s3_server)
    assert proxy.requests_for(new[1].replace(".", r"\."), "GET") == 1
    _assert_no_partial_file(uri, src / LOG_DIR)


# --------------------------------------------------------------------------------------
# Read-only, by the proxy's count
# --------------------------------------------------------------------------------------


def test_only_get_list_and_head_requests_reach_the_store(proxy, s3_server, sample_logs):
    uri = _upload(s3_server, sample_logs / "a-merge-partitions" / "table", "orders")
    commands = [["history"], ["snapshot"], ["replay"], ["evidence"], ["explain", "3"]]
    for round_ in ("first look", "refresh"):
        for command in commands:
            code, out, err = cli(command[0], uri, *command[1:], "--json", "-q", *_through(proxy, s3_server))
            assert code == 0, (round_, command, err)
            assert json.loads(out)
    assert set(proxy.counts) == {"GET", "LIST", "HEAD"}, proxy.counts
    assert sum(proxy.counts.values()) == len(proxy.log) > 10


def test_exit_codes_page_lists_each_code_once():
    """docs/exit-codes.md is the one table: every ExitCode in it exactly once, in order, nothing else."""
    import re

    from forensics.errors import ExitCode

    rows = re.findall(r"^\| (\d+) \|", (REPO / "docs" / "exit-codes.md").read_text(), re.M)
    assert [int(r) for r in rows] == [int(c) for c in ExitCode]
