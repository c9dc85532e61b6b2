"""Isolation level and blind-append rules for transactions the log did not record.

delta-spark (conflict-rules §2.1, §4.5) and delta-rs (conflict-rules §2.2). A logged delta-spark commit
records both in commitInfo (exact); these functions serve hypothetical/failed
transactions (conflict-rules §8.4) and the delta-rs checker, which decides per winning commit.
"""

from __future__ import annotations

from typing import Iterable

from forensics.model import FileAction, WinningCommit

SERIALIZABLE = "Serializable"
WRITE_SERIALIZABLE = "WriteSerializable"
SNAPSHOT_ISOLATION = "SnapshotIsolation"
LEVELS = (SERIALIZABLE, WRITE_SERIALIZABLE, SNAPSHOT_ISOLATION)

# conflict-rules §2.1: DeltaOperations `changesData` = true for these (delta-spark); others default false.
CHANGES_DATA_OPERATIONS = frozenset({
    "WRITE", "STREAMING UPDATE", "DELETE", "TRUNCATE", "CONVERT", "MERGE", "UPDATE",
    "REPLACE TABLE", "CREATE OR REPLACE TABLE", "REPLACE TABLE AS SELECT",
    "CREATE OR REPLACE TABLE AS SELECT", "RESTORE", "CLONE", "CREATE TABLE AS SELECT",
})
# conflict-rules §9: delta-rs `changes_data()` is false for OPTIMIZE and metadata-only operations.
DELTA_RS_CHANGES_DATA = frozenset({"WRITE", "DELETE", "UPDATE", "MERGE", "STREAMING UPDATE",
                                   "RESTORE", "CREATE TABLE", "CREATE OR REPLACE TABLE"})

ROW_TRACKING_DOMAIN = "delta.rowTracking"


def operation_changes_data(operation: str | None) -> bool:
    return (operation or "").upper() in CHANGES_DATA_OPERATIONS


def table_isolation_level(configured: str | None, default: str = SERIALIZABLE) -> str:
    """Table level from `delta.isolationLevel` (conflict-rules §2.1): OSS accepts only Serializable;
    Databricks may set WriteSerializable (its default)."""
    if configured in (SERIALIZABLE, WRITE_SERIALIZABLE):
        return configured
    return default


def effective_isolation_level(
    file_actions: Iterable[FileAction],
    operation: str | None,
    table_level: str = SERIALIZABLE,
    *,
    other_actions: Iterable[str] = (),
    release: tuple[int, int] = (4, 4),
) -> str:
    """delta-spark's per-transaction level (conflict-rules §2.1), computed once from prepared actions.

    `other_actions` names the non-file actions ("metaData", "protocol", "txn",
    "domainMetadata:<domain>"). Only the row-tracking domain (v3.0+) keeps the downgrade open.
    """
    for a in other_actions:
        if a.startswith("domainMetadata:") and a.split(":", 1)[1] == ROW_TRACKING_DOMAIN and release >= (3, 0):
            continue
        return table_level  # Metadata / Protocol / SetTransaction / other domains => no downgrade
    if any(bool(f.data_change) if f.data_change is not None else True for f in file_actions):
        return table_level
    if table_level == SERIALIZABLE:
        return SNAPSHOT_ISOLATION
    if table_level == WRITE_SERIALIZABLE and not operation_changes_data(operation):
        return SNAPSHOT_ISOLATION
    return table_level


def is_blind_append(
    file_actions: Iterable[FileAction],
    read_predicates: Iterable[str],
    read_files: Iterable[FileAction] | None,
) -> bool:
    """conflict-rules §4.5: every FileAction is an add AND nothing was read (no predicates, no files).

    readWholeTable() adds a predicate, so it is covered by `read_predicates`; txnVersion()
    is not a read. Metadata/Protocol/txn/domain actions do not matter.
    """
    if any(f.kind != "add" for f in file_actions):
        return False
    if any(True for _ in read_predicates):
        return False
    return not any(True for _ in (read_files or ()))


# --------------------------------------------------------------------------------------
# delta-rs (conflict-rules §2.2)
# --------------------------------------------------------------------------------------

_DELTA_RS_PROPERTY = {"serializable": SERIALIZABLE, "writeSerializable": WRITE_SERIALIZABLE,
                      "snapshotIsolation": SNAPSHOT_ISOLATION}


def delta_rs_table_level(configured: str | None) -> str:
    """delta-kernel-rs parses `delta.isolationLevel` case-sensitively in camelCase; Spark's
    "WriteSerializable" fails to parse and silently falls back to Serializable [inferred]."""
    return _DELTA_RS_PROPERTY.get(configured or "", SERIALIZABLE)


def delta_rs_isolation_level(winner: WinningCommit, operation: str | None, table_level: str) -> str:
    """delta-rs' level for one winning commit: the downgrade test runs on the WINNER's actions.

    Data-changing add/remove count as file actions; everything else (metadata, protocol,
    txn, commitInfo, and add/remove with dataChange=false) is a "non-file" action that
    blocks the downgrade. With a commitInfo present the downgrade never happens (conflict-rules §2.2).
    Without an operation the table level is used.
    """
    if operation is None:
        return table_level
    has_commit_info = winner.is_blind_append is not None or (
        winner.commit is not None and winner.commit.has_commit_info)
    non_file = (has_commit_info or winner.metadata is not None or winner.protocol is not None
                or bool(winner.app_txns) or bool(winner.domains)
                or any(f.data_change is False for f in (*winner.adds, *winner.removes)))
    if non_file:
        return table_level
    data_changed = bool(winner.adds or winner.removes)
    if table_level == SERIALIZABLE and not data_changed:
        return SNAPSHOT_ISOLATION
    if table_level == WRITE_SERIALIZABLE and not data_changed and (operation or "").upper() not in DELTA_RS_CHANGES_DATA:
        return SNAPSHOT_ISOLATION
    return table_level
