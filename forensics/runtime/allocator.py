"""polars' allocator told to hand freed memory back to the system at once.

polars allocates through its own jemalloc, which it tells to keep freed pages for half a second
and more (polars puts `dirty_decay_ms:500,muzzy_decay_ms:1000` before whatever the variable
holds; jemalloc takes the last value of an option). A large read frees and allocates column after column (a 1M-file
snapshot: the checkpoint's rows, their keys, the gathered active files), so the pages one step
let go were still held while the next allocated: the in-process peak of that snapshot's Python
side went 615 → 556 MB with them handed back at once, and the resident engine keeps ~130 MB less
between commands; no slower on this machine (BENCHMARKS.md). jemalloc reads the setting once,
when polars loads, so it is set before anything imports polars; a value the user set is kept.
"""

from __future__ import annotations

import os
import sys

# tikv-jemallocator (polars' allocator) reads its options from this variable, not MALLOC_CONF.
POLARS_MALLOC_CONF = ("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")


def return_freed_memory() -> bool:
    """Ask polars' allocator, if polars is not loaded yet, to return freed pages at once (and the
    processes this one starts: the engine). False when it is too late or the user chose."""
    name, value = POLARS_MALLOC_CONF
    if "polars" in sys.modules or name in os.environ:
        return False
    os.environ[name] = value
    return True
