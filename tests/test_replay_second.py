"""A long log's windows replayed in two processes (forensics/replay/second.py): the verdicts the
child sends back are the very objects the in-process replay builds, on every sample table (each
writer and profile the repo has); a child that fails is made up for here; the wire format is exact
whatever the strings."""

from __future__ import annotations

import json
import logging
import os
import signal
import time
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from forensics.log.delta_log import DeltaLog
from forensics.model import Bound
from forensics.replay import second
from forensics.replay.verdict import CommitVerdict, concurrency_windows, has_result, replay_windows
from forensics.replay.windows import replay_table
from forensics.rules.results import CheckOutcome, WindowResult
from forensics.runtime import halves, spill
from forensics.sets.commit_sets import StateIndex

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(halves.cores() < 2, reason="the second process runs with two cores or more")

TABLES = sorted(p.parent.parent.name for p in REPO.glob("sample_logs/*/table/_delta_log"))


def _one_and_two(table: str, monkeypatch, **kw):
    log = DeltaLog.open(str(REPO / "sample_logs" / table / "table"))
    one = replay_table(log, **kw)
    monkeypatch.setattr(second, "MIN_WINDOWS", 1)
    two = replay_table(DeltaLog.open(str(REPO / "sample_logs" / table / "table")), **kw)
    monkeypatch.undo()
    return one, two


@pytest.mark.parametrize("table", TABLES)
def test_the_childs_verdicts_are_the_in_process_ones(table, monkeypatch, caplog, spark):
    with caplog.at_level(logging.INFO, logger="forensics"):
        one, two = _one_and_two(table, monkeypatch)
    if not one.verdicts:
        pytest.skip(f"{table}: no window to replay")
    assert "half of the replay failed" not in caplog.text  # the child answered
    assert list(two.verdicts) == list(one.verdicts)
    assert list(two.verdicts.values()) == list(one.verdicts.values())  # every field, result and check
    assert two.to_dict() == one.to_dict() and two.findings == one.findings
    assert not list(spill.scratch_root().glob(f"{os.getpid()}-*"))  # its inputs are gone


def test_a_long_replay_keeps_no_checks_until_a_reader_opens_them(monkeypatch, spark):
    """Both halves: each verdict's window result is replayed again when first read (at 1,000,000
    commits, seven million checks not kept), and is the result the in-process replay gives."""
    one, two = _one_and_two("busy", monkeypatch)
    results = [v for v in two.verdicts.values() if has_result(v)]
    assert len(results) == len([v for v in one.verdicts.values() if v.result is not None]) > 1
    assert all(callable(v._result) for v in results)  # not computed yet
    assert [v.result for v in results] == [one.verdicts[v.version].result for v in results]
    assert not any(callable(v._result) for v in results)  # computed once, kept


def test_the_rules_and_level_asked_for_reach_the_child(monkeypatch, caplog, spark):
    with caplog.at_level(logging.INFO, logger="forensics"):
        one, two = _one_and_two("busy", monkeypatch, rules="databricks", isolation_level="WriteSerializable")
    assert "half of the replay failed" not in caplog.text
    assert {v.profile for v in one.verdicts.values() if v.profile} == {"databricks"}
    assert list(two.verdicts.values()) == list(one.verdicts.values())


def test_a_child_that_fails_is_made_up_for_here(monkeypatch, caplog, spark):
    """A child that cannot run at all (its interpreter exits 1 at once)."""
    one, _ = _one_and_two("busy", monkeypatch)
    monkeypatch.setattr(second, "PYTHON", "/bin/false")
    monkeypatch.setattr(second, "MIN_WINDOWS", 1)
    with caplog.at_level(logging.INFO, logger="forensics"):
        got = replay_table(DeltaLog.open(str(REPO / "sample_logs" / "busy" / "table")))
    assert "the second process's half of the replay failed (exit 1" in caplog.text
    assert list(got.verdicts.values()) == list(one.verdicts.values())


