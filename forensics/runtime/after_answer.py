"""Work a command may finish after its answer is out: the warm engine's cache writes.

Publishing a parsed log into the cache costs ~0.4 s at 20,000 commits and seconds at a million,
and the user waiting on a first look needs none of it. Inside the warm engine (and only there,
where the process outlives the command) `later(key, task)` keeps the task until the engine has
sent the answer; in-process, with nothing collecting, the task runs at once as before. Whoever
reads what a pending task would write calls `settle(key)` first, which runs it there and then,
so a second read in the same command (or the next command) never misses it.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable, Iterator

from forensics.runtime.logs import logger

_lock = threading.Lock()
_collecting = 0
_pending: dict[str, Callable[[], None]] = {}


def later(key: str, task: Callable[[], None]) -> None:
    """Run `task` after the answer when an engine collects, else now. A task already pending
    for `key` runs first: tasks of one key keep their order."""
    with _lock:
        if _collecting == 0:
            task_now = task
        else:
            task_now = _pending.pop(key, None)
            _pending[key] = task
    if task_now is not None:
        _run(key, task_now)


def settle(key: str) -> None:
    """Run the task pending for `key`, if any, before its result is read."""
    with _lock:
        task = _pending.pop(key, None)
    if task is not None:
        _run(key, task)


@contextmanager
def collecting() -> Iterator["Pending"]:
    """Hold `later` tasks until `Pending.run()` (the engine, once the answer is sent). Tasks left
    unrun when the block ends (a command that failed or was declined) are dropped."""
    global _collecting
    with _lock:
        _collecting += 1
    pending = Pending()
    try:
        yield pending
    finally:
        with _lock:
            _collecting -= 1
            if _collecting == 0:
                _pending.clear()


class Pending:
    def run(self) -> int:
        """Run every pending task in the order they were deferred; how many ran."""
        with _lock:
            tasks = list(_pending.items())
            _pending.clear()
        for key, task in tasks:
            _run(key, task)
        return len(tasks)


def _run(key: str, task: Callable[[], None]) -> None:
    try:
        task()
    except Exception as e:  # noqa: BLE001 - what runs after an answer only costs speed when it fails
        logger.warning("could not finish %s: %s", key, type(e).__name__)
