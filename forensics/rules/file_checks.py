"""File checks: concurrent appends, deletes vs reads, deletes vs deletes.

delta-spark §5.6-§5.8 (release quirks via the profile), delta-rs §9, Kernel §10,
Databricks row-level concurrency §11 (inferred). Reorder detection per conflict-rules §6.
"""

from __future__ import annotations

from forensics.model import FileAction, WinningCommit, operation_class
from forensics.rules.isolation import SNAPSHOT_ISOLATION, WRITE_SERIALIZABLE, delta_rs_isolation_level, delta_rs_table_level
from forensics.rules.matching import partition_match, stats_match
from forensics.rules.meta_checks import BACKFILL, UNBACKFILL
from forensics.rules.metadata import supports
from forensics.rules.results import CheckOutcome
from forensics.rules.state import CheckState, delta_rs_predicate


def _dv_setting(st: CheckState) -> str:
    cfg = st.metadata.configuration if st.metadata is not None else {}
    return str(cfg.get("delta.enableDeletionVectors", "")).lower()


def _rlc_eligible(st: CheckState) -> bool:
    """conflict-rules §11.2 [doc]: Databricks row-level concurrency needs Runtime 14.2+ (a MERGE on 14.2
    needs Photon), and an unpartitioned table with deletion vectors enabled, or a liquid-clustered one
    whose deletion vectors were not turned off."""
    prof = st.profile
    if not prof.row_level_concurrency or not prof.runtime_at_least(14, 2):
        return False
    if prof.runtime == (14, 2) and (st.txn.operation or "").upper() == "MERGE" and "photon" not in (st.txn.engine_info or "").lower():
        return False
    if st.txn.partition_columns:
        return False
    if supports(st.protocol, "clustering"):
        return _dv_setting(st) != "false"
    return _dv_setting(st) == "true"


def _optimize_params(params: dict | None) -> bool:
    z = params.get("zOrderBy") if isinstance(params, dict) else None
    return bool(z) and z not in ("[]", [])


def _is_zorder_optimize(w: WinningCommit) -> bool:
    params = w.commit.operation_parameters if w.commit is not None else {}
    return (w.operation or "") == "OPTIMIZE" and _optimize_params(params)


def _optimize_exempt(st: CheckState, w: WinningCommit) -> bool:
    """conflict-rules §11.3 [doc]: on Databricks, OPTIMIZE without ZORDER BY does not conflict with
    UPDATE/DELETE/MERGE when deletion vectors are enabled, partitioned tables included."""
    if st.profile.engine != "databricks" or _dv_setting(st) != "true":
        return False
    mine = operation_class(st.txn.operation, st.txn.operation_parameters)
    theirs = operation_class(w.operation, w.commit.operation_parameters if w.commit is not None else {})
    if {mine, theirs} != {"OPTIMIZE", "UPDATE/DELETE/MERGE"}:
        return False
    params = st.txn.operation_parameters if mine == "OPTIMIZE" else (w.commit.operation_parameters if w.commit else {})
    return not _optimize_params(params)


def _exempt(name: str, st: CheckState, w: WinningCommit) -> CheckOutcome:
    st.inferred.append("Databricks: OPTIMIZE without ZORDER BY and DML on a table with deletion vectors do not conflict [doc]")
    return CheckOutcome(name, "passed", f"v{w.version} and this transaction are an OPTIMIZE without ZORDER BY and an "
                        "UPDATE/DELETE/MERGE on a table with deletion vectors: Databricks documents that they do "
                        "not conflict", winner_version=w.version, inferred=True)


def _spark_first_match(st: CheckState, files: list[FileAction]) -> tuple[FileAction | None, str]:
    """conflict-rules §5.6.2: the first candidate the transaction should have read, and why it matched."""
    txn, prof = st.txn, st.profile
    if not files:
        return None, ""
    if prof.append_shortcuts:
        if txn.write.is_blind_append:
            return None, "this transaction is a blind append (never conflicts with adds, v3.1+)"
        if txn.read.whole_table:
            return files[0], "this transaction read the whole table"
        if not txn.partition_columns:
            return files[0], "the table is unpartitioned: any counted add matches (v3.1+)"
    preds = list(dict.fromkeys(p.strip() for p in txn.read.partition_predicates))
    if txn.read.whole_table and "TRUE" not in preds:
        preds.append("TRUE")
    for pred in preds:
        for f in files:
            m = partition_match(pred, f.partition_values, st.schema)
            if not m.exact:
                st.inferred.append(m.note)
            if m.matched:
                return f, f"read predicate `{pred}` matches its partition values"
    return None, "no read predicate matches" if preds else "no read predicates recorded"


