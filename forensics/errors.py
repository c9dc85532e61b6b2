"""Documented exit codes (README: "Exit codes") and the one exception hierarchy that carries them.

Every expected failure is a `ForensicsError`; a subclass per outcome lets a notebook catch just
the one it cares about (`except forensics.NotADeltaTable`). The CLI, the TUI and the API all
render one with `one_line()`; no traceback reaches the user.
"""

from __future__ import annotations

from enum import IntEnum

from forensics.model import where


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
    STORE_UNREACHABLE = 9  # the object store did not answer (connection refused, DNS, timeout)
    STORE_DENIED = 10  # the object store refused the credentials (401/403)
    STORE_NOT_FOUND = 11  # no such bucket or container
    STORE_THROTTLED = 12  # the object store kept throttling (503 SlowDown, 429) after the retries
    INTERNAL = 70  # a bug: please report it (the traceback is in the log file)

    @property
    def meaning(self) -> str:
        """In a few words, as `delta-forensics --help` lists it (README "Exit codes" says more)."""
        return _MEANINGS[self]


_MEANINGS = {
    ExitCode.OK: "ok", ExitCode.STRICT: "--strict found a warning or error finding", ExitCode.USAGE: "usage",
    ExitCode.NOT_A_TABLE: "not a Delta table", ExitCode.UNREADABLE: "unreadable log", ExitCode.JAVA: "Java missing/too old",
    ExitCode.SPARK: "Spark failed", ExitCode.NO_VERSION: "version not in the log",
    ExitCode.NOT_RECOGNIZED: "error text not recognised", ExitCode.STORE_UNREACHABLE: "object store unreachable",
    ExitCode.STORE_DENIED: "object store denied access", ExitCode.STORE_NOT_FOUND: "no such bucket or container",
    ExitCode.STORE_THROTTLED: "object store throttling",
    ExitCode.INTERNAL: "internal error",
}


_BY_CODE: dict[ExitCode, type["ForensicsError"]] = {}


class ForensicsError(Exception):
    """An expected failure with a one-line message and an exit code.

    `ForensicsError(ExitCode.NO_VERSION, ...)` builds the subclass registered for that code, so
    raising sites name the outcome once and callers can catch either the base or the subclass.
    """

    code: ExitCode = ExitCode.INTERNAL

    def __new__(cls, *args, **kwargs):
        if cls is ForensicsError and len(args) == 2 and ExitCode(args[0]) in _BY_CODE:
            cls = _BY_CODE[ExitCode(args[0])]
        return super().__new__(cls)

    def __init__(self, *args: object, file: str | None = None, version: int | None = None):
        """`ForensicsError(code, message)`, or `Subclass(message)` with the subclass's code."""
        if len(args) == 2:
            self.code = ExitCode(args[0])  # type: ignore[arg-type]
            message = str(args[1])
        elif len(args) == 1:
            message = str(args[0])
        else:
            raise TypeError("ForensicsError(code, message) or Subclass(message)")
        super().__init__(message)
        self.message = message
        self.file = file
        self.version = version

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        _BY_CODE[cls.code] = cls

    def __reduce__(self):  # picklable across Spark/worker boundaries, like any exception
        return (ForensicsError, (self.code, self.message), {"file": self.file, "version": self.version})

    def one_line(self) -> str:
        """The diagnostic as printed: the message, then the file or version it concerns."""
        loc = where(self.file, self.version)
        return f"{self.message} [{loc}]" if loc else self.message


class UsageError(ForensicsError):
    code = ExitCode.USAGE


class NotADeltaTable(ForensicsError):
    code = ExitCode.NOT_A_TABLE


class UnreadableLog(ForensicsError):
    code = ExitCode.UNREADABLE


class JavaUnavailable(ForensicsError):
    code = ExitCode.JAVA


class SparkFailed(ForensicsError):
    code = ExitCode.SPARK


class VersionNotInLog(ForensicsError):
    code = ExitCode.NO_VERSION


class NotAConflictError(ForensicsError):
    code = ExitCode.NOT_RECOGNIZED


class StoreUnreachable(ForensicsError):
    code = ExitCode.STORE_UNREACHABLE


class StoreAccessDenied(ForensicsError):
    code = ExitCode.STORE_DENIED


class StoreNotFound(ForensicsError):
    code = ExitCode.STORE_NOT_FOUND


class StoreThrottled(ForensicsError):
    """The store answered "slow down" to every retry: the table is fine, try again later."""

    code = ExitCode.STORE_THROTTLED


def error_line(e: BaseException) -> str:
    """One line for any failure: ours as documented, anything else with its type (a bug)."""
    if isinstance(e, ForensicsError):
        return e.one_line()
    return f"{type(e).__name__}: {e}"
