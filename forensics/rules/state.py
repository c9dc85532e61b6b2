"""The mutable state a conflict check carries from one winning commit to the next (conflict-rules §1.4).

Each winning commit may rebase the transaction: adopt the winner's protocol/metadata,
drop backfilled paths. The isolation level is never recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from forensics.model import FileAction, Metadata, Protocol, Transaction
from forensics.rules.matching import stats_match
from forensics.rules.profiles import Profile
from forensics.rules.results import CheckOutcome
from forensics.log.schema import TableSchema


def delta_rs_predicate(txn: Transaction) -> str | None:
    """delta-rs' single read predicate: operationParameters.predicate, verbatim (conflict-rules §9).

    Only Write, Delete, Update and Merge carry one; every other operation (OPTIMIZE included,
    although it records a partition filter under the same key) has no read predicate.
    """
    op = (txn.operation or "").strip().upper()
    if op and op not in ("WRITE", "DELETE", "UPDATE", "MERGE"):
        return None  # a named operation without a predicate field (unit-test transactions have none)
    p = txn.operation_parameters.get("predicate")
    if isinstance(p, str) and p.strip():
        return p
    if isinstance(p, list) and p:
        return " AND ".join(f"({x})" for x in p)
    preds = [x for x in (*txn.read.data_predicates, *txn.read.partition_predicates) if x.strip().upper() != "TRUE"]
    return " AND ".join(f"({x})" for x in preds) if preds else None


def table_schema(txn: Transaction) -> TableSchema:
    mode = "none"
    if txn.read_metadata is not None:
        mode = txn.read_metadata.configuration.get("delta.columnMapping.mode", "none")
    return TableSchema.from_schema_string(txn.schema_string, txn.partition_columns, mode)


@dataclass
class CheckState:
    txn: Transaction
    profile: Profile
    schema: TableSchema
    metadata: Metadata | None  # T.metadata: read metadata, or the winner's once adopted
    protocol: Protocol | None  # T.protocol: replaced by each winning protocol (conflict-rules §5.1)
    read_files: list[FileAction] | None
    adds: list[FileAction]
    removes: list[FileAction]
    metadata_changed: bool
    checks: list[CheckOutcome] = field(default_factory=list)
    reordered_before: list[int] = field(default_factory=list)
    inferred: list[str] = field(default_factory=list)  # reasons the result is not exact
    last_winner: int | None = None


def start_state(txn: Transaction, profile: Profile,
                read_snapshot_files: list[FileAction] | None = None) -> CheckState:
    schema = table_schema(txn)
    read_files = list(txn.read.files) if txn.read.files is not None else None
    inferred: list[str] = []
    if profile.reads_the_snapshot and read_snapshot_files is not None:
        # conflict-rules §9: with a predicate, the read-snapshot files it can match (partition + stats);
        # without one, EVERY file of the read snapshot
        pred = delta_rs_predicate(txn)
        read_files = []
        for f in read_snapshot_files:
            m = stats_match(pred, f, schema) if pred else None
            if m is None or m.matched:
                read_files.append(f)
            if m is not None and not m.exact:
                inferred.append(m.note)
    st = CheckState(
        txn=txn, profile=profile, schema=schema, metadata=txn.read_metadata, protocol=txn.read_protocol,
        read_files=read_files, adds=list(txn.write.adds), removes=list(txn.write.removes),
        metadata_changed=txn.write.metadata is not None,
    )
    st.inferred.extend(inferred)
    return st
