"""The driver JVM's JIT follows the length of the first read (forensics/runtime/java.py).

Each case starts a real JVM in a child process, through the path a command takes (the listing,
the heap and JIT reserved from it, then Spark), and asks that JVM for the flags it runs with.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "sample_logs" / "busy" / "table"

# Open the table without the cache (so the commits are parsed with Spark), optionally with the
# threshold lowered so its few KB count as a long read, and print the JVM's input arguments.
_CODE = """
import json, sys
import forensics.runtime.java as java
from forensics import set_log_level
set_log_level("info")
if sys.argv[2] != "default":
    java.LONG_READ_BYTES = int(sys.argv[2])
from forensics.log.delta_log import DeltaLog
log = DeltaLog.open(sys.argv[1], use_cache=False)
jvm = log.spark()._jvm
args = [str(a) for a in jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()]
print(json.dumps({"args": args, "versions": log.commits.height}))
"""


def _jvm_args(tmp_path: Path, threshold: str) -> tuple[list[str], int, str]:
    env = {k: v for k, v in os.environ.items() if k != "DELTA_FORENSICS_JVM_OPTS"}
    env.update(DELTA_FORENSICS_CACHE_DIR=str(tmp_path / "cache"), DELTA_FORENSICS_JVM_ARCHIVE="off")
    p = subprocess.run([sys.executable, "-c", _CODE, str(TABLE), threshold], capture_output=True, text=True,
                       timeout=300, env=env, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    return out["args"], out["versions"], p.stderr


@pytest.mark.slow
def test_a_short_first_read_starts_the_jvm_with_c1_only(tmp_path):
    args, versions, err = _jvm_args(tmp_path, "default")
    assert versions > 0
    assert "-XX:TieredStopAtLevel=1" in args and "-XX:+UseSerialGC" in args, args
    assert "-XX:-DontCompileHugeMethods" in args, args  # the parse's one huge generated method is compiled
    assert "starting a Spark session" in err and "full JIT" not in err, err


@pytest.mark.slow
def test_a_long_first_read_starts_the_jvm_with_the_full_tiered_jit(tmp_path):
    """The table's bytes above the (lowered) threshold: the JVM compiles with C2 as well."""
    args, versions, err = _jvm_args(tmp_path, "1")
    assert versions > 0
    assert "-XX:+UseSerialGC" in args and not any("TieredStopAtLevel" in a for a in args), args
    assert "-XX:-DontCompileHugeMethods" not in args, args  # C2's compiles of huge methods cost more than they give
    assert "the full JIT for a long first read" in err, err
