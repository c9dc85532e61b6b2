"""One window's verdict: a commit with a stale readVersion checked against its winners with the
rules of the engine that wrote it (conflict-rules §1.6), and the windows of a log in blocks.

- clean:     every check ran and passed;
- reordered: it passed only because a winner's blind append was forgiven (WriteSerializable)
             or because it ran at SnapshotIsolation: the serial order differs from the log;
- anomaly:   the rules say it should have aborted, yet it committed (with the likely reason);
- skipped:   the window cannot be replayed (no readVersion recorded, commitLarge, ...).

`forensics.replay.windows` replays a whole table with these (a long log's later windows in a
second process, `forensics.replay.second`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable
from functools import partial
from typing import Any

from forensics.log.delta_log import DeltaLog
from forensics.model import COMMIT_LARGE_OPS, ISOLATION_LEVELS, Bound, CommitRecord, Transaction, WinningCommit
from forensics.rules import check_window, effective_isolation_level, get_profile, profile_for_engine_info
from forensics.rules.isolation import delta_rs_table_level
from forensics.rules.results import WindowResult, outcome_fields
from forensics.sets.commit_sets import CommitSets, StateIndex, commit_sets, prefetch_write_sets, write_set


@dataclass
class CommitVerdict:
    version: int
    read_version: int | None
    window: list[int]
    verdict: str  # clean | reordered | anomaly | skipped
    operation: str | None = None
    exception: str | None = None
    winning_version: int | None = None
    rule: str | None = None
    partition: dict | None = None
    file: str | None = None
    reordered_before: list[int] = field(default_factory=list)
    profile: str = ""
    profile_why: str = ""
    profile_description: str = ""  # the profile's describe(), the head of `why`: a view says it once, not per row
    isolation_level: str | None = None
    certainty: str = Bound.EXACT.value
    why: str = ""
    likely_reason: str | None = None
    message: str | None = None
    result: WindowResult | None = None

    def to_dict(self, with_checks: bool = False) -> dict[str, Any]:
        d = {
            "version": self.version,
            "readVersion": self.read_version,
            "operation": self.operation,
            "window": self.window,
            "verdict": self.verdict,
            **outcome_fields(self),
            "reorderedBefore": self.reordered_before,
            "profile": self.profile,
            "isolationLevel": self.isolation_level,
            "certainty": self.certainty,
            "why": self.why,
            "likelyReason": self.likely_reason,
        }
        if with_checks and self.result is not None:
            d["checks"] = [c.to_dict() for c in self.result.checks]
            d["message"] = self.result.message
        return d


def _get_result(self: CommitVerdict) -> WindowResult | None:
    r = self._result
    if callable(r):  # a window another process replayed: its checks are rebuilt when first asked for
        r = self._result = r()
    return r


def _set_result(self: CommitVerdict, value: "WindowResult | Callable[[], WindowResult | None] | None") -> None:
    self._result = value


# `result` stays a constructor argument and an attribute; it may also be given as a function that
# computes it, called on first use (forensics/replay/second.py: what a child process replayed is
# sent back without its checks, which the report's readers rarely open).
CommitVerdict._result = None  # type: ignore[attr-defined]
CommitVerdict.result = property(_get_result, _set_result)  # type: ignore[assignment,method-assign]


def has_result(v: CommitVerdict) -> bool:
    """Whether the verdict has a window result, without computing one that is yet to be rebuilt."""
    return v._result is not None  # type: ignore[attr-defined]


def rebuilt_result(version: int, log: DeltaLog, state: StateIndex, rules: str | None,
                   isolation_level: str | None) -> WindowResult | None:
    """A window's result replayed again: a long replay keeps its verdicts without their checks."""
    return replay_commit(log, version, state, rules=rules, isolation_level=isolation_level).result


# --------------------------------------------------------------------------------------
# Building the checker's inputs from the log
# --------------------------------------------------------------------------------------


