"""Concurrency error texts as delta-spark prints them, for the sample incidents (conflict-rules §7).

Templates are the verbatim ones of conflict-rules §7.1 (≤ v3.1) and §7.2 (v3.2 – v4.0, error classes:
`getMessage` = `[CLASS] ` + formatted template). The "Conflicting commit:" JSON is the
winner's commitInfo read back from the log, with ≤ v4.0's unquoted operationParameters
(conflict-rules §7.4, forensics.synth.opparams.quirk_commit_info_json). The first line carries the
exception's class name the way a JVM stack trace prints it (`io.delta.exceptions.X: …`).
"""

from __future__ import annotations

from forensics.synth.opparams import quirk_commit_info_json

OSS_DOCS = "https://docs.delta.io/latest/concurrency-control.html"
DATABRICKS_DOCS = "https://docs.databricks.com/delta/concurrency-control.html"

_BASE = {
    "ConcurrentAppendException": "Files were added to {partition} by a concurrent update. Please try the operation again.",
    "ConcurrentDeleteReadException": (
        "This transaction attempted to read one or more files that were deleted (for example {file}) "
        "by a concurrent update. Please try the operation again."
    ),
    "ConcurrentDeleteDeleteException": (
        "This transaction attempted to delete one or more files that were deleted (for example {file}) "
        "by a concurrent update. Please try the operation again."
    ),
    "MetadataChangedException": (
        "The metadata of the Delta table has been changed by a concurrent update. Please try the operation again."
    ),
    "ConcurrentTransactionException": (
        "This error occurs when multiple streaming queries are using the same checkpoint to write into this "
        "table. Did you run multiple instances of the same streaming query at the same time?"
    ),
    "ConcurrentWriteException": (
        "A concurrent transaction has written new data since the current transaction read the table. "
        "Please try the operation again."
    ),
}
_ERROR_CLASS = {
    "ConcurrentAppendException": "DELTA_CONCURRENT_APPEND",
    "ConcurrentDeleteReadException": "DELTA_CONCURRENT_DELETE_READ",
    "ConcurrentDeleteDeleteException": "DELTA_CONCURRENT_DELETE_DELETE",
    "MetadataChangedException": "DELTA_METADATA_CHANGED",
    "ConcurrentTransactionException": "DELTA_CONCURRENT_TRANSACTION",
    "ConcurrentWriteException": "DELTA_CONCURRENT_WRITE",
}


def partition_text(partition_values: dict[str, str | None] | None) -> str:
    """`partition [c1=v1, c2=v2]` or `the root of the table` (conflict-rules §7.1)."""
    if not partition_values:
        return "the root of the table"
    inner = ", ".join(f"{k}={'null' if v is None else v}" for k, v in partition_values.items())
    return f"partition [{inner}]"


def delta_spark_message(
    exception: str,
    winner_commit_info_line: str | None,
    *,
    release: str = "3.2",
    partition_values: dict[str, str | None] | None = None,
    file: str | None = None,
    docs: str = OSS_DOCS,
    class_prefix: str = "io.delta.exceptions.",
) -> str:
    """The text a delta-spark ≤4.0 job prints for a concurrency exception.

    `release` "3.1" selects the plain §7.1 message, anything in 3.2–4.0 the error-class form
    of §7.2. `file` for DeleteRead is already `<path> in <partition>` or just `<path>`.
    """
    base = _BASE[exception].format(partition=partition_text(partition_values), file=file or "")
    conflicting = ""
    if winner_commit_info_line is not None:
        conflicting = "\nConflicting commit: " + quirk_commit_info_json(winner_commit_info_line)
    major, minor = (int(x) for x in release.split(".")[:2])
    if (major, minor) >= (4, 1):
        raise ValueError("v4.1+ file-conflict texts have no commitInfo JSON; not modelled here")
    body = f"{base}{conflicting}\nRefer to {docs} for more details."
    if (major, minor) >= (3, 2):
        body = f"[{_ERROR_CLASS[exception]}] {exception}: {body}"
    return f"{class_prefix}{exception}: {body}\n"