def _delta_rs_first_match(st: CheckState, files: list[FileAction]) -> tuple[FileAction | None, str]:
    """conflict-rules §9: predicate on partition values AND stats; whole table => any; no predicate => none."""
    if not files:
        return None, ""
    pred = delta_rs_predicate(st.txn)
    if st.txn.read.whole_table:
        return files[0], "this transaction read the whole table"
    if pred is None:
        return None, "no read predicate: delta-rs does not check appends"
    for f in files:
        m = stats_match(pred, f, st.schema)
        if not m.exact:
            st.inferred.append(m.note)
        if m.matched:
            return f, f"read predicate `{pred}` can match its partition values/statistics"
    return None, f"read predicate `{pred}` cannot match the added files' partition values/statistics"


def check_appends(st: CheckState, w: WinningCommit) -> CheckOutcome:
    """ConcurrentAppendException (conflict-rules §5.6 / §9); records reorders (conflict-rules §6)."""
    name, txn, prof = "appends", st.txn, st.profile
    v = w.version
    if prof.engine == "kernel":
        return CheckOutcome(name, "skipped", "Kernel has no append check", winner_version=v)
    if prof.spark_like and prof.at_least(3, 3) and ((txn.operation or "") in (BACKFILL, UNBACKFILL)
                                                   or (w.operation or "") in (BACKFILL, UNBACKFILL)):
        return CheckOutcome(name, "skipped", "row-tracking backfill/unbackfill on one side: append check skipped",
                            winner_version=v)
    if prof.engine == "delta-rs":
        table_cfg = txn.read_metadata.configuration.get("delta.isolationLevel") if txn.read_metadata else None
        level = delta_rs_isolation_level(w, txn.operation, delta_rs_table_level(table_cfg))
        first = _delta_rs_first_match
    else:
        level = txn.isolation_level
        first = _spark_first_match
    blind = bool(w.is_blind_append)  # missing isBlindAppend (or commitInfo) => not blind (conflict-rules §3)
    changed = [] if blind else list(w.adds)
    blind_adds = list(w.adds) if blind else []
    if level == SNAPSHOT_ISOLATION:
        f, why = first(st, list(w.adds))
        if f is not None:
            st.reordered_before.append(v)
            return CheckOutcome(name, "passed", f"winner v{v} added {f.path}, which this transaction would have read "
                                f"({why}); not checked under SnapshotIsolation, so this transaction is serialized "
                                f"before v{v}", file=f.path, partition=f.partition_values, winner_version=v, reordered=True)
        return CheckOutcome(name, "passed", "SnapshotIsolation: concurrent adds are not checked", winner_version=v)
    forgive_blind = level == WRITE_SERIALIZABLE and (not st.metadata_changed or not prof.ws_counts_blind_when_metadata_changed)
    candidates = changed if forgive_blind else changed + blind_adds
    f, why = first(st, candidates)
    if f is not None:
        if _optimize_exempt(st, w):
            return _exempt(name, st, w)
        if _rlc_eligible(st) and not _is_zorder_optimize(w):
            st.inferred.append("Databricks row-level concurrency assumed to reconcile added rows")
            return CheckOutcome(name, "passed", f"winner v{v} added {f.path} ({why}), but row-level concurrency "
                                "(Databricks, unpartitioned table with deletion vectors) reconciles it unless the "
                                "same rows were modified", file=f.path, partition=f.partition_values,
                                winner_version=v, inferred=True)
        kind = "blind append" if blind else ("commit with no isBlindAppend" if w.is_blind_append is None else "non-blind commit")
        return CheckOutcome(name, "failed", f"winner v{v} ({kind}) added {f.path}: {why} [{level}]",
                            exception="ConcurrentAppendException", file=f.path, partition=f.partition_values,
                            winner_version=v)
    if forgive_blind and blind_adds:
        g, why2 = first(st, blind_adds)
        if g is not None:
            st.reordered_before.append(v)
            return CheckOutcome(name, "passed", f"winner v{v} is a blind append; forgiven under WriteSerializable "
                                f"({g.path}: {why2}), so this transaction is serialized before v{v}",
                                file=g.path, partition=g.partition_values, winner_version=v, reordered=True)
    if not w.adds:
        return CheckOutcome(name, "passed", f"winner v{v} added no files", winner_version=v)
    return CheckOutcome(name, "passed", f"{len(w.adds)} file(s) added by v{v} not read by this transaction"
                        + (f": {why}" if why else ""), winner_version=v)


def _dv_update(w: WinningCommit, path: str) -> bool:
    return any(a.path == path for a in w.adds)


