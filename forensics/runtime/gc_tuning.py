"""Fewer garbage collections while a stage builds many small objects.

Replay, the commit index and snapshots create hundreds of thousands of small records
(FileAction, CommitRecord, verdicts) while the parsed log sits in memory. With CPython's
default gen-0 threshold (700 allocations) the collector runs thousands of times and every
older-generation pass walks the whole loaded log again: a 100k-commit replay spent ~40% of
its time there (10.1 s -> 5.9 s with this, BENCHMARKS.md). These structures hold almost no
reference cycles, so collecting rarely costs little memory. Objects alive on entry are
frozen (excluded from collection) until the outermost stage ends.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, int, int] | None = None
THRESHOLD = (100_000, 50, 100)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Raise the collector's thresholds for the duration (re-entrant, thread-safe)."""
    global _depth, _saved
    with _lock:
        _depth += 1
        if _depth == 1:
            _saved = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(*THRESHOLD)
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                gc.unfreeze()
                _saved = None
