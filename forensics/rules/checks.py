"""Run a profile's ordered checks against winning commits (conflict-rules §1.4, §5.10, §12).

`check_winner` checks ONE winning commit and applies its rebase effects to the state;
`check_window` walks R+1..V-1 in version order and stops at the first abort.
"""

from __future__ import annotations

from typing import Callable

from forensics.model import Bound, FileAction, Transaction, WinningCommit
from forensics.rules.file_checks import check_appends, check_delete_delete, check_delete_read
from forensics.rules.messages import MessageInput, render_message
from forensics.rules.meta_checks import (check_app_ids, check_backfill, check_domain_metadata, check_metadata,
                                         check_protocol, check_rebase_noop, check_unbackfill)
from forensics.rules.profiles import Profile
from forensics.rules.results import CheckOutcome, WindowResult
from forensics.rules.state import CheckState, start_state

CHECKS: dict[str, Callable[[CheckState, WinningCommit], CheckOutcome]] = {
    "protocol": check_protocol,
    "metadata": check_metadata,
    "domainMetadata": check_domain_metadata,
    "appIds": check_app_ids,
    "rowTrackingBackfill": check_backfill,
    "rowTrackingUnbackfill": check_unbackfill,
    "rowIds": check_rebase_noop("rowIds"),
    "rowCommitVersions": check_rebase_noop("rowCommitVersions"),
    "typeWidening": check_rebase_noop("typeWidening"),
    "ict": check_rebase_noop("ict"),
    "appends": check_appends,
    "deleteRead": check_delete_read,
    "deleteDelete": check_delete_delete,
}


def check_winner(txn: Transaction, winner: WinningCommit, profile: Profile, state: CheckState) -> CheckOutcome:
    """Run every check of the profile against one winning commit, in the profile's order.

    Every outcome is appended to `state.checks`; returns the first failure, else a summary.
    """
    state.last_winner = winner.version
    reordered = False
    for name in profile.order:
        if name == "domainMetadata" and not profile.checks_domain_metadata:
            continue
        out = CHECKS[name](state, winner)
        state.checks.append(out)
        if out.status == "failed":
            return out
        # Every outcome a check returns names this winner, and each winner is checked once per
        # state: its own outcomes decide (not a scan of the window's, quadratic in its winners).
        reordered = reordered or (out.reordered and out.winner_version == winner.version)
    return CheckOutcome("winner", "passed",
                        f"winner v{winner.version}: all checks passed" + (" (reordered)" if reordered else ""),
                        winner_version=winner.version, reordered=reordered)


def _winner_commit_info(w: WinningCommit) -> str | None:
    return w.commit.commit_info_raw if w.commit is not None else None


def _message(txn: Transaction, w: WinningCommit, out: CheckOutcome, st: CheckState,
             table_name: str | None) -> tuple[str, str | None]:
    # No isBlindAppend field, whether the commitInfo lacks it or there is no commitInfo at all
    # (WinningCommitSummary reads `isBlindAppend` from an Option of the commitInfo, conflict-rules §7.1).
    adds_only_no_field = bool(w.adds) and not w.removes and w.is_blind_append is None
    detail = out.detail
    if out.exception == "ProtocolChangedException" and st.profile.engine == "delta-rs":
        detail = detail or "protocol changed"
    mi = MessageInput(
        exception=out.exception or "", partition_columns=tuple(txn.partition_columns),
        partition_values=out.partition, file=out.file, winner_version=w.version, winner_operation=w.operation,
        winner_commit_info=_winner_commit_info(w),
        table_name=table_name or (txn.read_metadata.name if txn.read_metadata and txn.read_metadata.name else None),
        winner_blind_append_field_missing_and_adds_only=adds_only_no_field, txn_isolation_level=txn.isolation_level,
        schema=st.schema, domain=out.domain, detail=detail, attempt_version=w.version + 1, error_class=out.error_class,
    )
    return render_message(st.profile, mi)


def _certainty(txn: Transaction, profile: Profile, st: CheckState) -> tuple[Bound, list[str]]:
    why: list[str] = []
    bound = Bound.EXACT
    if not profile.exact:
        why.append(f"{profile.name} rules are inferred")
        bound = Bound.UNKNOWN
    for label, b in (("read files", txn.read.files_bound), ("read predicates", txn.read.predicate_bound),
                     ("isolation level", txn.isolation_level_bound)):
        if b != Bound.EXACT:
            why.append(f"{label} are {b.value}")
            if bound == Bound.EXACT:
                bound = b
    for note in dict.fromkeys(st.inferred):
        why.append(note)
        if bound == Bound.EXACT:
            bound = Bound.UNKNOWN
    return bound, why


def check_window(txn: Transaction, winners: list[WinningCommit], profile: Profile, *,
                 read_snapshot_files: list[FileAction] | None = None,
                 table_name: str | None = None) -> WindowResult:
    """Check `txn` against its winning commits (R+1..V-1) in version order; stop at the first abort.

    `read_snapshot_files` (the active files at R) lets the delta-rs profile derive its read
    files (conflict-rules §9: no predicate => every file). `table_name` fills the v4.1+ messages.
    """
    st = start_state(txn, profile, read_snapshot_files)
    for w in sorted(winners, key=lambda x: x.version):
        out = check_winner(txn, w, profile, st)
        if out.status == "failed":
            message, error_class = _message(txn, w, out, st, table_name)
            bound, notes = _certainty(txn, profile, st)
            return WindowResult(
                verdict="abort", exception=out.exception, winning_version=w.version, rule=out.check,
                partition=out.partition, file=out.file, message=message,
                reordered_before=list(st.reordered_before), checks=list(st.checks), profile=profile.name,
                certainty=bound, error_class=error_class,
                why="; ".join([f"{profile.describe()}: {out.reason}", *notes, *profile.writer_notes()]),
            )
    bound, notes = _certainty(txn, profile, st)
    if st.reordered_before:
        summary = ("commits; serialized before " + ", ".join(f"v{v}" for v in st.reordered_before)
                   + " (reordered)")
    else:
        summary = f"commits: no conflict with {len(winners)} winning commit(s)"
    return WindowResult(
        verdict="commit", exception=None, winning_version=None, rule="none", partition=None, file=None,
        message=summary, reordered_before=list(st.reordered_before), checks=list(st.checks),
        profile=profile.name, certainty=bound, why="; ".join([profile.describe(), *notes, *profile.writer_notes()]),
    )
