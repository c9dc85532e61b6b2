"""Work left until after the answer (forensics/runtime/after_answer.py): the warm engine's cache
writes. In-process nothing is deferred; inside `collecting()` a task waits for `run()`, and a read
of what it would write (`settle`, the cache's `current_dir`) makes it happen first."""

from __future__ import annotations

import logging

import polars as pl

from forensics.log import cache as C
from forensics.runtime import after_answer


def test_without_a_collector_a_task_runs_at_once():
    ran: list[str] = []
    after_answer.later("k", lambda: ran.append("now"))
    assert ran == ["now"]


def test_a_collected_task_waits_for_run_and_keeps_its_order():
    ran: list[str] = []
    with after_answer.collecting() as pending:
        after_answer.later("a", lambda: ran.append("a1"))
        after_answer.later("b", lambda: ran.append("b1"))
        after_answer.later("a", lambda: ran.append("a2"))  # a's first task runs before a second is held
        assert ran == ["a1"]
        assert pending.run() == 2
        assert ran == ["a1", "b1", "a2"]
        assert pending.run() == 0


def test_settle_runs_only_the_pending_task_of_its_key():
    ran: list[str] = []
    with after_answer.collecting() as pending:
        after_answer.later("a", lambda: ran.append("a"))
        after_answer.later("b", lambda: ran.append("b"))
        after_answer.settle("b")
        assert ran == ["b"]
        after_answer.settle("b")
        assert ran == ["b"]
        pending.run()
    assert ran == ["b", "a"]


def test_tasks_of_a_command_that_ended_without_its_answer_are_dropped():
    ran: list[str] = []
    try:
        with after_answer.collecting():
            after_answer.later("a", lambda: ran.append("a"))
            raise RuntimeError("the command failed")
    except RuntimeError:
        pass
    after_answer.settle("a")
    assert ran == []


def test_a_failing_task_is_logged_not_raised(caplog):
    def broken() -> None:
        raise OSError("disk full")

    with caplog.at_level(logging.WARNING, logger="forensics"):
        with after_answer.collecting() as pending:
            after_answer.later("cache /x", broken)
            pending.run()
    assert "could not finish cache /x: OSError" in caplog.text


def test_a_cache_generation_written_while_collecting_is_published_by_its_first_read(tmp_path):
    cache_dir = tmp_path / "t"
    commits = pl.DataFrame({"version": [0, 1]})
    actions = pl.DataFrame({"version": [0, 1], "path": ["a", "b"]})
    others = pl.DataFrame({"version": [0], "kind": ["commitInfo"]})
    meta = {"location": "file:///t", "max_version": 1, "fingerprint": {"0": [], "1": []}}
    with after_answer.collecting() as pending:
        C.write(cache_dir, meta, commits, actions, others)
        assert not (cache_dir / C.POINTER).exists()  # not yet: the answer goes first
        gen = C.current_dir(cache_dir)  # a read settles it
        assert gen is not None and (gen / "commits.parquet").is_file()
        assert pending.run() == 0
    got = C.load(cache_dir, "file:///t", lambda vs: pl.DataFrame())
    assert got is not None and got[0]["version"].to_list() == [0, 1] and got[1]()["path"].to_list() == ["a", "b"]
