"""SparkSession construction: local mode by default, `--master` for a cluster, `--remote` for Spark Connect.

The JVM's own chatter (log4j warnings, "Using incubator modules") goes to a log file in the
cache directory rather than the user's terminal; our diagnostics are the only thing on stderr.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from forensics.errors import ExitCode, ForensicsError, first_line
from forensics.runtime import heap
from forensics.runtime.java import JavaInfo, check_java, default_jvm_opts, long_first_read
from forensics.runtime.logs import logger, spark_log_level
from forensics.runtime.master import chosen_master, is_local
from forensics.runtime.paths import cache_root
from forensics.safe import remember_settings, scrub

_lock = threading.Lock()
_session: Any = None
_session_key: tuple[str | None, str | None] | None = None


def _spark_log_path() -> Path:
    p = cache_root() / "spark.log"
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


class _JvmStderrToFile:
    """Redirect fd 2 (and fd 1 when asked: Ivy prints its resolution to stdout) while the JVM
    starts, so its output is inherited as a log file."""

    def __init__(self, path: Path, fds: tuple[int, ...] = (2,)):
        self.path = path
        self.fds = fds
        self.saved: dict[int, int] = {}
        self.fh = None

    def __enter__(self):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            self.fh = open(self.path, "ab")
            for fd in self.fds:
                self.saved[fd] = os.dup(fd)
                os.dup2(self.fh.fileno(), fd)
        except OSError:
            pass
        return self

    def __exit__(self, *exc):
        for fd, saved in self.saved.items():
            os.dup2(saved, fd)
            os.close(saved)
        if self.fh:
            self.fh.close()
        return False


def _local_conf(builder: Any, java: JavaInfo) -> Any:
    return (
        builder.config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "4")
        .config("spark.sql.session.timeZone", "UTC")
        # Many small commit files: pack them densely into few tasks.
        .config("spark.sql.files.openCostInBytes", str(64 * 1024))
        .config("spark.sql.files.maxPartitionBytes", str(64 * 1024 * 1024))
        .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "1000000")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.driver.memory", heap.planned_memory())  # sized from the listing (runtime/heap.py)
        .config("spark.sql.parquet.enableVectorizedReader", "true")
        .config("spark.sql.jsonGenerator.ignoreNullFields", "false")
        .config("spark.driver.extraJavaOptions", driver_java_options(java))
        # Read local files as they are: Hadoop's checksumming FS rejects a file whose `.x.crc`
        # side file is stale, which is common in copied tables and says nothing about the log.
        .config("spark.hadoop.fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem")
        .config("spark.hadoop.fs.file.impl.disable.cache", "true")
    )


def driver_java_options(java: JavaInfo) -> str:
    """Our JVM flags plus the class-data archive's (forensics/runtime/jvm_archive.py)."""
    from forensics.runtime.jvm_archive import plan

    opts = _jvm_opts()
    return " ".join(o for o in ("-Dlog4j2.level=error", opts, plan(java.path, java.raw, opts).options) if o)


def _jvm_opts() -> str:
    return os.environ.get("DELTA_FORENSICS_JVM_OPTS", default_jvm_opts())


def _after_failed_start(java: JavaInfo) -> None:
    """A first start that failed and whose JVM has exited (Ivy could not resolve Delta's jars)
    leaves no class-data archive behind: the retry's JVM writes the one later starts map."""
    from pyspark import SparkContext

    from forensics.runtime.jvm_archive import discard_failed_dump

    if SparkContext._gateway is None:  # noqa: SLF001 - no JVM runs: the retry launches its own
        discard_failed_dump(java.path, java.raw, _jvm_opts())


def get_spark(master: str | None = None, remote: str | None = None, conf: dict[str, str] | None = None) -> Any:
    """One SparkSession per process (tests share it); cluster or Connect when asked. `conf` holds
    the user's Spark settings (`--conf`, a profile's spark_conf), applied when the session starts."""
    global _session, _session_key
    key = (master, remote)
    remember_settings({**(conf or {}), "master": master or "", "remote": remote or ""})  # a `;token=` is never shown
    with _lock:
        if _session is not None:
            _late_settings(_session, key, conf)
            return _session
        try:
            importlib.import_module("pyspark.sql")  # present, or say so in one line
        except ImportError as e:  # pragma: no cover - pyspark is a hard dependency
            raise ForensicsError(ExitCode.SPARK, f"pyspark is not installed: {e}") from e
        if remote:
            from forensics.runtime import connect

            _session = connect.start(remote, conf or {})
            _session_key = key
            heap.note_session(_session, key)
            return _session
        java = check_java()
        heap.plan_start(conf or {})  # the heap the listing asked for, or a one-line refusal
        started = time.monotonic()
        master = chosen_master(master)
        logger.info("starting a Spark session (master %s, Java %s%s%s)", master, java.major,
                    "; the full JIT for a long first read" if long_first_read() and "DELTA_FORENSICS_JVM_OPTS" not in os.environ else "",
                    f"; settings {', '.join(sorted(conf))}" if conf else "")  # names only: a value may be a credential
        _session = _start_local(master, java, conf or {})
        logger.info("Spark %s started in %.1f s; its log: %s", _session.version, time.monotonic() - started, _spark_log_path())
        try:
            # Twice: Spark skips a level equal to the root's (INFO by default), leaving the console's WARN filter on.
            _session.sparkContext.setLogLevel("OFF")
            _session.sparkContext.setLogLevel(spark_log_level())
        except Exception:  # noqa: BLE001 - Connect sessions have no SparkContext
            pass
        _session_key = key
        heap.note_session(_session, key)
        return _session


