"""Work left until after the answer (forensics/runtime/after_answer.py): the warm engine's cache
writes. In-process nothing is deferred; inside `collecting()` a task waits for `run()`, and a read
of what it would write (`settle`, the cache's `current_dir`) makes it happen first."""

from __future__ import annotations

import logging
import threading

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


def test_beside_a_command_a_task_runs_on_its_own_thread_and_the_block_waits_for_it():
    gate, ran = threading.Event(), []

    def task() -> None:
        gate.wait(10)
        ran.append(threading.current_thread().name)

    with after_answer.beside_the_command():
        after_answer.later("k", task)
        assert ran == []  # the command goes on while the task waits
        gate.set()
    assert ran == ["after-answer k"]  # finished by the end of the block, not on the caller's thread


def test_beside_a_command_settle_waits_for_the_running_task_and_a_key_keeps_its_order():
    gate, ran = threading.Event(), []

    def first() -> None:
        gate.wait(10)
        ran.append("a1")

    with after_answer.beside_the_command():
        after_answer.later("a", first)
        after_answer.later("a", lambda: ran.append("a2"))  # waits for a1
        after_answer.later("b", lambda: ran.append("b1"))
        threading.Timer(0.2, gate.set).start()
        after_answer.settle("a")
        assert ran.index("a1") < ran.index("a2")
    assert sorted(ran) == ["a1", "a2", "b1"]


def test_an_engine_collecting_takes_precedence_over_beside():
    ran: list[str] = []
    with after_answer.beside_the_command(), after_answer.collecting() as pending:
        after_answer.later("k", lambda: ran.append("k"))
        assert ran == []
        assert pending.run() == 1
    assert ran == ["k"]


def test_a_first_look_run_in_process_by_the_cli_has_its_cache_written_when_it_returns(tmp_path, monkeypatch, capsys):
    """The CLI writes the cache beside the command and returns only once it is published."""
    from pathlib import Path

    from forensics.cli.main import main
    from forensics.log.listing import normalize_location
    from forensics.runtime.paths import table_cache_dir

    table = Path(__file__).resolve().parents[1] / "sample_logs" / "busy" / "table"
    monkeypatch.setenv("DELTA_FORENSICS_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["history", str(table), "--json", "--no-engine"]) == 0
    assert '"version"' in capsys.readouterr().out
    gen = C.current_dir(table_cache_dir(normalize_location(str(table))))
    assert gen is not None and (gen / "commits.parquet").is_file()
    assert not [t for t in threading.enumerate() if t.name.startswith("after-answer")]
