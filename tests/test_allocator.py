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

