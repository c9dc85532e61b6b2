"""File checks: concurrent appends, deletes vs reads, deletes vs deletes.

delta-spark §5.6-§5.8 (release quirks via the profile), delta-rs §9, Kernel §10,
Databricks row-level concurrency §11 (inferred). Reorder detection per conflict-rules §6.
"""

from __future__ import annotations

from collections.abc import Callable

from forensics.model import FileAction, WinningCommit
from forensics.rules.isolation import SNAPSHOT_ISOLATION, WRITE_SERIALIZABLE, delta_rs_isolation_level, delta_rs_table_level
from forensics.rules.matching import Match, partition_match, stats_match
from forensics.rules.meta_checks import BACKFILL, UNBACKFILL
from forensics.rules.results import CheckOutcome
import forensics.rules.row_level as row_level
from forensics.rules.state import CheckState, delta_rs_predicate


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
    undecided: tuple[str, FileAction] | None = None
    for pred in preds:
        seen: dict[tuple, Match] = {}  # a winner's adds share few partitions: one evaluation each
        for f in files:
            pv = f.partition_values
            key = tuple(pv.items()) if isinstance(pv, dict) else None
            m = seen.get(key) if key is not None else None
            if m is None:
                m = partition_match(pred, pv, st.schema, widen=prof.widens_nondeterministic)
                if key is not None:
                    seen[key] = m
            if not m.exact:
                st.inferred.append(m.note)
            if m.undecided:
                undecided = undecided or (pred, f)
            elif m.matched:
                return f, f"read predicate `{pred}` matches its partition values"
    if undecided is not None:
        return _decided_at_commit(st, *undecided)
    return None, "no read predicate matches" if preds else "no read predicates recorded"


def _decided_at_commit(st: CheckState, pred: str, f: FileAction) -> tuple[FileAction | None, str]:
    """conflict-rules §14.3: a predicate not widened matches `f` only through a non-deterministic part,
    whose value at commit time is not in the log. A logged commit shows it did not match; a
    hypothetical transaction may abort (the conservative answer)."""
    how = (f"a non-deterministic part of read predicate `{pred}` was evaluated as written, because "
           f"{st.profile.why_not_widened()}")
    if st.txn.version is not None:
        st.inferred.append(f"{how}: its value at commit time is not in the log; the commit shows it did not match {f.path}")
        return None, f"{how}; only that part could have matched {f.path}, and the commit shows it did not"
    st.inferred.append(f"whether read predicate `{pred}` matches {f.path} is decided at commit time")
    return f, f"{how}, so it may match its partition values"


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
        level, level_why = _delta_rs_level(st, w)
        out = _appends(st, w, level, _delta_rs_first_match)
        out.reason += f" ({level_why})"
        return out
    return _appends(st, w, txn.isolation_level, _spark_first_match)


def _delta_rs_level(st: CheckState, w: WinningCommit) -> tuple[str, str]:
    """conflict-rules §2.2: delta-rs decides the level per winning commit, from the winner's actions and
    the table's level (a delta-rs transaction's own level, which is the table's or the one asked for;
    `delta.isolationLevel` for another writer's commit replayed with the delta-rs rules)."""
    txn = st.txn
    if (txn.engine_info or "").startswith("delta-rs"):
        table = txn.isolation_level
    else:
        table = delta_rs_table_level(txn.read_metadata.configuration.get("delta.isolationLevel") if txn.read_metadata else None)
    level = delta_rs_isolation_level(w, txn.operation, table)
    if level == table:
        return level, (f"delta-rs level for v{w.version}: {level}, the table's; the winner's commitInfo or other "
                       "non-data-change actions keep it")
    return level, f"delta-rs level for v{w.version}: {level}; the winner carries no action that keeps the table's {table}"


def _appends(st: CheckState, w: WinningCommit, level: str,
             first: Callable[[CheckState, list[FileAction]], tuple[FileAction | None, str]]) -> CheckOutcome:
    """The append check at `level`, matching candidates with the engine's `first` (conflict-rules §5.6, §9.2)."""
    name, prof, v = "appends", st.profile, w.version
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
        if row_level.optimize_exempt(st, w):
            return row_level.exempt(name, st, w)
        if row_level.rlc_eligible(st) and not row_level.zorder_on_either_side(st, w):
            return row_level.appends_outcome(st, w, candidates, level)
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
            if row_level.optimize_exempt(st, w):
                return row_level.exempt(name, st, w)
            rlc = row_level.file_outcome(name, st, w, r.path, rf.partition_values)
            if rlc is not None:
                return rlc
            return CheckOutcome(name, "failed", f"winner v{v} removed {r.path}, which this transaction read",
                                exception="ConcurrentDeleteReadException", file=r.path,
                                partition=rf.partition_values, winner_version=v)
    if txn.read.whole_table:
        if row_level.optimize_exempt(st, w):
            return row_level.exempt(name, st, w)
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
            if row_level.optimize_exempt(st, w):
                return row_level.exempt(name, st, w)
            rlc = row_level.file_outcome(name, st, w, r.path, r.partition_values)
            if rlc is not None:
                return rlc
            exc = "ConcurrentWriteException" if prof.engine == "kernel" else "ConcurrentDeleteDeleteException"
            return CheckOutcome(name, "failed", f"winner v{v} also removed {r.path}", exception=exc, file=r.path,
                                partition=r.partition_values, winner_version=v)
    return CheckOutcome(name, "passed", "no file removed by both" if st.removes else "this transaction removes no files",
                        winner_version=v)
