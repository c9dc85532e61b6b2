"""A pure-Python loop over long lists, run in two processes: this one and a child of its own.

The commit index decodes every commitInfo in Python: at 1,000,000 commits that loop took 18-27 s
on one core while the JVM that had parsed the log sat idle, on a two-core machine. A child
(`python -m forensics.runtime.halves NAME`, a fresh interpreter: no fork of a process holding a
JVM's gateway and polars' threads, and no copy-on-write pages counted twice) is handed the second
half as JSON on its stdin while this process works through the first, and answers in JSON on its
stdout; nothing is unpickled. Only the loops in `LOOPS` run there: plain Python over plain lists,
whose results come back from JSON as they were. If the child fails in any way, this process
computes that half itself, so the result never depends on the child. Below `MIN_ITEMS`, or with
one core, everything runs here.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import subprocess
import sys
import threading
from typing import Any, Callable, TypeVar

from forensics.runtime.children import child_environment
from forensics.runtime.logs import logger

R = TypeVar("R")

# Below this many items (commitInfos: 18-27 µs each) the loop takes a few seconds: not worth a
# child's start and the JSON both ways.
MIN_ITEMS = 200_000

# The loops a child may run, by name: nothing else is imported from its command line.
LOOPS = frozenset({"forensics.log.params:commit_info_columns"})

PYTHON = sys.executable


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _name(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}:{fn.__name__}"


def in_two(fn: Callable[..., R], combine: Callable[[R, R], R], *lists: list, min_items: int | None = None) -> R:
    """`combine(fn(*first halves), fn(*second halves))`, the second half computed by a child
    process when the lists are long enough and `fn` is one of `LOOPS`; else `fn(*lists)`."""
    n = len(lists[0]) if lists else 0
    if n < max(2, MIN_ITEMS if min_items is None else min_items) or cores() < 2 or _name(fn) not in LOOPS:
        return fn(*lists)
    h = n // 2
    try:
        child = subprocess.Popen([PYTHON, "-m", "forensics.runtime.halves", _name(fn)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_environment())
    except OSError as e:
        logger.info("no second process for %d item(s) (%s); computed in this one", n - h, e)
        return fn(*lists)
    feed = threading.Thread(target=_feed, args=(child, [x[h:] for x in lists]), name="halves-feed", daemon=True)
    feed.start()
    try:
        mine = fn(*(x[:h] for x in lists))
        feed.join()
        child.stdin = None  # closed by the feed: communicate() only reads
        out, err = child.communicate()
    except BaseException:
        child.kill()
        child.wait()
        feed.join()
        raise
    try:
        if child.returncode != 0:
            last = (err.decode("utf-8", "replace").strip().splitlines() or [""])[-1]
            raise ValueError(f"exit {child.returncode}: {last[:200]}")
        theirs = json.loads(out)
    except ValueError as e:
        logger.info("the second process's half of %d item(s) failed (%s); computed in this one", n - h, e)
        theirs = fn(*(x[h:] for x in lists))
    return combine(mine, theirs)


def _feed(child: subprocess.Popen, half: list[list]) -> None:
    """The child's half on its stdin (a thread: the pipe holds 64 KB, the half hundreds of MB)."""
    try:
        assert child.stdin is not None
        child.stdin.write(json.dumps(half).encode("ascii"))  # ensure_ascii: lone surrogates cross intact
    except (OSError, ValueError):
        pass  # the child is gone: its exit status says so
    finally:
        try:
            child.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass


def _main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in LOOPS:
        print(f"not a loop this module runs: {argv!r}", file=sys.stderr)
        return 2
    gc.disable()  # many small objects, no cycles: a collector pass would only walk them again and again
    module, _, name = argv[0].partition(":")
    fn = getattr(importlib.import_module(module), name)
    lists = json.loads(sys.stdin.buffer.read())
    sys.stdout.buffer.write(json.dumps(fn(*lists)).encode("ascii"))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
