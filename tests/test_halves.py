"""A loop in two processes (forensics/runtime/halves.py): the commit index's commitInfo decode,
half of it in a child process. Real children: the result equals the one-process loop whatever
the texts, a child that fails is made up for here, and nothing outside `LOOPS` runs there."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from forensics.log.params import commit_info_columns, concat_columns
from forensics.runtime import halves

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(halves.cores() < 2, reason="the second process runs with two cores or more")


def _commit_infos() -> list[str | None]:
    """Every commitInfo text of the repo's sample tables (None for a commit without one)."""
    out: list[str | None] = []
    for f in sorted(REPO.glob("sample_logs/*/table/_delta_log/*.json")) + sorted(REPO.glob("sample_logs/*/_delta_log/*.json")):
        ci = None
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.startswith('{"commitInfo"'):
                ci = json.dumps(json.loads(line)["commitInfo"])
        out.append(ci)
    return out


def test_the_commit_index_decode_in_two_processes_equals_one():
    raws = _commit_infos()
    assert len(raws) > 50 and sum(r is not None for r in raws) > 50
    has = [r is not None for r in raws]
    one = commit_info_columns(raws, has)
    two = halves.in_two(commit_info_columns, concat_columns, raws, has, min_items=0)
    assert two == one
    assert len(two["operation_parameters"]) == len(raws)


_json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=6),
                            lambda v: st.lists(v, max_size=3) | st.dictionaries(st.text(max_size=6), v, max_size=3), max_leaves=8)
_commit_info = st.dictionaries(
    st.sampled_from(["operation", "operationParameters", "operationMetrics", "tags", "userId", "job", "clientVersion", "writer"]),
    _json_values, max_size=6).map(json.dumps)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.none(), _commit_info, st.text(max_size=12)), min_size=2, max_size=60))
@example(['{"userId": "\\udc80"}', '{"operationParameters": {"predicate": "[\\"a\\"]"}}'])  # a lone surrogate crosses intact
def test_the_halves_are_the_loop_whatever_the_texts(raws):
    has = [r is not None for r in raws]
    assert halves.in_two(commit_info_columns, concat_columns, raws, has, min_items=0) == commit_info_columns(raws, has)


def test_a_failed_child_half_is_computed_here(monkeypatch, caplog):
    """A child that cannot run at all (here: its interpreter exits 1 at once)."""
    monkeypatch.setattr(halves, "PYTHON", "/bin/false")
    raws = _commit_infos()
    has = [r is not None for r in raws]
    with caplog.at_level(logging.INFO, logger="forensics"):
        got = halves.in_two(commit_info_columns, concat_columns, raws, has, min_items=0)
    assert got == commit_info_columns(raws, has)
    assert f"the second process's half of {len(raws) - len(raws) // 2} item(s) failed (exit 1" in caplog.text


def test_the_child_runs_only_the_listed_loops():
    r = subprocess.run([sys.executable, "-m", "forensics.runtime.halves", "os:system"], input=b'[["true"]]',
                       capture_output=True, timeout=60)
    assert r.returncode == 2 and b"not a loop this module runs" in r.stderr and not r.stdout


def test_short_lists_and_unlisted_loops_stay_in_this_process(monkeypatch):
    monkeypatch.setattr(halves, "PYTHON", "/nonexistent/python")  # a child would log its failure and still answer
    calls: list[int] = []

    def fn(xs: list[int]) -> list[int]:
        calls.append(len(xs))
        return xs

    assert halves.in_two(fn, lambda a, b: a + b, list(range(10)), min_items=0) == list(range(10))  # not in LOOPS
    assert calls == [10]
    raws = ['{"userId": "a"}'] * 10
    assert halves.in_two(commit_info_columns, concat_columns, raws, [True] * 10)["user_id"] == ["a"] * 10  # under MIN_ITEMS
