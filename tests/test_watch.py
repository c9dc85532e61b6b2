"""`watch TABLE` as a user runs it: a subprocess following a deltalake table while real
transactions land (deltalake 1.6.6: a plain append, then a stale handle whose UPDATE loses to a
DELETE and leaves its data file behind). It prints a verdict for each, stops on SIGINT with exit
130 and one line, and `--fail-on aborted` exits 19 at the first aborted attempt. Every wait is
bounded."""

from __future__ import annotations

import datetime as dt
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import uuid
import time
from pathlib import Path

import jsonschema
import servers
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError

from forensics import load_schema
from forensics.errors import ExitCode

REPO = Path(__file__).resolve().parents[1]
s3_server = servers.s3_server
START_S = 240  # the watcher's first read starts a JVM
LAND_S = 120


def _rows(ids: list[int], day: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "status": pa.array(["ok"] * len(ids)),
                     "date": pa.array([dt.date.fromisoformat(day)] * len(ids), pa.date32())})


def _table(uri: str | Path, so: dict[str, str] | None = None) -> str:
    uri = str(uri)
    for k in range(3):
        write_deltalake(uri, _rows([k * 10, k * 10 + 1], "2024-06-20"), mode="append", partition_by=["date"], storage_options=so)
    return uri


class Watch:
    """The CLI as a subprocess, its stdout and stderr read line by line as they come."""

    def __init__(self, argv: list[str]):
        env = {**os.environ, "DELTA_FORENSICS_ENGINE": "off", "PYTHONUNBUFFERED": "1"}
        self.p = subprocess.Popen([sys.executable, "-m", "forensics", "watch", *argv], cwd=REPO, env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.out: queue.Queue[str] = queue.Queue()
        self.err: list[str] = []
        threading.Thread(target=self._pump, args=(self.p.stdout, self.out.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.p.stderr, self.err.append), daemon=True).start()

    @staticmethod
    def _pump(stream, put) -> None:
        for line in stream:
            put(line.rstrip("\n"))

    def started(self, timeout: float = START_S) -> None:
        end = time.monotonic() + timeout
        while not any(x.startswith("watching ") for x in self.err):
            assert self.p.poll() is None, ("watch exited", self.p.returncode, self.err)
            assert time.monotonic() < end, ("watch did not start", self.err)
            time.sleep(0.2)

    def line(self, timeout: float = LAND_S) -> str:
        try:
            return self.out.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(("no verdict printed in time", self.err)) from None

    def wait(self, timeout: float = 60) -> int:
        try:
            return self.p.wait(timeout=timeout)
        finally:
            if self.p.poll() is None:
                self.p.kill()

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(timeout=30)


@pytest.fixture
def watch():
    started: list[Watch] = []

    def start(argv: list[str]) -> Watch:
        w = Watch(argv)
        started.append(w)
        return w

    yield start
    for w in started:
        w.stop()


def _loser(uri: str, so: dict[str, str] | None = None) -> str:
    """Two handles read the same version: a DELETE commits, the UPDATE of the other fails and leaves its file."""
    a, b = DeltaTable(uri, storage_options=so), DeltaTable(uri, storage_options=so)
    a.delete("date = '2024-06-20' AND id = 0")
    try:
        b.update(predicate="date = '2024-06-20'", updates={"status": "'checked'"})
    except CommitFailedError as e:
        return str(e)
    raise AssertionError("the UPDATE was meant to lose")


def test_watch_prints_verdicts_as_transactions_land_and_stops_on_sigint(tmp_path, watch):
    uri = _table(tmp_path / "t")
    w = watch([uri, "--interval", "0.5", "--settle", "2", "--jsonl", "--utc"])
    w.started()
    assert w.out.empty()  # what was there before is history: nothing printed for it
    write_deltalake(uri, _rows([100], "2024-06-21"), mode="append")  # v3: delta-rs records no readVersion
    first = json.loads(w.line())
    validator = jsonschema.Draft202012Validator(load_schema("replay-jsonl"))
    validator.validate(first)
    assert (first["kind"], first["version"], first["operation"], first["verdict"]) == ("window", 3, "WRITE", "skipped")
    assert first["timestamp"] == DeltaTable(uri).history(1)[0]["timestamp"]
    assert "concurrent transactions added new data" in _loser(uri)  # v4 DELETE commits; the UPDATE aborts
    attempt = json.loads(w.line())
    validator.validate(attempt)
    assert (attempt["kind"], attempt["verdict"], attempt["operation"]) == ("attempt", "aborted", "UPDATE")
    assert attempt["partitions"] == ["date=2024-06-20"] and 4 in attempt["winners"]
    time.sleep(1.5)  # a few more looks: nothing is said twice
    assert w.out.empty()
    assert any(x == "committed: v4 (no concurrent winner)" for x in w.err), w.err
    w.p.send_signal(signal.SIGINT)
    assert w.wait() == int(ExitCode.INTERRUPTED) == 130
    # Where Delta's jars cannot be had (no network, a proxy Ivy does not pass), the Spark start says so once.
    tail = [x for x in w.err if not x.startswith(("watching ", "committed: ")) and "Delta's JVM side" not in x]
    assert tail == ["watch: stopped (Ctrl+C) at v4"], w.err


def test_watch_fail_on_aborted_exits_at_the_first_aborted_attempt(tmp_path, watch):
    uri = _table(tmp_path / "t")
    w = watch([uri, "--interval", "0.5", "--settle", "2", "--fail-on", "aborted"])
    w.started()
    write_deltalake(uri, _rows([100], "2024-06-21"), mode="append")
    assert " v3  WRITE  skipped  " in w.line()  # text lines: time, version, operation, verdict, detail
    _loser(uri)
    line = w.line()
    assert "  attempt-1  UPDATE  aborted  lost to " in line and "v4" in line and "date=2024-06-20" in line, line
    assert w.wait() == int(ExitCode.GATE_ABORTED) == 19
    assert any(x.startswith("--fail-on aborted: attempt-1") for x in w.err), w.err
    assert not any("Traceback" in x for x in w.err)


def test_watch_refuses_what_it_cannot_follow(tmp_path):
    from helpers import run_cli

    uri = _table(tmp_path / "t")
    for argv, words in [([uri, "--no-cache"], "--no-cache"), ([uri, "--interval", "0"], "--interval"),
                        ([uri, "--fail-on", "aborted", "--no-evidence"], "--no-evidence"),
                        ([uri, "--fail-on", "conflicts"], "'conflicts'")]:
        rc, out, err = run_cli(["watch", *argv])
        assert rc == int(ExitCode.USAGE) and out == "" and words in err and len(err.strip().splitlines()) == 1, (argv, err)


def test_a_follower_on_an_s3_table_takes_the_same_path(s3_server, spark, monkeypatch):
    """The same following through the store (moto): the log re-listed from its tail through the mirror, the
    data files listed for orphans; deltalake writes with conditional put, as in production."""
    from forensics import Follower, Table

    for k in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(k)
    so = {**s3_server.options(), "AWS_CONDITIONAL_PUT": "etag"}
    bucket = f"watch{uuid.uuid4().hex[:10]}"
    s3_server.create_bucket(bucket)
    uri = _table(f"s3://{bucket}/orders", so)
    f = Follower(Table(uri, storage_options=s3_server.options(), spark=spark), settle_ms=0)
    assert f.last_version == 2 and f.poll().lines == []
    write_deltalake(uri, _rows([100], "2024-06-21"), mode="append", storage_options=so)
    tick = f.poll()
    assert tick.versions == [3] and [(x["kind"], x["version"], x["verdict"]) for x in tick.lines] == [("window", 3, "skipped")]
    assert tick.lines[0]["table"] == uri
    assert f.table.store.mirror.listed_from is not None  # the log's tail, not the whole listing
    _loser(uri, so)
    tick = f.poll()
    assert tick.versions == [4] and tick.quiet == [4]
    (attempt,) = tick.lines
    assert (attempt["kind"], attempt["operation"], attempt["partitions"]) == ("attempt", "UPDATE", ["date=2024-06-20"])
    assert 4 in attempt["winners"]
    assert f.poll().lines == []  # said once


def test_watch_lines_are_inert(spark, monkeypatch):
    """Text from the log (operation, why, partitions) reaches the terminal without a control character."""
    from forensics.cli.commands.watch import _text
    from helpers import run_cli

    monkeypatch.setenv("DELTA_FORENSICS_ENGINE", "off")
    b = str(REPO / "sample_logs" / "b-writeserializable-reorder" / "table")
    (line,) = [json.loads(x) for x in run_cli(["replay", b, "--jsonl", "-q"])[1].splitlines()]
    hostile = "\x1b]52;c;ZXZpbA==\x07DELETE\r\n\x1b[2J"
    for shown in (_text(line, True), _text({**line, "operation": hostile, "verdict": "skipped", "why": hostile}, True)):
        assert not any(ord(c) < 32 or 0x7f <= ord(c) < 0xa0 for c in shown), repr(shown)
    assert _text(line, True).split("  ")[1:4] == ["v3", "DELETE", "reordered"]