def winning_commit(log: DeltaLog, version: int) -> WinningCommit:
    rec = log.record(version)
    w = write_set(log, rec)
    return WinningCommit(
        version=version,
        operation=rec.operation,
        adds=w.adds,
        removes=w.removes,
        metadata=w.metadata,
        protocol=w.protocol,
        app_txns=w.app_txns,
        domains=w.domains,
        is_blind_append=rec.is_blind_append,  # absent stays None: treated as false (conflict-rules §3)
        commit=rec,
        tags=dict(rec.tags or {}),
    )


def _winning_commit_cached(log: DeltaLog, version: int) -> WinningCommit:
    """A winner appears in every window it overlaps: build it once per log."""
    memo = log.derived.setdefault("winning_commit", {})
    rec = log.record(version)
    hit = memo.get(version)
    if hit is None or hit[0] is not rec:
        hit = memo[version] = (rec, winning_commit(log, version))
    return hit[1]


def transaction_from_sets(rec: CommitRecord, sets: CommitSets, read_version: int, isolation_override: str | None = None) -> Transaction:
    level, bound = _isolation(rec, sets, isolation_override)
    return Transaction(
        operation=rec.operation,
        operation_parameters=rec.operation_parameters,
        read_version=read_version,
        isolation_level=level,
        read=sets.read,
        write=sets.write,
        partition_columns=sets.schema.partition_columns,
        schema_string=sets.read_metadata.schema_string if sets.read_metadata else None,
        read_metadata=sets.read_metadata,
        read_protocol=sets.read_protocol,
        engine_info=rec.engine_info,
        tags=dict(rec.tags or {}),
        txn_id=rec.txn_id,
        version=rec.version,
        isolation_level_bound=bound,
    )


def _isolation(rec: CommitRecord, sets: CommitSets, override: str | None) -> tuple[str, Bound]:
    """The effective level: recorded (exact), or computed by conflict-rules §2.1 from the table level."""
    table_level = None
    if override:
        table_level = override
    if sets.writer == "delta-rs":
        # conflict-rules §2.2: delta-rs keeps no level of its own; each winner is checked at the table's level
        # (SnapshotIsolation only against a winner with no action at all): show the table's level
        conf = (sets.read_metadata.configuration if sets.read_metadata else {}).get("delta.isolationLevel")
        return override or delta_rs_table_level(conf), (Bound.EXACT if override else Bound.UNKNOWN)
    if not override and rec.isolation_level in ISOLATION_LEVELS:
        return rec.isolation_level, Bound.EXACT
    if table_level is None:
        conf = (sets.read_metadata.configuration if sets.read_metadata else {}).get("delta.isolationLevel")
        default = "WriteSerializable" if sets.writer == "databricks" else "Serializable"
        table_level = conf if conf in ("Serializable", "WriteSerializable") else default
    if table_level == "SnapshotIsolation":
        return table_level, Bound.EXACT if override else Bound.UNKNOWN
    others = []
    if sets.write.metadata is not None:
        others.append("metaData")
    if sets.write.protocol is not None:
        others.append("protocol")
    if sets.write.app_txns:
        others.append("txn")
    others += [f"domainMetadata:{d}" for d in sets.write.domains]
    level = effective_isolation_level(sets.write.adds + sets.write.removes + sets.write.cdc, rec.operation, table_level, other_actions=others)
    return level, (Bound.EXACT if override else Bound.UNKNOWN)


# --------------------------------------------------------------------------------------
# Replay
# --------------------------------------------------------------------------------------


