"""The tool's own logging: one `forensics` logger whose every line is scrubbed of secrets, and
what `--log-level` sets (that logger's level and, for a session the tool started, Spark's).

Library use leaves handlers to the application (a notebook's logging config shows our lines);
the CLI adds one stderr handler. Spark's own log goes to the cache's spark.log either way.
"""

from __future__ import annotations

import logging
import sys

from forensics.safe import scrub

LEVELS = ("debug", "info", "warning", "error")
# Spark's level for each of ours. debug stops at INFO: Spark's DEBUG prints settings, Hadoop
# configuration and RPC payloads verbatim, where a credential can sit unscrubbed.
SPARK_LEVELS = {"debug": "INFO", "info": "INFO", "warning": "WARN", "error": "ERROR"}
SPARK_DEFAULT = "ERROR"  # no --log-level: Spark says only what failed

logger = logging.getLogger("forensics")
_chosen: str | None = None


class _Scrubbed(logging.Filter):
    """Every record's text goes through forensics.safe.scrub before any handler sees it."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = scrub(record.getMessage())
        record.args = None
        return True


logger.addFilter(_Scrubbed())


class _Lower(logging.Formatter):
    """`delta-forensics: debug: ...`, in the case our other diagnostics use."""

    def format(self, record: logging.LogRecord) -> str:
        return super().format(record).replace(f": {record.levelname}: ", f": {record.levelname.lower()}: ", 1)


class _Stderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time (a test's capture, a redirected stream)."""

    @property  # type: ignore[override]
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def set_log_level(level: str, *, spark: bool = True) -> None:
    """Show the tool's log lines at `level` and above on stderr (`delta-forensics: info: ...`); with
    `spark`, a session the tool starts logs at the matching level (SPARK_LEVELS) to spark.log."""
    global _chosen
    if level not in LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)}")
    _chosen = level if spark else None
    handler = _Stderr()
    handler.setFormatter(_Lower("delta-forensics: %(levelname)s: %(message)s"))
    for old in [h for h in logger.handlers if getattr(h, "_forensics", False)]:
        logger.removeHandler(old)
    handler._forensics = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level.upper())


def spark_log_level() -> str:
    """The log4j level for a Spark session this process started."""
    return SPARK_LEVELS[_chosen] if _chosen else SPARK_DEFAULT