def check_delete_read(st: CheckState, w: WinningCommit) -> CheckOutcome:
    """ConcurrentDeleteReadException (conflict-rules §5.7; delta-rs counts only dataChange=true removes, §9)."""
    name, txn, prof, v = "deleteRead", st.txn, st.profile, w.version
    if prof.engine == "kernel":
        return CheckOutcome(name, "skipped", "Kernel has no delete-read check", winner_version=v)
    removes = list(w.removes)
    if prof.engine == "delta-rs" and not prof.rs_delete_read_counts_compaction:
        ignored = [r for r in removes if r.data_change is False]
        removes = [r for r in removes if r.data_change is not False]
    else:
        ignored = []
    if not removes:
        extra = f" ({len(ignored)} compaction remove(s) with dataChange=false ignored by delta-rs)" if ignored else ""
        return CheckOutcome(name, "passed", f"winner v{v} removed no data files{extra}", winner_version=v)
    if st.read_files is None:
        st.inferred.append("files read by the transaction are unknown: delete-read not decidable")
        return CheckOutcome(name, "skipped", "files read by this transaction are unknown", winner_version=v)
    read = {f.path: f for f in st.read_files}
    for r in removes:
        if r.path in read:
            rf = read[r.path]
            if _optimize_exempt(st, w):
                return _exempt(name, st, w)
            if _rlc_eligible(st) and _dv_update(w, r.path):
                st.inferred.append("Databricks row-level concurrency assumed to reconcile a DV update")
                return CheckOutcome(name, "passed", f"winner v{v} updated the deletion vector of {r.path}, which this "
                                    "transaction read; row-level concurrency (Databricks) reconciles it unless the same "
                                    "rows were modified", file=r.path, partition=rf.partition_values,
                                    winner_version=v, inferred=True)
            return CheckOutcome(name, "failed", f"winner v{v} removed {r.path}, which this transaction read",
                                exception="ConcurrentDeleteReadException", file=r.path,
                                partition=rf.partition_values, winner_version=v)
    if txn.read.whole_table:
        if _optimize_exempt(st, w):
            return _exempt(name, st, w)
        r = removes[0]
        return CheckOutcome(name, "failed", f"winner v{v} removed {r.path} and this transaction read the whole table",
                            exception="ConcurrentDeleteReadException", file=r.path, partition=None, winner_version=v)
    return CheckOutcome(name, "passed", f"none of the {len(removes)} file(s) removed by v{v} was read", winner_version=v)


def check_delete_delete(st: CheckState, w: WinningCommit) -> CheckOutcome:
    """ConcurrentDeleteDeleteException (conflict-rules §5.8; Kernel: ConcurrentWriteException, §7.6)."""
    name, prof, v = "deleteDelete", st.profile, w.version
    if prof.engine == "delta-rs" and not prof.rs_delete_delete_counts_compaction:
        # [observed, deltalake 1.6.6] delta-rs ignores the winner's dataChange=false removes here
        # too (as in its delete-read check): a stale OPTIMIZE commits after a concurrent OPTIMIZE
        # removed the same files. Source up to python-v1.6.3 counts them (conflict-rules §9.4).
        winner_removed = {r.path for r in w.removes if r.data_change is not False}
    else:
        winner_removed = {r.path for r in w.removes}
    for r in st.removes:
        if r.path in winner_removed:
            if _optimize_exempt(st, w):
                return _exempt(name, st, w)
            if _rlc_eligible(st) and (_dv_update(w, r.path) or _reconciled(r, w)):
                st.inferred.append("Databricks row-level concurrency assumed to reconcile concurrent DV updates")
                return CheckOutcome(name, "passed", f"both this transaction and v{v} rewrote {r.path} with deletion "
                                    "vectors; row-level concurrency (Databricks) reconciles them unless the same rows "
                                    "were modified", file=r.path, partition=r.partition_values, winner_version=v,
                                    inferred=True)
            exc = "ConcurrentWriteException" if prof.engine == "kernel" else "ConcurrentDeleteDeleteException"
            return CheckOutcome(name, "failed", f"winner v{v} also removed {r.path}", exception=exc, file=r.path,
                                partition=r.partition_values, winner_version=v)
    return CheckOutcome(name, "passed", "no file removed by both" if st.removes else "this transaction removes no files",
                        winner_version=v)


def _reconciled(mine: FileAction, w: WinningCommit) -> bool:
    """conflict-rules §11: a reconciled loser's remove(P) carries the winner's DV for P."""
    if mine.deletion_vector is None:
        return False
    return any(a.path == mine.path and a.deletion_vector is not None
               and a.deletion_vector.unique_id == mine.deletion_vector.unique_id for a in w.adds)
