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
JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# The warm engine's JVM lives for minutes and compiles its hot code while idle
# (forensics/engine/warmup.py): the full tiered JIT, about a third less CPU per read once warm.
# (A small heap given back after each read, -Xms64m -XX:MaxHeapFreeRatio=30, saved ~150 MB at a
# 1M-file snapshot's peak but cost 5-6 full collections, ~0.7 s, per 20,000-commit first look.)
ENGINE_JVM_OPTS = "-XX:+UseSerialGC"
_resident = False


def mark_resident() -> None:
    """This process is the warm engine: its JVM is started with ENGINE_JVM_OPTS."""
    global _resident
    _resident = True


def default_jvm_opts() -> str:
    """The driver JVM's flags unless DELTA_FORENSICS_JVM_OPTS sets them."""
    return ENGINE_JVM_OPTS if _resident else JVM_OPTS


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
