"""Finding a Java that can run Spark, and the driver JVM's options.

Separate from session construction so the class-data archive (jvm_archive) can key itself on
the Java binary without importing the session code.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from forensics.errors import ExitCode, ForensicsError

MIN_JAVA = 17
# A forensics run is a short job on small data: C1-only JIT and the serial collector cut the
# driver's CPU for JVM start + one log read by ~40% on 2 cores (BENCHMARKS.md). Override with
# DELTA_FORENSICS_JVM_OPTS (e.g. "" for the JVM defaults).
# -XX:-DontCompileHugeMethods: HotSpot compiles no method over 8,000 bytes of bytecode without
# it. The commit parse's generated code once had such a method (~10,700 bytes, run interpreted: a
# quarter of the parse's JVM time, JFR); it is split now (forensics/log/reader.py `_rows`,
# held under the limit by tests/test_reader.py), and the flag stays for a command's short C1 JVM
# in case a plan still has one (docs/performance.md, "The parse's generated methods"). Not for
# the full JIT: in the warm engine C2's compiles of such methods made a 1M-file snapshot slower
# (6.3 s against 4.9 s) and its peaks higher (up to 2.0 GB against 1.5 GB in a bench run).
HUGE_METHODS = "-XX:-DontCompileHugeMethods"
JVM_OPTS = f"-XX:TieredStopAtLevel=1 -XX:+UseSerialGC {HUGE_METHODS}"
# The warm engine's JVM lives for minutes and compiles its hot code while idle
# (forensics/engine/warmup.py): the full tiered JIT, about a third less CPU per read once warm.
# (A small heap given back after each read, -Xms64m -XX:MaxHeapFreeRatio=30, saved ~150 MB at a
# 1M-file snapshot's peak but cost 5-6 full collections, ~0.7 s, per 20,000-commit first look.)
ENGINE_JVM_OPTS = "-XX:+UseSerialGC"
# A first read this long repays C2's compiles even in a fresh JVM, so its JVM starts with
# ENGINE_JVM_OPTS too. Measured on 2 cores (BENCHMARKS.md, "The JIT by the read's length"), a
# cold `history --no-cache`, C1 only against full tiered: 49 MB of commit JSON 13.5-14.3 s
# against 20.9-23.5 s; 184 MB 38-43 s against 32-39 s; 1.7 GB, the Spark job alone 171 s against
# 75 s (BENCHMARKS.md). The two cross near 130 MB.
LONG_READ_BYTES = 128 << 20
_resident = False
_first_read = 0  # the bytes of the longest read asked for before the JVM starts


def mark_resident() -> None:
    """This process is the warm engine: its JVM is started with ENGINE_JVM_OPTS."""
    global _resident
    _resident = True


def expect_read(n_bytes: int) -> None:
    """A read of `n_bytes` of commit JSON is about to run (the listing says so before Spark
    starts): a JVM not yet started takes the full JIT when it is a long one. Too late once the
    JVM runs; harmless then."""
    global _first_read
    _first_read = max(_first_read, n_bytes)


def long_first_read() -> bool:
    """Whether the JVM about to start is for a read of LONG_READ_BYTES or more."""
    return _first_read >= LONG_READ_BYTES


def default_jvm_opts() -> str:
    """The driver JVM's flags unless DELTA_FORENSICS_JVM_OPTS sets them: C1 only for the short
    job a forensics command usually is, the full tiered JIT for the engine and for a long read."""
    return ENGINE_JVM_OPTS if _resident or long_first_read() else JVM_OPTS


@dataclass(frozen=True)
class JavaInfo:
    path: str | None
    major: int | None
    raw: str


def find_java() -> JavaInfo:
    """Locate `java` the way spark-submit does: $JAVA_HOME/bin/java, else PATH."""
    candidates = []
    home = os.environ.get("JAVA_HOME")
    if home:
        candidates.append(str(Path(home) / "bin" / "java"))
    which = shutil.which("java")
    if which:
        candidates.append(which)
    for c in candidates:
        if not Path(c).exists():
            continue
        try:
            out = subprocess.run([c, "-version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            return JavaInfo(c, None, str(e))
        text = (out.stderr or "") + (out.stdout or "")
        m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
        major = None
        if m:
            major = int(m.group(1))
            if major == 1 and m.group(2):  # "1.8.0_292" style
                major = int(m.group(2))
        return JavaInfo(c, major, text.strip().splitlines()[0] if text.strip() else "")
    return JavaInfo(None, None, "")


def check_java() -> JavaInfo:
    """Fail early, in one line, when Spark could not start for lack of a suitable Java."""
    info = find_java()
    if info.path is None:
        raise ForensicsError(
            ExitCode.JAVA,
            f"Java {MIN_JAVA}+ is required to run Spark but none was found; install OpenJDK {MIN_JAVA} "
            f"(e.g. `apt-get install openjdk-{MIN_JAVA}-jre-headless`) or set JAVA_HOME",
        )
    if info.major is not None and info.major < MIN_JAVA:
        raise ForensicsError(
            ExitCode.JAVA,
            f"Java {info.major} found at {info.path}, but Spark needs Java {MIN_JAVA}+; install OpenJDK "
            f"{MIN_JAVA} and point JAVA_HOME at it",
        )
    return info
