"""Typed results of reading an error text or a Spark event log (the module's boundary types)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from forensics.times import with_iso

# Message families (conflict-rules §7): which template set printed the text. The lead maps a family onto
# a rule profile; "databricks" wins over the OSS families when the text carries a Databricks
# signal (tahoe package, Databricks docs link, Databricks ODBC/JDBC driver, engineInfo).
FAMILIES = (
    "delta-spark<=3.1",
    "delta-spark-3.2-4.0",
    "delta-spark-4.1+",
    "databricks",
    "delta-rs",
    "kernel",
    "unknown",
)

# Which conflict check fired (conflict-rules §5.1-§5.8, §9, §10). "max-retries" is not a check: the
# writer gave up retrying (DELTA_MAX_COMMIT_RETRIES_EXCEEDED, delta-rs MaxCommitAttempts).
RULES = ("append", "delete-read", "delete-delete", "metadata", "protocol", "txn", "domain", "write", "max-retries")


@dataclass(frozen=True)
class WinnerHint:
    """What the text says about the winning commit (never more than the text says)."""

    version: int | None  # 4.1+ texts name it; <= 4.0 JSON has no version key (conflict-rules §7.4)
    txn_id: str | None
    timestamp: int | None  # ms
    operation: str | None
    read_version: int | None
    isolation_level: str | None
    is_blind_append: bool | None
    engine_info: str | None
    operation_parameters: dict | None
    commit_info: dict  # everything salvaged from the Conflicting commit JSON
    # False when truncated, elided, redacted or unparseable, or when there was no JSON. Unquoted
    # values (conflict-rules §7.4, <= 4.0) are invalid JSON but lose nothing: they stay complete and are
    # listed in json_problems as "unquoted value".
    json_complete: bool
    json_present: bool = False  # a `Conflicting commit:` trailer was in the text
    redacted_keys: tuple[str, ...] = ()  # key paths whose value was a placeholder
    json_problems: tuple[str, ...] = ()  # what the lenient parser had to tolerate

    def to_dict(self) -> dict[str, Any]:
        return with_iso({
            "version": self.version,
            "txnId": self.txn_id,
            "timestamp": self.timestamp,
            "operation": self.operation,
            "readVersion": self.read_version,
            "isolationLevel": self.isolation_level,
            "isBlindAppend": self.is_blind_append,
            "engineInfo": self.engine_info,
            "operationParameters": self.operation_parameters,
            "commitInfo": self.commit_info,
            "jsonComplete": self.json_complete,
            "jsonPresent": self.json_present,
            "redactedKeys": list(self.redacted_keys),
            "jsonProblems": list(self.json_problems),
        }, "timestamp")


@dataclass(frozen=True)
class ErrorReport:
    """One error text, read. `recognized` is True only for a Delta conflict-checker verdict
    (or its retry-exhaustion sibling); otherwise `why_not` says what it looked like instead."""

    recognized: bool
    exception: str | None  # simple name the text names/implies, e.g. "ConcurrentAppendException"
    error_class: str | None  # "DELTA_CONCURRENT_APPEND" / "DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT"
    family: str  # one of FAMILIES
    rule: str | None  # one of RULES
    partition: dict[str, str | None] | None  # {} = root of the table; None = not stated
    partition_text: str | None  # as printed: "[c=v, d=w]" or "the root of the table"
    file: str | None  # file named in DeleteRead/DeleteDelete texts
    table: str | None  # 4.1+ tableName
    winner: WinnerHint | None
    empty_directory: bool  # ProtocolChanged "multiple writers are writing to an empty directory"
    wrapper: list[str]  # wrappers seen, outermost first
    excerpt: str  # the core message line(s), control characters made visible
    why_not: str | None
    package: str | None = None  # Java/Python namespace printed, e.g. "io.delta.exceptions"
    truncated: bool = False  # the message itself is cut off (not only the JSON)
    details: dict[str, Any] = field(default_factory=dict)  # attempts, versions, protocol numbers
    notes: tuple[str, ...] = ()  # caveats in words (why a family was chosen, inferred fields)

    def to_dict(self) -> dict[str, Any]:
        """The parsed error text as JSON (camelCase keys): what `explain-error --json` says of the text
        itself."""
        return {
            "recognized": self.recognized,
            "exception": self.exception,
            "errorClass": self.error_class,
            "family": self.family,
            "rule": self.rule,
            "partition": self.partition,
            "partitionText": self.partition_text,
            "file": self.file,
            "table": self.table,
            "winner": self.winner.to_dict() if self.winner else None,
            "emptyDirectory": self.empty_directory,
            "wrapper": list(self.wrapper),
            "excerpt": self.excerpt,
            "whyNot": self.why_not,
            "package": self.package,
            "truncated": self.truncated,
            "details": dict(self.details),
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class EventLogFailure:
    """A failed SQL execution (or failed job outside any execution) found in a Spark event log.

    `start_ms`/`end_ms` bound the losing transaction's window: its readVersion was taken after
    start and its commit attempt ended before end.
    """

    execution_id: int | None
    description: str | None
    start_ms: int | None
    end_ms: int | None
    error_text: str
    report: ErrorReport
    source: str = "sql-execution-end"  # or "job-end", "stage-completed", "task-end"
    job_ids: tuple[int, ...] = ()
    log_file: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return with_iso({
            "executionId": self.execution_id,
            "description": self.description,
            "startMs": self.start_ms,
            "endMs": self.end_ms,
            "errorText": self.error_text,
            "report": self.report.to_dict(),
            "source": self.source,
            "jobIds": list(self.job_ids),
            "logFile": self.log_file,
        }, "startMs", "endMs")
