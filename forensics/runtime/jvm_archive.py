"""A class-data-sharing (AppCDS) archive of the classes a Spark driver loads.

A Spark driver loads some 15,000 classes out of ~250 jars before it runs its first job; on 2
cores that is about half of JVM start. Java 13+ can dump the classes a JVM loaded into an
archive when it exits (`-XX:ArchiveClassesAtExit`) and map them at the next start
(`-XX:SharedArchiveFile`): JVM start plus a first job went from 6.2 s to 3.1 s here
(BENCHMARKS.md). The archive belongs to a Java and Spark installation, not to a table, so it
lives in the user's cache directory under a key of both, and is never written near a table.

Delta's jars, when the session loads them (forensics/runtime/delta_jvm.py: `spark.jars`, a
class loader of Spark's), are archived with the rest as far as the dump of such a loader goes:
the session extension and about half the Delta classes a start loads are mapped from the archive,
lambda forms and the classes it skips come from the jar (tests/test_jvm_archive.py, live).

The first run without an archive writes one as its JVM exits (`python -m forensics.runtime.jvm_archive`
builds it on purpose; `make test` and the benchmark do). A JVM that cannot use an archive
(another Java, changed jars, a truncated file) ignores it and starts as usual (`-Xshare:auto`,
the default). `DELTA_FORENSICS_JVM_ARCHIVE=off` turns all of this off;
`DELTA_FORENSICS_JVM_ARCHIVE=use` uses an existing archive but never writes one.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# HotSpot's magic number for a dynamic archive (the first four bytes, little-endian).
_DYNAMIC_MAGIC = 0xF00BABA8
# A dump takes a few seconds; a part file untouched this long is finished (or abandoned).
_SETTLE_S = 15.0
# Another process is writing the archive: leave it alone for this long before trying again.
_LOCK_S = 600.0
# All of the JVM's unified logging (CDS warnings while dumping included) goes to its stderr,
# which spark.py points at the Spark log file: nothing may reach our stdout.
_QUIET = "-Xlog:disable -Xlog:all=warning:stderr"


@dataclass(frozen=True)
class ArchivePlan:
    """What this JVM start does with the archive: use it, write it at exit, or neither."""

    mode: str  # "use" | "create" | "off"
    path: Path | None
    options: str  # extra driver JVM options


def archive_dir() -> Path:
    env = os.environ.get("DELTA_FORENSICS_JVM_ARCHIVE_DIR")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir  # the user's cache, even when DELTA_FORENSICS_CACHE_DIR moves the tables'

    return Path(user_cache_dir("delta-forensics")) / "jvm"


# Hashed into every key. 2: archives written before `discard_failed_dump` may hold only the
# classes of a start that failed (Delta's jars not resolved); a new key makes each machine write one again.
_FORMAT = "2"


def archive_key(java_path: str | None, java_version: str, jvm_options: str) -> str:
    """Java binary and version, pyspark's jars (where and which) and our JVM options: any change, a new archive."""
    h = hashlib.sha256(_FORMAT.encode() + b"\0")
    for part in (java_path or "", java_version, jvm_options, sys.version.split()[0]):
        h.update(part.encode("utf-8", "replace") + b"\0")
    try:
        import pyspark

        jars = Path(pyspark.__file__).parent / "jars"
        # The JVM checks the archive against the class path itself: another installation of
        # the same release (another virtualenv) needs its own archive.
        h.update(f"{pyspark.__version__}\0{jars.resolve()}\0".encode())
        for e in sorted(os.scandir(jars), key=lambda e: e.name):
            h.update(f"{e.name}:{e.stat().st_size}\0".encode())
    except (ImportError, OSError):
        pass
    return h.hexdigest()[:16]


def _looks_complete(p: Path) -> bool:
    try:
        with open(p, "rb") as fh:
            head = fh.read(4)
        return len(head) == 4 and int.from_bytes(head, "little") == _DYNAMIC_MAGIC and p.stat().st_size > (1 << 20)
    except OSError:
        return False


def _paths(key: str) -> tuple[Path, Path, Path]:
    d = archive_dir()
    return d / f"spark-{key}.jsa", d / f"spark-{key}.jsa.part", d / f"spark-{key}.lock"


