"""Work a command may finish after its answer is out: the cache writes of a first look.

Publishing a parsed log into the cache costs ~0.4 s at 20,000 commits and ~10 s at a million,
and the user waiting on a first look needs none of it. Inside the warm engine (where the process
outlives the command) `later(key, task)` keeps the task until the engine has sent the answer. A
command the CLI runs in-process (`beside_the_command()`) runs it on a thread of its own while the
command goes on to its answer (the Parquet writer works outside the GIL), and waits for it before the
process ends. Anywhere else (a notebook, the Python API) the task runs at once. Whoever reads
what a task would write calls `settle(key)` first, which runs it or waits for it, so a second
read in the same command (or the next command) never misses it.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable, Iterator

from forensics.runtime.logs import logger

_lock = threading.Lock()
_collecting = 0
_pending: dict[str, Callable[[], None]] = {}
_beside = 0
_running: dict[str, threading.Thread] = {}  # beside_the_command(): the last task started for each key


def later(key: str, task: Callable[[], None]) -> None:
    """Run `task` after the answer when an engine collects, on a thread beside the command under
    `beside_the_command()`, else now. Tasks of one key keep their order: one already pending or
    running for `key` finishes first."""
    with _lock:
        if _collecting:
            task_now = _pending.pop(key, None)
            _pending[key] = task
        elif _beside:
            before = _running.get(key)
            thread = threading.Thread(target=_after, args=(before, key, task), name=f"after-answer {key}", daemon=True)
            _running[key] = thread
            thread.start()
            return
        else:
            task_now = task
    if task_now is not None:
        _run(key, task_now)


def settle(key: str) -> None:
    """Run the task pending for `key`, or wait for the one running, before its result is read."""
    with _lock:
        task = _pending.pop(key, None)
        thread = _running.get(key)
    if thread is not None and thread is not threading.current_thread():
        thread.join()
    if task is not None:
        _run(key, task)


@contextmanager
def beside_the_command() -> Iterator[None]:
    """Run `later` tasks on threads while the block goes on (the CLI's in-process command, whose
    answer needs none of them); the block ends when every one has finished. An engine collecting
    tasks takes precedence."""
    global _beside
    with _lock:
        _beside += 1
    try:
        yield
    finally:
        with _lock:
            _beside -= 1
            threads = list(_running.values()) if _beside == 0 else []
        for thread in threads:
            thread.join()
        with _lock:
            for key, thread in list(_running.items()):
                if not thread.is_alive():
                    del _running[key]


def _after(before: threading.Thread | None, key: str, task: Callable[[], None]) -> None:
    if before is not None:
        before.join()
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
