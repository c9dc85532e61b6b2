"""Documented exit codes (README: "Exit codes") and the one exception type that carries them.

A ForensicsError is turned into a one-line diagnostic by the CLI; no traceback reaches the user.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    STRICT = 1  # --strict and at least one warning-level finding
    USAGE = 2  # bad arguments
    NOT_A_TABLE = 3  # path missing, or no _delta_log / no commits in it
    UNREADABLE = 4  # the log is broken beyond salvage (nothing could be read)
    JAVA = 5  # Java missing or too old
    SPARK = 6  # Spark could not start or a Spark job failed
    NO_VERSION = 7  # the requested version is not in the retained log
    NOT_RECOGNIZED = 8  # explain-error: the text is not a Delta concurrency error
    INTERNAL = 70  # a bug: please report it (the traceback is in the log file)


class ForensicsError(Exception):
    """An expected failure with a one-line message and an exit code."""

    def __init__(self, code: ExitCode, message: str, *, file: str | None = None, version: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.file = file
        self.version = version

    def one_line(self) -> str:
        where = []
        if self.file:
            where.append(self.file)
        if self.version is not None:
            where.append(f"version {self.version}")
        loc = f" [{', '.join(where)}]" if where else ""
        return f"{self.message}{loc}"
