"""The exact message each engine prints for a conflict (conflict-rules §7.1-§7.6).

Used to show "this is what your job would have printed" and to match real error texts.
Templates are quoted from the spec; placeholders are filled from the winning commit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from forensics.rules.profiles import Profile
from forensics.log.schema import TableSchema

ERROR_CLASSES = {  # conflict-rules §7.2 (sqlState 2D521)
    "ConcurrentAppendException": "DELTA_CONCURRENT_APPEND",
    "ConcurrentDeleteReadException": "DELTA_CONCURRENT_DELETE_READ",
    "ConcurrentDeleteDeleteException": "DELTA_CONCURRENT_DELETE_DELETE",
    "MetadataChangedException": "DELTA_METADATA_CHANGED",
    "ProtocolChangedException": "DELTA_PROTOCOL_CHANGED",
    "ConcurrentTransactionException": "DELTA_CONCURRENT_TRANSACTION",
    "ConcurrentWriteException": "DELTA_CONCURRENT_WRITE",
}

RETRY = "Please try the operation again."
UPGRADE_RETRY = ("Upgrading all your concurrent writers to use the latest Delta Lake may avoid this error. "
                 "Please upgrade and then retry this operation again.")
EMPTY_DIR = ("This happens when multiple writers are writing to an empty directory. "
             "Creating the table ahead of time will avoid this conflict. ")

BASE = {  # conflict-rules §7.1 base messages (without the retry sentence where it varies)
    "ConcurrentAppendException": "Files were added to {partition} by a concurrent update. {retry}",
    "ConcurrentDeleteReadException": ("This transaction attempted to read one or more files that were deleted "
                                      "(for example {file}) by a concurrent update. Please try the operation again."),
    "ConcurrentDeleteDeleteException": ("This transaction attempted to delete one or more files that were deleted "
                                        "(for example {file}) by a concurrent update. Please try the operation again."),
    "MetadataChangedException": ("The metadata of the Delta table has been changed by a concurrent update. "
                                 "Please try the operation again."),
    "ConcurrentTransactionException": ("This error occurs when multiple streaming queries are using the same "
                                       "checkpoint to write into this table. Did you run multiple instances of the "
                                       "same streaming query at the same time?"),
    "ConcurrentWriteException": ("A concurrent transaction has written new data since the current transaction "
                                 "read the table. Please try the operation again."),
}

# conflict-rules §7.3 (v4.1+) sub-classed file-conflict messages
_MAIN_41 = {
    "ConcurrentAppendException": ("Transaction conflict detected. a concurrent {operation} added data to table "
                                  "{table} committed at version {version}."),
    "ConcurrentDeleteReadException": ("Transaction conflict detected, a concurrent {operation} deleted data from "
                                      "table {table} (committed at version {version}) that this transaction read."),
    "ConcurrentDeleteDeleteException": ("Transaction conflict detected, a concurrent {operation} deleted data from "
                                        "table {table} (committed at version {version}) that this transaction "
                                        "attempted to delete."),
}
_SUB_41 = {
    ("ConcurrentAppendException", False): ("The concurrent operation modified data that should have been read by "
                                           "this operation. Please retry the operation. Refer to {docs} for more "
                                           "information."),
    ("ConcurrentAppendException", True): ("The concurrent operation modified data in the partition {pv} that should "
                                          "have been read by this operation. Please retry the operation. Refer to "
                                          "{docs} for more information."),
    # DELETE_DELETE's sub-messages are copy-pasted from DELETE_READ in delta-spark (conflict-rules §7.3)
    ("delete", False): ("The concurrent operation deleted data that was read by this operation. Please retry the "
                        "operation. Refer to {docs} for more information."),
    ("delete", True): ("The concurrent operation deleted data in the partition {pv} that was read by this operation. "
                       "Please retry the operation. Refer to {docs} for more information."),
}

DELTA_RS = {  # conflict-rules §7.5
    "ConcurrentAppendException": ("Commit failed: a concurrent transactions added new data.\nHelp: This transaction's "
                                  "query must be rerun to include the new data. Also, if you don't care to require "
                                  "this check to pass in the future, the isolation level can be set to Snapshot "
                                  "Isolation."),
    "ConcurrentDeleteReadException": ("Commit failed: a concurrent transaction deleted data this operation read.\n"
                                      "Help: This transaction's query must be rerun to exclude the removed data. Also, "
                                      "if you don't care to require this check to pass in the future, the isolation "
                                      "level can be set to Snapshot Isolation."),
    "ConcurrentDeleteDeleteException": ("Commit failed: a concurrent transaction deleted the same data your "
                                        "transaction deletes.\nHelp: you should retry this write operation. If it was "
                                        "based on data contained in the table, you should rerun the query generating "
                                        "the data."),
    "MetadataChangedException": "Metadata changed since last commit.",
    "ConcurrentTransactionException": "Concurrent transaction failed.",
    "ProtocolChangedException": "Protocol changed since last commit: {detail}",
}
DELTA_RS_VARIANT = {  # delta-rs CommitConflictError variant <-> Delta simple class name
    "ConcurrentAppend": "ConcurrentAppendException",
    "ConcurrentDeleteRead": "ConcurrentDeleteReadException",
    "ConcurrentDeleteDelete": "ConcurrentDeleteDeleteException",
    "MetadataChanged": "MetadataChangedException",
    "ConcurrentTransaction": "ConcurrentTransactionException",
    "ProtocolChanged": "ProtocolChangedException",
}

KERNEL_DELETE_DELETE = (  # conflict-rules §7.6
    "A concurrent transaction removed (or updated the deletion vector of) file {file} that this transaction "
    "(attempting version {n}) also removes. Letting both commits through would leave two active entries for the "
    "same data file. Retry the operation against the latest table state."
)

# conflict-rules §7.4: Jackson declaration order of CommitInfo fields (NON_ABSENT); no `version` key in practice
COMMIT_INFO_KEYS = ("inCommitTimestamp", "timestamp", "userId", "userName", "operation", "operationParameters",
                    "job", "notebook", "clusterId", "readVersion", "isolationLevel", "isBlindAppend",
                    "operationMetrics", "userMetadata", "tags", "engineInfo", "txnId")


@dataclass
class MessageInput:
    exception: str
    partition_columns: tuple[str, ...] = ()
    partition_values: dict[str, str | None] | None = None  # the hint file's partitionValues
    file: str | None = None
    winner_version: int | None = None
    winner_operation: str | None = None
    winner_commit_info: dict[str, Any] | str | None = None  # the commitInfo as written in the log
    table_name: str | None = None
    winner_blind_append_field_missing_and_adds_only: bool = False  # §7.1 retryMsg variant
    txn_isolation_level: str | None = None
    schema: TableSchema | None = None
    domain: str | None = None  # domain-metadata conflict (§5.3)
    detail: str | None = None  # delta-rs ProtocolChanged detail
    attempt_version: int | None = None  # Kernel delete-delete
    error_class: str | None = None  # non-concurrency errors (e.g. unbackfill) keep their own class


def _dump(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def conflicting_commit_json(commit_info: dict[str, Any] | str | None, *, lossy: bool) -> str | None:
    """The winner's commitInfo as printed after "Conflicting commit: " (conflict-rules §7.4).

    `lossy` (delta-spark <= 4.0): operationParameters lost one level of encoding when read
    back, and string values are written raw, e.g. {"mode":Append}. Unknown keys are dropped
    (Jackson serializes declared fields only).
    """
    if commit_info is None:
        return None
    if isinstance(commit_info, str):
        try:
            commit_info = json.loads(commit_info)
        except ValueError:
            return None
    if not isinstance(commit_info, dict):
        return None
    parts = []
    for k in COMMIT_INFO_KEYS:
        if k not in commit_info or commit_info[k] is None:
            continue
        v = commit_info[k]
        if k == "operationParameters" and isinstance(v, dict):
            inner = []
            for pk, pv in v.items():
                raw = pv if (lossy and isinstance(pv, str)) else _dump(pv)
                inner.append(f"{_dump(str(pk))}:{raw}")
            parts.append(f'"operationParameters":{{{",".join(inner)}}}')
        else:
            parts.append(f"{_dump(k)}:{_dump(v)}")
    return "{" + ",".join(parts) + "}"


def _value(pv: dict[str, str | None], col: str, schema: TableSchema | None) -> str:
    key = schema.physical_name(col) if schema else col
    v = pv.get(key, pv.get(col))
    return "null" if v is None else str(v)


def partition_hint(partition_columns: tuple[str, ...], pv: dict[str, str | None] | None,
                   schema: TableSchema | None = None) -> str:
    """conflict-rules §7.1: `partition [c1=v1, c2=v2]` (logical names, values by physical name) or
    `the root of the table` for an unpartitioned table."""
    if not partition_columns:
        return "the root of the table"
    pv = pv or {}
    return "partition [" + ", ".join(f"{c}={_value(pv, c, schema)}" for c in partition_columns) + "]"


def partition_values_41(partition_columns: tuple[str, ...], pv: dict[str, str | None] | None,
                        schema: TableSchema | None = None) -> str | None:
    """conflict-rules §7.3: `[c1=v1, c2=v2]`, or None (WITHOUT_HINT) when unpartitioned or no values."""
    if not partition_columns or not pv:
        return None
    return "[" + ", ".join(f"{c}={_value(pv, c, schema)}" for c in partition_columns) + "]"


def _file_text(m: MessageInput) -> str:
    if m.exception == "ConcurrentDeleteReadException" and m.partition_values is not None and m.file:
        return f"{m.file} in {partition_hint(m.partition_columns, m.partition_values, m.schema)}"
    return m.file or ""


def _base_message(m: MessageInput) -> str:
    if m.exception == "ProtocolChangedException":
        extra = EMPTY_DIR if m.winner_version == 0 else ""
        return f"The protocol version of the Delta table has been changed by a concurrent update. {extra}{RETRY}"
    retry = UPGRADE_RETRY if (m.txn_isolation_level == "WriteSerializable"
                              and m.winner_blind_append_field_missing_and_adds_only) else RETRY
    return BASE[m.exception].format(partition=partition_hint(m.partition_columns, m.partition_values, m.schema),
                                    file=_file_text(m), retry=retry)


def render_message(profile: Profile, m: MessageInput) -> tuple[str, str | None]:
    """(message, error class) as the profile's engine would print them (conflict-rules §7)."""
    if m.error_class and m.exception not in ERROR_CLASSES:
        return f"[{m.error_class}] {m.exception}", m.error_class
    if m.domain is not None:  # conflict-rules §5.3: plain message, not error-class formatted
        return f"A conflicting metadata domain {m.domain} is added.", None
    if profile.message_style == "delta-rs":
        text = DELTA_RS.get(m.exception, m.exception).format(detail=m.detail or "protocol changed")
        return f"Failed to commit transaction: {text}", None
    if profile.message_style == "kernel":
        if m.exception == "ConcurrentWriteException" and m.file:
            n = "?" if m.attempt_version is None else str(m.attempt_version)
            return KERNEL_DELETE_DELETE.format(file=m.file, n=n), None
        return BASE.get(m.exception, m.exception) if m.exception != "ProtocolChangedException" else _base_message(m), None
    docs = profile.docs_link
    if profile.message_style == "subclassed" and m.exception in _MAIN_41:
        return _render_41(profile, m, docs)
    lossy = profile.message_style != "subclassed"  # §7.4: proper round-trip only from v4.1
    trailer_json = conflicting_commit_json(m.winner_commit_info, lossy=lossy)
    trailer = f"\nConflicting commit: {trailer_json}" if trailer_json else ""
    if profile.message_style == "plain":  # conflict-rules §7.1
        return f"{_base_message(m)}{trailer}\nRefer to {docs} for more details.", None
    # error classes (v3.2-4.0, and 4.1+ for the non-file exceptions), conflict-rules §7.2/§7.3
    cls = ERROR_CLASSES[m.exception]
    if m.exception == "ConcurrentWriteException" and not profile.concurrent_write_has_trailer:
        trailer = ""
    if m.exception == "ProtocolChangedException":
        extra = EMPTY_DIR if m.winner_version == 0 else ""
        # template: "...concurrent update. <additionalInfo><conflictingCommit>" (no retry sentence)
        body = f"The protocol version of the Delta table has been changed by a concurrent update. {extra}"
    elif m.exception == "MetadataChangedException" and profile.metadata_message_names_table:
        body = (f"The metadata of the Delta table {m.table_name or 'delta.`<table path>`'} has been changed by a "
                "concurrent update. Please try the operation again.")
    else:
        body = _base_message(m)
    return f"[{cls}] {m.exception}: {body}{trailer}\nRefer to {docs} for more details.", cls


def _render_41(profile: Profile, m: MessageInput, docs: str) -> tuple[str, str]:
    pv = partition_values_41(m.partition_columns, m.partition_values, m.schema)
    main = _MAIN_41[m.exception].format(operation=m.winner_operation or "TRANSACTION",
                                        table=m.table_name or "delta.`<table path>`",
                                        version="?" if m.winner_version is None else m.winner_version)
    key = (m.exception if m.exception == "ConcurrentAppendException" else "delete", pv is not None)
    sub = _SUB_41[key].format(pv=pv, docs=docs)
    cls = ERROR_CLASSES[m.exception] + (".WITH_PARTITION_HINT" if pv is not None else ".WITHOUT_HINT")
    return f"[{cls}] {main} {sub}", cls


def delta_name(name: str) -> str:
    """Map an engine's conflict name (delta-rs variant, `X (…)`, `X(…)`) onto Delta's simple class name."""
    s = name.strip()
    if s == "commit":
        return s
    head = s.split("(")[0].strip()
    if head == "CommitConflict":  # delta-rs TransactionError::CommitConflict; the variant is in the note
        inner = s[s.find("(") + 1:].split()[0] if "(" in s else ""
        head = inner or head
    return DELTA_RS_VARIANT.get(head, head)
