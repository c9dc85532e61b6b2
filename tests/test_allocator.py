"""polars' allocator hands freed memory back at once in the warm engine
(forensics/runtime/allocator.py): measured on a real polars frame in a fresh interpreter; the
engine's own environment is checked in tests/test_engine.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Sets the allocator's option as `delta-forensics` does (or not), builds and frees a ~300 MB
# frame, and prints the resident MB right after the free and whether the option was set.
PROBE = r"""
import json, os, sys
from forensics.runtime.allocator import return_freed_memory
asked = return_freed_memory(os.environ) if sys.argv[1] == "ask" else False
import polars as pl
def rss(): return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
df = pl.DataFrame({"a": range(5_000_000)}).with_columns(pl.col("a").cast(pl.Utf8).alias("s")).sort("s")
live = rss()
del df
print(json.dumps({"asked": asked, "live": live, "freed": rss(), "conf": os.environ.get("_RJEM_MALLOC_CONF")}))
"""


def _probe(mode: str, **env: str) -> dict:
    e = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"} | env | {"PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", PROBE, mode], env=e, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def test_freed_memory_goes_back_at_once_when_asked_before_polars_loads():
    asked, plain = _probe("ask"), _probe("no")
    assert asked["asked"] and asked["conf"].endswith("dirty_decay_ms:0,muzzy_decay_ms:0")  # polars puts its defaults first
    assert asked["live"] - asked["freed"] > 80, asked  # the frame's pages left at its `del`
    assert plain["live"] - plain["freed"] < 50, plain  # polars' default keeps them for a while


def test_a_users_own_setting_is_kept():
    got = _probe("ask", _RJEM_MALLOC_CONF="narenas:2")
    assert not got["asked"] and got["conf"].endswith("narenas:2") and "dirty_decay_ms:0" not in got["conf"]


def test_polars_own_defaults_handed_on_by_a_process_that_loaded_it_are_not_a_users_choice():
    from forensics.runtime.allocator import return_freed_memory

    for polars_own in ("dirty_decay_ms:500,muzzy_decay_ms:1000", "dirty_decay_ms:500,muzzy_decay_ms:1000,"):
        env = {"_RJEM_MALLOC_CONF": polars_own}
        assert return_freed_memory(env) and env["_RJEM_MALLOC_CONF"] == "dirty_decay_ms:500,muzzy_decay_ms:1000,dirty_decay_ms:0,muzzy_decay_ms:0"
    env = {"_RJEM_MALLOC_CONF": "dirty_decay_ms:500,muzzy_decay_ms:1000,narenas:2"}
    assert not return_freed_memory(env) and env["_RJEM_MALLOC_CONF"].endswith("narenas:2")



# Fills glibc's heap with ~200 MB of Python objects (over 512 bytes each: Python takes them from
# malloc), pins the top with one more, frees the rest, and prints the resident MB then and after
# trim_c_heap (or after nothing).
TRIM_PROBE = r"""
import json, os, sys
from forensics.runtime.allocator import trim_c_heap
def rss(): return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
held = [bytes(1000) + bytes([i % 256]) for i in range(200_000)]
pin = bytes(2000) + b"pin"
live = rss()
del held
freed = rss()
trimmed = trim_c_heap() if sys.argv[1] == "trim" else None
print(json.dumps({"live": live, "freed": freed, "after": rss(), "trimmed": trimmed}))
"""


def _trim_probe(mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", TRIM_PROBE, mode], env={**os.environ, "PYTHONPATH": str(REPO)},
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def test_the_c_heap_keeps_what_python_freed_until_trimmed():
    import platform

    if platform.libc_ver()[0] != "glibc":
        import pytest

        pytest.skip("malloc_trim is glibc's")
    kept, trimmed = _trim_probe("none"), _trim_probe("trim")
    assert kept["live"] - kept["after"] < 50, kept  # freed, yet still resident: what the engine idled with
    assert trimmed["trimmed"] is True
    assert trimmed["live"] - trimmed["freed"] < 50, trimmed  # the same before the trim
    assert trimmed["freed"] - trimmed["after"] > 120, trimmed  # and handed back by it