def running_session() -> Any:
    """The session get_spark started in this process, or None (nothing is started by asking)."""
    return _session


def _start_local(master: str, java: JavaInfo, conf: dict[str, str]) -> Any:
    """Start the tool's own session, with Delta's JVM side when it can be had (forensics/runtime/
    delta_jvm.py); a start that fails only because of it is retried without it, said once."""
    from pyspark.sql import SparkSession

    from forensics.runtime import delta_jvm

    delta = delta_jvm.plan(master, conf)
    if not delta.active and delta.coordinate:
        delta_jvm.say_once(delta.coordinate, delta.reason)
    elif not delta.active and "not installed" in delta.reason:
        delta_jvm.say_once("delta-spark", delta.reason)

    def build(extra: dict[str, str]) -> Any:
        builder = _local_conf(SparkSession.builder.appName("delta-forensics").master(master), java)

        for k, v in {**conf, **extra}.items():  # the user's settings after ours (Delta's already merged with them)
            builder = builder.config(k, v)
        with _JvmStderrToFile(_spark_log_path(), (1, 2) if extra else (2,)):
            session = builder.getOrCreate()
        if is_local(master) and not os.environ.get("PYSPARK_PYTHON"):
            # Local Python workers (few reads need them) run this interpreter: `python3` on PATH may lack pyarrow.
            session.sparkContext.pythonExec = sys.executable
        return session

    try:
        if delta.active:
            try:
                session = build(delta.settings)
            except Exception as e:  # noqa: BLE001 - Ivy could not resolve, or the jars do not load
                delta_jvm.remember(delta, None, ok=False)
                delta_jvm.say_once(str(delta.coordinate), f"{first_line(e)}; see {_spark_log_path()}")
                _after_failed_start(java)
                return build({})
            ok = delta_jvm.loaded(session)
            delta_jvm.remember(delta, session, ok)
            if not ok:
                delta_jvm.say_once(str(delta.coordinate), "its classes did not load")
            return session
        return build({})
    except Exception as e:  # noqa: BLE001
        raise ForensicsError(
            ExitCode.SPARK, f"Spark failed to start ({first_line(e)}); see {_spark_log_path()}"
        ) from e


def _late_settings(session: Any, key: tuple[str | None, str | None], conf: dict[str, str] | None) -> None:
    """A notebook that opens a second Table with other settings gets the running session: apply
    what Spark lets a running session change, and say which settings it could not take (names
    only: a value may be a credential)."""
    import warnings

    if key != (None, None) and key != _session_key:
        warnings.warn(f"a Spark session ({_describe(_session_key)}) already runs in this process; "
                      f"{_describe(key)} is not used (one session per process)", RuntimeWarning, stacklevel=3)
    refused = []
    for k, v in (conf or {}).items():
        try:
            if session.conf.get(k, None) != v:
                session.conf.set(k, v)
        except Exception:  # noqa: BLE001 - static settings cannot change after the session started
            refused.append(k)
    if refused:
        warnings.warn(f"Spark settings {', '.join(sorted(refused))} cannot change in the running session "
                      "(static settings take effect only when the session starts); they are not applied", RuntimeWarning, stacklevel=3)


def _describe(key: tuple[str | None, str | None] | None) -> str:
    master, remote = key or (None, None)
    return scrub(f"Spark Connect {remote}" if remote else f"master {master or 'local (default)'}")


def delta_jvm_available(spark: Any) -> bool:
    """Whether delta-spark's JVM classes are on the classpath (optional; only used for cross-checks)."""
    from forensics.runtime.delta_jvm import loaded

    return loaded(spark)


def error_summary(e: BaseException) -> str:
    """The root cause of a Spark/py4j error in one line (the deepest `Caused by:`)."""
    text = str(e)
    java = getattr(e, "java_exception", None)
    if java is not None:
        try:
            text += "\n" + str(java.toString())
        except Exception:  # noqa: BLE001
            pass
    causes = [ln.split("Caused by:", 1)[1].strip() for ln in text.splitlines() if "Caused by:" in ln]
    if causes:
        return causes[-1][:300]
    for ln in text.splitlines():
        ln = ln.strip()
        if ln and not ln.startswith("at ") and "An error occurred while calling" not in ln:
            return ln[:300]
    return first_line(e)
