"""What an engine is keyed by: the tool, Python, Java and Spark it runs, and the static settings
it was started with. A command whose key differs gets another engine (or runs in-process); it
never runs in an engine whose session was started otherwise.

Computed without importing pyspark or running `java -version` (the client's start must stay
cheap): the versions are read from the files that define them, Java by its binary's path and
modification time (a new JDK is a new file).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

# Settings read when the session starts (forensics/runtime): a change needs another engine.
STATIC_ENV = (
    "JAVA_HOME", "SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "HADOOP_CONF_DIR", "PYSPARK_PYTHON",
    "DELTA_FORENSICS_MASTER", "DELTA_FORENSICS_DRIVER_MEMORY", "DELTA_FORENSICS_JVM_OPTS",
    "DELTA_FORENSICS_JVM_ARCHIVE", "DELTA_FORENSICS_JVM_ARCHIVE_DIR", "DELTA_FORENSICS_DELTA",
    "DELTA_FORENSICS_DELTA_JARS", "DELTA_FORENSICS_DELTA_PACKAGE", "DELTA_FORENSICS_CACHE_DIR",
)


@dataclass(frozen=True)
class EngineKey:
    """Everything that must match for a command to run in an engine."""

    tool: str  # forensics.__version__ and a fingerprint of its source files (an edited checkout is a new tool)
    python: str
    spark: str  # pyspark's version file and delta-spark's package, by content/mtime
    java: str  # the java binary spark-submit would run, by real path and mtime
    env: dict[str, str] = field(default_factory=dict)  # STATIC_ENV as set
    conf: dict[str, str] = field(default_factory=dict)  # --conf settings the session takes only at start
    cache_root: str = ""

    def digest(self) -> str:
        text = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def supersedes(self, other: dict[str, object]) -> bool:
        """Whether an engine keyed `other` (its key.json) is an older build of this one: all the
        same but the tool's source, as when a checkout is edited or the package upgraded."""
        mine = self.to_dict()
        return other.get("tool") != mine["tool"] and {k: v for k, v in other.items() if k != "tool"} == {
            k: v for k, v in mine.items() if k != "tool"}

    def describe(self) -> dict[str, str]:
        """What `engine status` shows (names of settings, never their values)."""
        return {"tool": self.tool, "python": self.python, "spark": self.spark, "java": self.java,
                "settings": ", ".join(sorted([*self.env, *self.conf])) or "none"}


def current_key(static_conf: dict[str, str] | None = None, cache_root: str = "") -> EngineKey:
    from forensics import __version__

    return EngineKey(
        tool=f"{__version__}+{_source_fingerprint()}",
        python=f"{sys.executable} {sys.version.split()[0]}",
        spark=_spark_versions(),
        java=_java_identity(),
        env={k: os.environ[k] for k in STATIC_ENV if os.environ.get(k) is not None},
        conf=dict(sorted((static_conf or {}).items())),
        cache_root=cache_root,
    )


def _source_fingerprint() -> str:
    """The package's .py files by name, size and mtime (a few ms for ~200 files)."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                st = os.stat(os.path.join(dirpath, name))
                h.update(f"{dirpath}/{name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()[:12]


def _spark_versions() -> str:
    out = []
    spec = importlib.util.find_spec("pyspark")
    if spec and spec.origin:
        version_file = Path(spec.origin).with_name("version.py")
        try:
            m = re.search(r"__version__\s*[:=][^\"']*[\"']([^\"']+)", version_file.read_text())
            out.append(f"pyspark {m.group(1) if m else '?'}")
        except OSError:
            out.append("pyspark ?")
    delta = importlib.util.find_spec("delta")
    if delta and delta.origin:
        try:
            out.append(f"delta {os.stat(delta.origin).st_mtime_ns}")
        except OSError:
            pass
    return "; ".join(out) or "none"


def _java_identity() -> str:
    """The java spark-submit would run ($JAVA_HOME/bin/java, else PATH), as in forensics.runtime.java."""
    home = os.environ.get("JAVA_HOME")
    for c in ([str(Path(home) / "bin" / "java")] if home else []) + [shutil.which("java") or ""]:
        if c and os.path.exists(c):
            real = os.path.realpath(c)
            return f"{real} {os.stat(real).st_mtime_ns}"
    return "none"