def plan(java_path: str | None, java_version: str, jvm_options: str) -> ArchivePlan:
    """Decide, without blocking, what the next driver JVM does with the archive."""
    setting = os.environ.get("DELTA_FORENSICS_JVM_ARCHIVE", "auto").strip().lower()
    if setting in ("off", "0", "no", "false"):
        return ArchivePlan("off", None, "")
    final, part, lock = _paths(archive_key(java_path, java_version, jvm_options))
    now = time.time()
    try:
        if not final.exists() and part.exists() and now - part.stat().st_mtime > _SETTLE_S:
            _finish(part, final)
        if final.exists():
            return ArchivePlan("use", final, f"{_QUIET} -XX:SharedArchiveFile={final}")
        if setting == "use":
            return ArchivePlan("off", None, "")
        if lock.exists() and now - lock.stat().st_mtime < _LOCK_S:
            return ArchivePlan("off", None, "")  # another process is writing it
        final.parent.mkdir(parents=True, exist_ok=True)
        _prune(final.parent, now)
        lock.write_text(str(os.getpid()))
        part.unlink(missing_ok=True)
        return ArchivePlan("create", part, f"{_QUIET} -XX:ArchiveClassesAtExit={part}")
    except OSError:
        return ArchivePlan("off", None, "")  # an unwritable cache costs speed, never a run


# Archives of installations not started for this long are removed when a new one is made
# (each is ~160 MB; every pyspark upgrade or virtualenv makes another).
_UNUSED_S = 30 * 24 * 3600


def _prune(d: Path, now: float) -> None:
    for p in d.glob("spark-*.jsa"):
        try:
            st = p.stat()
            if now - max(st.st_atime, st.st_mtime) > _UNUSED_S:
                p.unlink()
        except OSError:
            pass


def _finish(part: Path, final: Path) -> None:
    """A finished dump becomes the archive; a truncated one (a killed JVM) is dropped."""
    if _looks_complete(part):
        os.replace(part, final)
    else:
        part.unlink(missing_ok=True)
    final.with_suffix(".lock").unlink(missing_ok=True)


def discard_failed_dump(java_path: str | None, java_version: str, jvm_options: str) -> None:
    """Drop what a JVM of this process dumped after failing to start, and the lock it held.

    A first start that asks Ivy for Delta's jars and cannot have them (no network, a proxy) exits
    at once and, having been told to, dumps the few classes of that failure: made the archive,
    they would be every later start's (half the classes a start loads read from jars again, +2 s
    measured). The start retried without Delta then writes the archive instead. Only this
    process's own lock is touched: another process's dump is its own."""
    _, part, lock = _paths(archive_key(java_path, java_version, jvm_options))
    try:
        if lock.read_text().strip() != str(os.getpid()):
            return
        part.unlink(missing_ok=True)
        lock.unlink(missing_ok=True)
    except OSError:
        pass


def build(table: str | None = None, timeout_s: float = 180.0, *, engine: bool = False) -> ArchivePlan:
    """Write the archive now: a child process starts Spark (taking the "create" path), reads a
    small log and exits; then wait for its JVM to finish dumping. Returns what a later start does.
    `engine`: the archive of the warm engine's JVM flags (java.ENGINE_JVM_OPTS) instead."""
    import subprocess

    from forensics.runtime.java import ENGINE_JVM_OPTS, JVM_OPTS, find_java

    java = find_java()
    opts = os.environ.get("DELTA_FORENSICS_JVM_OPTS", ENGINE_JVM_OPTS if engine else JVM_OPTS)
    final, part, _lock = _paths(archive_key(java.path, java.raw, opts))
    if not final.exists():
        code = (
            "import sys\n"
            "from forensics.runtime.spark import get_spark\n"
            "get_spark().range(1).count()\n"
            "if len(sys.argv) > 1:\n"
            "    from forensics.log.delta_log import DeltaLog\n"
            "    DeltaLog.open(sys.argv[1], use_cache=False)\n"
        )
        env = {**os.environ, "DELTA_FORENSICS_JVM_OPTS": opts}
        subprocess.run([sys.executable, "-c", code, *([table] if table else [])], timeout=timeout_s, check=False, env=env)
        # The dump starts when the child's JVM exits, after the child itself: wait for the part
        # file to appear and stop growing.
        start, last = time.time(), -1
        while time.time() - start < timeout_s:
            size = part.stat().st_size if part.exists() else -1
            if size < 0 and time.time() - start > 30:
                break  # no dump is coming (Spark did not start, or archives are off)
            if size > 0 and size == last and _looks_complete(part):
                break
            last = size
            time.sleep(2.0)
        try:
            if part.exists():
                _finish(part, final)
        except OSError:
            pass
    return plan(java.path, java.raw, opts)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m forensics.runtime.jvm_archive", description=__doc__.splitlines()[0])
    ap.add_argument("table", nargs="?", help="a small table to read while classes are recorded")
    a = ap.parse_args(argv)
    for engine in (False, True):  # a command's JVM and the warm engine's (other flags: another archive)
        p = build(a.table, engine=engine)
        print(f"{'engine ' if engine else ''}{p.mode}: {p.path or '-'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
