"""polars' allocator in the warm engine told to hand freed memory back at once.

polars allocates through its own jemalloc, which it tells to keep freed pages for half a second
and more (polars puts `dirty_decay_ms:500,muzzy_decay_ms:1000` before whatever the variable
holds; jemalloc takes the last value of an option). A large read frees and allocates column after
column (a 1M-file snapshot: the checkpoint's rows, their keys, the gathered active files), so the
pages one step let go were still held while the next allocated. The engine, a process that lives
for minutes and serves one large read after another, is started with them handed back at once:
in an interleaved A/B through it, the 1M-file snapshot's peak 1,510-1,556 → 1,448-1,454 MB and
its Python between commands 369-398 → 278-292 MB, no slower. A command's own short process keeps
polars' default: there the same setting made a 20,000-commit first look 2-3 s slower (3 rounds).
jemalloc reads the setting once, when polars loads; a value the user set is kept.
"""

from __future__ import annotations

from typing import Callable, MutableMapping

# tikv-jemallocator (polars' allocator) reads its options from this variable, not MALLOC_CONF.
POLARS_MALLOC_CONF = ("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")
# What polars itself writes into the variable when it loads (followed by `,` and any value it
# found there): a process that imported polars hands this on to the processes it starts.
_POLARS_OWN = "dirty_decay_ms:500,muzzy_decay_ms:1000"


def return_freed_memory(env: MutableMapping[str, str]) -> bool:
    """Set, in the environment a process is started with (or `os.environ` before polars loads),
    polars' allocator to return freed pages at once. False when the user chose a value."""
    name, value = POLARS_MALLOC_CONF
    given = env.get(name)
    if given is not None and given.rstrip(",") != _POLARS_OWN:
        return False
    env[name] = f"{_POLARS_OWN},{value}" if given else value  # jemalloc takes an option's last value
    return True


_trim: Callable[[int], int] | None | bool = False  # False: not looked up yet; None: no glibc


def trim_c_heap() -> bool:
    """Hand the C heap's free pages back to the system (glibc's `malloc_trim`); False where the C
    library has none (musl, macOS).

    Python's objects and Spark's Py4J buffers live in glibc's heap, which keeps what a command
    freed for the next allocation. In the warm engine, which idles between commands, that kept
    ~90 MB after a few first looks and raised the next command's peak by as much (an A/B through
    the engine, a 1M-file snapshot after three first looks: Python at rest 342-396 → 253-257 MB,
    its peak 681-716 → 582-598 MB; docs/performance.md). Called once per command, after its
    answer is sent and its cache written (engine/server.py), not inside a read: there a trim per
    step bought nothing measurable. The price: the next command faults the pages in again, about
    0.1 s on a cached look through the engine.
    """
    global _trim
    if _trim is False:
        import ctypes

        try:
            _trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
        except OSError:
            _trim = None
    if _trim is None:
        return False
    _trim(0)  # type: ignore[operator]
    return True
