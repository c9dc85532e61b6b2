"""Documented exit codes (docs/exit-codes.md) and the one exception hierarchy that carries them.

Every expected failure is a `ForensicsError`; a subclass per outcome lets a notebook catch just
the one it cares about (`except forensics.NotADeltaTable`). The CLI, the TUI and the API all
render one with `one_line()`; no traceback reaches the user.
"""

from __future__ import annotations

from enum import IntEnum



class ExitCode(IntEnum):
    """The documented exit codes, one per outcome (docs/exit-codes.md); a new outcome gets a new code,
    never a reused one."""
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
    RANGE_OUTSIDE_LOG = 13  # --from/--to/--since/--until/--last select no retained version
    FIND_AT_OR_BEFORE = 14  # find: a checkpoint's txn shows the write landed at or before a version; its commit is gone
    FIND_ABSENT = 15  # find: not in the log, within the retained range searched
    FIND_UNKNOWN = 16  # find: not in the retained log, and what was searched reaches past retention
    GATE_REORDER = 17  # --fail-on reorder: a commit passed only because a winner was forgiven (WriteSerializable)
    GATE_ANOMALY = 18  # --fail-on anomaly: a commit the rules say should have aborted
    GATE_ABORTED = 19  # --fail-on aborted: the evidence found an aborted attempt (orphan files)
    ENGINE_UNAVAILABLE = 20  # engine start: the warm engine could not start (its log says why)
    INTERNAL = 70  # a bug: please report it (the traceback is in the log file)
    INTERRUPTED = 130  # Ctrl+C (SIGINT): stopped, nothing left half-written

    @property
    def meaning(self) -> str:
        """In a few words, as `delta-forensics --help` lists it (docs/exit-codes.md says more)."""
        return _MEANINGS[self]


_MEANINGS = {
    ExitCode.OK: "ok", ExitCode.STRICT: "--strict found a warning or error finding", ExitCode.USAGE: "usage",
    ExitCode.NOT_A_TABLE: "not a Delta table", ExitCode.UNREADABLE: "unreadable log", ExitCode.JAVA: "Java missing/too old",
    ExitCode.SPARK: "Spark failed", ExitCode.NO_VERSION: "version not in the log",
    ExitCode.NOT_RECOGNIZED: "error text not recognised", ExitCode.STORE_UNREACHABLE: "object store unreachable",
    ExitCode.STORE_DENIED: "object store denied access", ExitCode.STORE_NOT_FOUND: "no such bucket or container",
    ExitCode.STORE_THROTTLED: "object store throttling",
    ExitCode.RANGE_OUTSIDE_LOG: "range not in the retained log", ExitCode.FIND_AT_OR_BEFORE: "find: at or before (checkpoint)",
    ExitCode.FIND_ABSENT: "find: not in the log", ExitCode.FIND_UNKNOWN: "find: unknown (older than retention)",
    ExitCode.GATE_REORDER: "--fail-on reorder matched", ExitCode.GATE_ANOMALY: "--fail-on anomaly matched",
    ExitCode.GATE_ABORTED: "--fail-on aborted matched",
    ExitCode.ENGINE_UNAVAILABLE: "the warm engine could not start",
    ExitCode.INTERNAL: "internal error", ExitCode.INTERRUPTED: "interrupted (Ctrl+C)",
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
        from forensics.model import where  # here, not at the top: the CLI's start-up path imports this module

        loc = where(self.file, self.version)
        return f"{self.message} [{loc}]" if loc else self.message


class UsageError(ForensicsError):
    """Bad arguments: an unknown option value, rule profile or isolation level (exit 2)."""
    code = ExitCode.USAGE


class NotADeltaTable(ForensicsError):
    """The path does not exist, has no `_delta_log`, or no commits (exit 3)."""
    code = ExitCode.NOT_A_TABLE


class UnreadableLog(ForensicsError):
    """The log is broken beyond salvage: no base can rebuild the version (exit 4)."""
    code = ExitCode.UNREADABLE


class JavaUnavailable(ForensicsError):
    """Java is missing or older than 17 (exit 5)."""
    code = ExitCode.JAVA


class SparkFailed(ForensicsError):
    """Spark could not start, or a Spark job failed (exit 6)."""
    code = ExitCode.SPARK


class VersionNotInLog(ForensicsError):
    """The requested version is not in the retained log, or cannot be reconstructed (exit 7)."""
    code = ExitCode.NO_VERSION


class RangeOutsideLog(ForensicsError):
    """The versions or times asked for hold no retained version; the message names what the log retains."""

    code = ExitCode.RANGE_OUTSIDE_LOG


class NotAConflictError(ForensicsError):
    """The error text or exception holds no Delta concurrency error (exit 8)."""
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


class EngineUnavailable(ForensicsError):
    """`engine start` could not bring up the warm engine (commands then run in-process, as before)."""

    code = ExitCode.ENGINE_UNAVAILABLE


def error_line(e: BaseException) -> str:
    """One line for any failure: ours as documented, anything else with its type (a bug)."""
    if isinstance(e, ForensicsError):
        return e.one_line()
    return f"{type(e).__name__}: {e}"


def first_line(e: BaseException) -> str:
    """The first line of an error's text (at most 300 characters): what a one-line diagnostic quotes."""
    s = str(e).strip().splitlines()
    return s[0][:300] if s else type(e).__name__