def test_the_child_reads_only_its_versions(tmp_path, spark):
    """What the child is handed: the commits and file actions from the first version its windows
    reach back to, up to its last; its temporary directory is gone once the replay returns."""
    log = DeltaLog.open(str(REPO / "sample_logs" / "busy" / "table"))
    state = StateIndex(log)
    windows, _ = concurrency_windows(log)
    later = windows[len(windows) // 2:]
    second.write_inputs(tmp_path, log, state, later, None, None)
    import polars as pl

    lo = min(v if rv is None or rv >= v else rv + 1 for v, rv in later)
    commits = pl.read_ipc(tmp_path / "commits.arrow")
    assert commits["version"].min() == lo and commits["version"].max() == later[-1][0]
    assert pl.read_ipc(tmp_path / "actions.arrow")["version"].min() >= lo
    got = second.replay_inputs(tmp_path)
    assert got == list(replay_windows(log, state, later, None, None).values())


def test_the_child_refuses_anything_but_a_replay_directory(tmp_path):
    for args in ([str(tmp_path), "1"], [str(REPO / "sample_logs"), "1"], [str(tmp_path)]):
        r = subprocess.run([sys.executable, "-m", "forensics.replay.second", *args], capture_output=True, timeout=60)
        assert r.returncode == 2 and b"not a replay directory" in r.stderr and not r.stdout


_text = st.text(max_size=8)
_maybe = st.none() | _text
_partition = st.none() | st.dictionaries(_text, _maybe, max_size=3)
_check = st.builds(CheckOutcome, check=_text, status=st.sampled_from(["passed", "failed", "skipped"]), reason=_text,
                   exception=_maybe, file=_maybe, partition=_partition, winner_version=st.none() | st.integers(),
                   reordered=st.booleans(), error_class=_maybe, inferred=st.booleans(), domain=_maybe, detail=_maybe)
_result = st.builds(WindowResult, verdict=st.sampled_from(["commit", "abort"]), exception=_maybe,
                    winning_version=st.none() | st.integers(), rule=_text, partition=_partition, file=_maybe,
                    message=_text, reordered_before=st.lists(st.integers(), max_size=3), checks=st.lists(_check, max_size=3),
                    profile=_text, certainty=st.sampled_from(list(Bound)), why=_text, error_class=_maybe)
_verdict = st.builds(CommitVerdict, version=st.integers(0, 1 << 40), read_version=st.none() | st.integers(-1, 1 << 40),
                     window=st.lists(st.integers(0, 1 << 40), max_size=4), verdict=st.sampled_from(["clean", "reordered", "anomaly", "skipped"]),
                     operation=_maybe, exception=_maybe, winning_version=st.none() | st.integers(), rule=_maybe, partition=_partition,
                     file=_maybe, reordered_before=st.lists(st.integers(), max_size=3), profile=_text, profile_why=_text,
                     profile_description=_text, isolation_level=_maybe, certainty=st.sampled_from([b.value for b in Bound]),
                     why=_text, likely_reason=_maybe, message=_maybe, result=st.none() | _result)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_verdict)
@example(CommitVerdict(version=3, read_version=1, window=[2], verdict="clean", why="\udc80 a lone surrogate",
                       partition={"d": None, "\u00e9": "x"}))
def test_a_verdict_crosses_the_wire_exactly(v):
    """Every field by name; the window result stays behind, computed on first use when there is one."""
    asked = []

    def rebuilt():
        asked.append(v.version)
        return v.result

    wire = json.dumps(second.verdict_to_wire(v))
    assert "checks" not in json.loads(wire)
    got = second.verdict_from_wire(json.loads(wire), rebuilt)
    assert not asked
    assert got == v  # `==` reads `result`: rebuilt now, once
    assert asked == ([v.version] if v.result is not None else [])
    got.result
    assert len(asked) <= 1


def test_a_child_whose_parent_is_killed_stops(tmp_path):
    """The tool killed mid-replay (SIGKILL): its child notices within seconds and exits."""
    # A parent starts the child on inputs that never come (a FIFO nobody writes: it waits there), and dies.
    os.mkfifo(tmp_path / "header.json")
    code = ("import os, subprocess, sys, time; "
            f"p = subprocess.Popen([sys.executable, '-m', 'forensics.replay.second', {str(tmp_path)!r}, str(os.getpid())]); "
            "print(p.pid, flush=True); time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    child = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _running(child):
        time.sleep(0.2)
    assert not _running(child)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_child_that_answers_for_fewer_windows_is_made_up_for(tmp_path, monkeypatch, caplog, spark):
    """An answer cut short (the real child's last line dropped on its way out, exit status 0) is not
    taken: this process replays that half."""
    one, _ = _one_and_two("busy", monkeypatch)
    short = tmp_path / "python"
    short.write_text(f'#!/bin/sh\n"{sys.executable}" "$@" | head -n -1\n')
    short.chmod(0o755)
    monkeypatch.setattr(second, "PYTHON", str(short))
    monkeypatch.setattr(second, "MIN_WINDOWS", 1)
    with caplog.at_level(logging.INFO, logger="forensics"):
        got = replay_table(DeltaLog.open(str(REPO / "sample_logs" / "busy" / "table")))
    assert "verdict(s) for" in caplog.text and "replayed in this one" in caplog.text
    assert list(got.verdicts.values()) == list(one.verdicts.values())