def replay_commit(
    log: DeltaLog,
    version: int,
    state: StateIndex | None = None,
    *,
    rules: str | None = None,
    isolation_level: str | None = None,
) -> CommitVerdict:
    state = state or StateIndex(log)
    rec = log.record(version)
    rv = rec.read_version
    op = (rec.operation or "").upper()
    base = CommitVerdict(version=version, read_version=rv, window=[], verdict="skipped", operation=rec.operation)
    if rv is None:
        base.why = "readVersion not recorded (delta-rs and hand-built writers omit it): the window is unknown"
        base.certainty = Bound.UNKNOWN.value
        return base
    if rv >= version:
        base.verdict = "anomaly"
        base.why = f"readVersion {rv} is not below version {version}"
        base.likely_reason = "a copied or hand-edited commit file (not concurrency)"
        return base
    base.window = list(range(rv + 1, version))
    original = log.copies.get(version)
    if original is not None:
        base.window = []
        base.why = (f"a copy of v{original} (same txnId or commitInfo): a copied commit file, not a concurrent "
                    "transaction; not replayed")
        return base
    if op in COMMIT_LARGE_OPS:
        base.why = f"{rec.operation} commits without conflict checks (commitLarge, conflict-rules §1.6)"
        return base
    if not base.window:
        base.verdict = "clean"
        base.why = f"no commit landed between its read (v{rv}) and its commit: nothing to check"
        return base
    missing = [w for w in base.window if not log.has_version(w)]
    if missing:
        base.why = f"winning commit(s) {missing[:5]} are not in the retained log"
        base.certainty = Bound.UNKNOWN.value
        return base
    if rules:
        profile, pwhy = get_profile(rules), f"--rules {rules}"
    else:
        profile, pwhy = profile_for_engine_info(rec.engine_info, rec.has_commit_info, cluster_id=rec.cluster_id)
    if profile is None:
        base.why, base.profile_why = pwhy, pwhy
        base.certainty = Bound.UNKNOWN.value
        return base
    sets = commit_sets(log, version, state)
    txn = transaction_from_sets(rec, sets, rv, isolation_level)
    winners = [_winning_commit_cached(log, w) for w in base.window]
    # Only a profile that derives its read from the snapshot needs its files (a tenth of a
    # 1,000,000-commit replay when listed for every window).
    read_files = state.lifetimes.files_at(rv) if profile.reads_the_snapshot and state.lifetimes.exact_at(rv) else None
    result = check_window(txn, winners, profile, read_snapshot_files=read_files, table_name=_table_name(sets))
    v = base
    v.profile, v.profile_why, v.isolation_level, v.result = profile.name, pwhy, txn.isolation_level, result
    v.profile_description = profile.describe()
    v.certainty = result.certainty.value
    v.reordered_before = list(result.reordered_before)
    v.message = result.message
    if result.verdict == "abort" and _read_set_is_a_bound(sets):
        # It committed, and the log records no read at all: the whole-table read is the tool's
        # assumption (an append recorded as not blind). An abort under it says the real reads were
        # narrower, not that the engine erred: no anomaly is claimed.
        v.verdict = "clean"
        v.certainty = Bound.UNKNOWN.value
        v.why = (f"committed; what it read is not recorded, only an upper bound ({sets.read.why}), under which "
                 f"{profile.name} rules would abort it with {result.exception} against v{result.winning_version}: "
                 f"it read less than that (the engine checked what it really read)")
    elif result.verdict == "abort":
        v.verdict = "anomaly"
        v.exception, v.winning_version, v.rule = result.exception, result.winning_version, result.rule
        v.partition, v.file = result.partition, result.file
        v.likely_reason = _likely_reason(log, rec, sets, result)
        v.why = f"committed although {profile.name} rules abort it with {result.exception} against v{result.winning_version}: {result.why}"
    elif result.reordered_before:
        v.verdict = "reordered"
        v.why = (
            f"passed only because {', '.join('v' + str(x) for x in result.reordered_before)} "
            f"{'was' if len(result.reordered_before) == 1 else 'were'} forgiven ({txn.isolation_level}); "
            f"serial order: v{version} before {', '.join('v' + str(x) for x in result.reordered_before)}; {result.why}"
        )
    else:
        v.verdict = "clean"
        v.why = result.why
    return v


def _read_set_is_a_bound(sets: CommitSets) -> bool:
    """Whether the log records no read at all for a transaction that read (an append recorded as not
    blind: taken to have read the whole table), so an abort under that assumption cannot show the
    engine erred. A recorded predicate rebuilt coarsely (files from it, an ambiguous MERGE
    condition) is the engine's own read, widened: a conflict on it is still reported."""
    return sets.read.assumed


def _table_name(sets: CommitSets) -> str | None:
    md = sets.read_metadata
    return md.name if md and md.name else None


