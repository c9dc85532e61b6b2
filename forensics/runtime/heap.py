"""The driver heap, sized from the listing before Spark starts, or a one-line refusal.

Local mode parses commit files inside the driver JVM, one whole file per row and then a line
at a time. A JVM that runs out of heap dies (SparkUncaughtExceptionHandler exits) and Python only
sees "Connection refused". The listing knows every file's size before the JVM starts, so the heap
is chosen from it, and a file no heap on this machine could parse is named instead of read.

Measured on 2 cores (local[2], BENCHMARKS.md "sizes beyond the heap"): one 37 MB line (a map of
1M entries) needed 1-2 GB, a 40 MB string 0.5-1 GB, a 150 MB string 3-5 GB, while a 127 MB commit
of 1M short lines fits in 2 GB. The figures below keep a margin over the worst of these.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any, Callable

from forensics.errors import ExitCode, ForensicsError
from forensics.runtime.master import is_local

HEAP_BASE = 384 << 20  # the JVM, Spark and the plan
HEAP_PER_LINE_BYTE = 48  # Jackson's tokens, the parsed row and its copies (worst seen: ~40x a line)
HEAP_PER_FILE_BYTE = 3  # the file's bytes, its text, the split lines
DEFAULT_DRIVER_MEMORY = "2g"
SHARE_OF_RAM = 0.6  # never size the heap past this share of the machine's memory

_lock = threading.Lock()
_reserved: "HeapNeed | None" = None
_planned: str | None = None


@dataclass(frozen=True)
class HeapNeed:
    """What parsing one file asks of the driver heap beyond HEAP_BASE, and which file it is."""

    bytes: int
    file: str | None = None
    version: int | None = None
    size: int = 0
    longest_line: int = 0

    def describe(self) -> str:
        return f"the commit file is {_mib(self.size)}, its longest line {_mib(self.longest_line)}"


def need_for(size: int, longest_line: int) -> int:
    """Heap beyond HEAP_BASE to parse one commit file of `size` bytes with that longest line."""
    return HEAP_PER_FILE_BYTE * size + HEAP_PER_LINE_BYTE * longest_line


# Called (need, running heap) before a need beyond the running session's heap is refused; the
# warm engine (forensics/engine/server.py) sets it to hand the command back to its client.
beyond_running_heap: Callable[[HeapNeed, int], None] | None = None
_session: Any = None  # the process's one session, as forensics.runtime.spark started it
_session_key: Any = None


def note_session(session: Any, key: Any) -> None:
    """forensics.runtime.spark tells which session runs (so a later need is checked against its heap)."""
    global _session, _session_key
    with _lock:
        _session, _session_key = session, key


def reserve(need: HeapNeed) -> None:
    """Ask for `need` before Spark reads. Before our session starts this sizes it (see
    `driver_memory`); once a local session runs, a need beyond its heap is refused in one line."""
    global _reserved
    with _lock:
        session, key = _session, _session_key
        if session is None:
            if _reserved is None or need.bytes > _reserved.bytes:
                _reserved = need
            return
    master, remote = key or (None, None)
    if remote or not is_local(master):
        return  # a cluster or Connect: executors parse, with the cluster's memory
    limit = _running_max_heap(session)
    if limit and HEAP_BASE + need.bytes > limit:
        if beyond_running_heap is not None:  # the warm engine: the command runs in-process instead, sized for it
            beyond_running_heap(need, limit)
        raise _too_big(need, limit, "the running Spark session's driver heap")


def plan_start(conf: dict[str, str]) -> None:
    """Choose `spark.driver.memory` for the local session about to start (or refuse)."""
    global _planned
    with _lock:
        _planned = driver_memory(conf, _reserved)


def planned_memory() -> str:
    return _planned or os.environ.get("DELTA_FORENSICS_DRIVER_MEMORY") or DEFAULT_DRIVER_MEMORY


def driver_memory(conf: dict[str, str], need: HeapNeed | None) -> str:
    """The user's setting (checked against the need), else the default raised to the need."""
    explicit = conf.get("spark.driver.memory") or os.environ.get("DELTA_FORENSICS_DRIVER_MEMORY")
    want = HEAP_BASE + need.bytes if need else 0
    if explicit:
        have = parse_size(explicit)
        if need and have and want > have:
            raise _too_big(need, have, f"the {explicit} set by DELTA_FORENSICS_DRIVER_MEMORY or spark.driver.memory")
        return explicit
    if want <= (parse_size(DEFAULT_DRIVER_MEMORY) or 0):
        return DEFAULT_DRIVER_MEMORY
    cap = int(physical_memory() * SHARE_OF_RAM)
    if need and cap and want > cap:
        raise _too_big(need, cap, f"{int(SHARE_OF_RAM * 100)}% of this machine's memory")
    return f"{-(-want // (256 << 20)) * 256}m"


def _too_big(need: HeapNeed, limit: int, what: str) -> ForensicsError:
    gb = -(-(HEAP_BASE + need.bytes) // (1 << 30))
    return ForensicsError(
        ExitCode.SPARK,
        f"{need.describe()}: parsing it needs about {_gib(HEAP_BASE + need.bytes)} of driver heap, more than {what} "
        f"({_gib(limit)}); not read. Set DELTA_FORENSICS_DRIVER_MEMORY={gb}g on a machine with that much memory",
        file=need.file,
        version=need.version,
    )


def _running_max_heap(session: Any) -> int | None:
    try:
        return int(session._jvm.java.lang.Runtime.getRuntime().maxMemory())  # noqa: SLF001
    except Exception:  # noqa: BLE001 - Connect or a caller's session: cannot tell
        return None


def parse_size(text: str) -> int | None:
    """A JVM memory string as Spark reads it (512m, 2g, 1t; bytes without a suffix)."""
    t = text.strip().lower().removesuffix("b")
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}.get(t[-1:], 1)
    try:
        return int(float(t[:-1] if mult > 1 else t) * mult)
    except ValueError:
        return None


def physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.0f} MB" if n >= 1 << 20 else f"{n} bytes"


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GB"
