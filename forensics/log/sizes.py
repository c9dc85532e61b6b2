"""What the commit files about to be parsed ask of the driver heap, from the listing alone.

Spark cannot be resized once its JVM runs, and a JVM that runs out of heap dies without a word
to Python; so before Spark starts (or reads) the biggest files are measured here: their size
from the listing, their longest line by a quick scan of the bytes (only for files large enough to
matter). forensics/runtime/heap.py turns that into `spark.driver.memory` or a one-line refusal.
"""

from __future__ import annotations

import heapq
from operator import attrgetter
from typing import Sequence

from forensics.log.listing import LogFile, is_local
from forensics.runtime.heap import HeapNeed, need_for, reserve

SCAN_MIN_BYTES = 4 << 20  # below this a file's size stands in for its longest line
_CHUNK = 16 << 20
PARALLEL_FILES = 2  # local[2]: two files are parsed at once
_size = attrgetter("size")


def longest_line(f: LogFile) -> int:
    """Bytes in the longest line of a local file (its size when it cannot be scanned)."""
    if f.size < SCAN_MIN_BYTES or not is_local(f.uri):
        return f.size
    best = run = 0
    try:
        with open(f.uri[5:] if f.uri.startswith("file:") else f.uri, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                pieces = chunk.split(b"\n")
                if len(pieces) == 1:
                    run += len(chunk)
                    continue
                best = max(best, run + len(pieces[0]), max(map(len, pieces[1:-1]), default=0))
                run = len(pieces[-1])
    except OSError:
        return f.size
    return max(best, run)


def reserve_heap_for(files: Sequence[LogFile], versions: dict[str, int]) -> None:
    """Reserve the driver heap parsing `files` needs (raises a one-line ForensicsError naming
    the biggest file when this machine or the running session cannot give it)."""
    if not files:
        return
    biggest = heapq.nlargest(PARALLEL_FILES, files, key=_size)  # not a sort of a million files
    needs = []
    for f in biggest:
        line = longest_line(f)
        needs.append((need_for(f.size, line), f, line))
    top_need, top, top_line = max(needs, key=lambda n: n[0])
    reserve(HeapNeed(sum(n for n, _, _ in needs), f"_delta_log/{top.name}", versions.get(top.uri), top.size, top_line))