def _likely_reason(log: DeltaLog, rec: CommitRecord, sets: CommitSets, result: WindowResult) -> str:
    if any(c.inferred for c in result.checks):
        return "row-level concurrency reconciliation (Databricks, conflict-rules §11)"
    cfg = sets.read_metadata.configuration if sets.read_metadata else {}
    if sets.writer == "databricks" and cfg.get("delta.enableDeletionVectors") == "true" and not sets.schema.partition_columns:
        return "row-level concurrency reconciliation (Databricks, unpartitioned table with deletion vectors, conflict-rules §11)"
    if sets.read.files_bound != Bound.EXACT or sets.read.predicate_bound != Bound.EXACT:
        bound = sets.read.files_bound if sets.read.files_bound != Bound.EXACT else sets.read.predicate_bound
        return f"the read set was reconstructed too coarsely ({bound.value}): {sets.read.why}"
    if sets.writer in ("delta-rs", "kernel"):
        return f"a {sets.writer} writer: its rules differ, and its commitInfo omits what the replay needs"
    return "a writer that committed without these checks, or a commit file written by hand"


# Windows replayed per block: their commits and winners are built in one pass over the actions
# (one slice per version costs more than the rows), and what no later window needs is let go, so
# a 1,000,000-commit log does not hold every commit's write set at once.
REPLAY_BLOCK = 2000


# A concurrency window: a commit's version and its readVersion (None: not recorded).
Window = tuple[int, int | None]


def concurrency_windows(log: DeltaLog, versions: list[int] | None = None) -> tuple[list[Window], int]:
    """(version, readVersion) of every commit to replay, in version order, and how many commits
    read the version right before theirs (nothing to check)."""
    not_concurrent = 0
    wanted = set(versions) if versions is not None else None
    windows: list[Window] = []
    for v, rv in log.commits.select(["version", "read_version"]).iter_rows():
        if wanted is not None and v not in wanted:
            continue
        if (rv is not None and rv == v - 1) or (rv is None and v == 0):
            not_concurrent += 1
        else:
            windows.append((v, rv))
    return windows, not_concurrent


def first_needed(windows: list[Window]) -> list[int]:
    """For each i, the first version any window from the i-th on needs (its readVersion + 1, or
    itself); one past the end holds a sentinel above every version."""
    out = [0] * (len(windows) + 1)
    out[-1] = 1 << 62
    for i in range(len(windows) - 1, -1, -1):
        v, rv = windows[i]
        out[i] = min(out[i + 1], v if rv is None or rv >= v else rv + 1)
    return out


def replay_windows(log: DeltaLog, state: StateIndex, windows: list[Window], rules: str | None,
                   isolation_level: str | None, *, keep_results: bool = True) -> dict[int, CommitVerdict]:
    """The verdict of each window, a block at a time. Without `keep_results` each verdict's window
    result (its checks: a hundred per window when ten commits raced it) is let go as soon as the
    verdict is made, and replayed again if a reader opens it: a 1,000,000-commit replay kept seven
    million checks alive, gigabytes the collector walked again and again."""
    verdicts: dict[int, CommitVerdict] = {}
    needed = first_needed(windows)
    held = {v for m in log.derived.values() if isinstance(m, dict) for v in m}  # the caller's: kept
    built: set[int] = set()
    for start in range(0, len(windows), REPLAY_BLOCK):
        block = windows[start:start + REPLAY_BLOCK]
        need: set[int] = set()
        for v, rv in block:
            if rv is not None and rv < v - 1:
                need.add(v)
                need.update(range(rv + 1, v))
        prefetch_write_sets(log, sorted(need))
        built |= need
        for v, _rv in block:
            verdict = verdicts[v] = replay_commit(log, v, state, rules=rules, isolation_level=isolation_level)
            if not keep_results and verdict.result is not None:
                verdict.result = partial(rebuilt_result, v, log, state, rules, isolation_level)
            built.add(v)
        if start + REPLAY_BLOCK < len(windows):  # the last block's stay, for the caller's next question
            done = {x for x in built if x < needed[start + len(block)] and x not in held}
            log.forget(done)
            built -= done
    return verdicts
