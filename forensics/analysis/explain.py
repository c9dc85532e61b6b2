"""`explain`: the story of one version, in words a data engineer can check against the log.

What the transaction read (and how sure we are), which commits landed in its window, each
check and its result, the file or partition involved, the serial order against the log
order, the message the engine would have printed, the aborted attempts it defeated (from
evidence and error texts), and advice grounded in that evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from forensics import safe
from forensics.evidence.defeated import DefeatedAttempt
from forensics.replay.advice import Advice, advise
from forensics.log.delta_log import DeltaLog
from forensics.model import Bound
from forensics.replay.windows import CommitVerdict, replay_commit, winning_commit
from forensics.sets.commit_sets import CommitSets, StateIndex, commit_sets

Line = tuple[str, str]  # (Rich style, text); text is inert (never markup)


@dataclass
class WindowCommit:
    """A winning commit in the explained version's window, summarised from the log."""

    version: int
    operation: str | None
    timestamp: int | None
    adds: int
    removes: int
    is_blind_append: bool | None
    metadata: bool
    protocol: bool
    txn_app_ids: list[str]
    partitions: str  # the first partitions it touched, Hive-style
    txn_id: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "operation": self.operation, "timestamp": self.timestamp, "adds": self.adds,
                "removes": self.removes, "isBlindAppend": self.is_blind_append, "metadata": self.metadata,
                "protocol": self.protocol, "txnAppIds": self.txn_app_ids, "partitions": self.partitions, "txnId": self.txn_id}


@dataclass(frozen=True)
class CommitHeader:
    """Who committed the explained version, when, with which engine, and how sure the verdict is."""

    timestamp: int | None
    engine: str | None
    who: str | None
    isolation_level: str | None
    is_blind_append: bool | None
    txn_id: str | None
    certainty: str

    def to_dict(self) -> dict[str, Any]:
        return {"timestamp": self.timestamp, "engine": self.engine, "who": self.who, "isolationLevel": self.isolation_level,
                "isBlindAppend": self.is_blind_append, "txnId": self.txn_id, "certainty": self.certainty}


@dataclass
class Explanation:
    version: int
    operation: str | None
    read_version: int | None
    verdict: CommitVerdict
    sets: CommitSets
    winners: list[WindowCommit]
    log_order: list[int]
    serial_order: list[int]
    message: str | None
    advice: list[Advice]
    header: CommitHeader
    defeated: list[DefeatedAttempt] = field(default_factory=list)

    @property
    def winning_version(self) -> int | None:
        if self.verdict.winning_version is not None:
            return self.verdict.winning_version
        if self.verdict.reordered_before:
            return self.verdict.reordered_before[0]
        return self.defeated[0].loser_of if self.defeated else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "operation": self.operation,
            "readVersion": self.read_version,
            "commit": self.header.to_dict(),
            "verdict": self.verdict.to_dict(with_checks=True),
            "exception": self.verdict.exception,
            "winning_version": self.verdict.winning_version,
            "partition": self.verdict.partition,
            "file": self.verdict.file,
            "sets": self.sets.to_dict(),
            "window": [w.to_dict() for w in self.winners],
            "log_order": self.log_order,
            "serial_order": self.serial_order,
            "message": self.message,
            "defeated_attempts": [d.to_dict() for d in self.defeated],
            "advice": [a.to_dict() for a in self.advice],
        }

    def lines(self) -> list[Line]:
        out: list[Line] = []
        h = self.header
        v, rv = self.version, self.read_version
        out.append(("bold", f"v{v} {self.operation or '(no operation recorded)'}" + (f" by {h.who}" if h.who else "") + (f" ({h.engine})" if h.engine else "")))
        iso = self.verdict.isolation_level or h.isolation_level
        out.append(("", f"read version {rv if rv is not None else 'unknown'}; isolation {iso or 'unknown'}"
                    + (" (recorded)" if h.isolation_level else " (inferred)") + f"; rules: {self.verdict.profile or 'n/a'}"))
        if self.verdict.profile_why:
            out.append(("dim", f"  profile: {self.verdict.profile_why}"))
        r = self.sets.read
        out.append(("bold", "What it read"))
        if not r.recorded_read:
            out.append(("", "  nothing (no read recorded)"))
        else:
            out.append(("", f"  partition predicate: {' OR '.join(r.partition_predicates) or 'none'}"))
            if r.data_predicates:
                out.append(("", f"  data predicates (ignored by delta-spark's checker): {'; '.join(r.data_predicates)}"))
            if r.whole_table:
                out.append(("", "  read the whole table (readWholeTable)"))
            nfiles = "unknown" if r.files is None else str(len(r.files))
            out.append(("", f"  files read at v{rv}: {nfiles} [{r.files_bound.value}]"))
        if r.why:
            out.append(("dim", f"  why: {r.why}"))
        w = self.sets.write
        out.append(("bold", "What it wrote"))
        extra = []
        if w.metadata_changed:
            extra.append("metadata change")
        if w.protocol_changed:
            extra.append("protocol change")
        if w.app_txns:
            extra.append("txn " + ", ".join(f"{k}={val}" for k, val in w.app_txns.items()))
        out.append(("", f"  {len(w.adds)} add(s), {len(w.removes)} remove(s); blind append: {w.is_blind_append}"
                    + (" (recorded)" if w.is_blind_append_recorded is not None else " (not recorded: treated as false)")
                    + (f"; {', '.join(extra)}" if extra else "")))
        out.append(("bold", f"Its window: {len(self.winners)} commit(s) landed between v{rv} and v{v}" if rv is not None else "Its window: unknown"))
        for wi in self.winners:
            out.append(("", f"  v{wi.version} {wi.operation or '?'}: +{wi.adds} -{wi.removes}"
                        f"{' blind append' if wi.is_blind_append else ''}{' metadata' if wi.metadata else ''}"
                        f"{' protocol' if wi.protocol else ''}{(' partitions ' + wi.partitions) if wi.partitions else ''}"))
        res = self.verdict.result
        if res is not None and res.checks:
            out.append(("bold", "Checks"))
            for c in res.checks:
                style = {"failed": "red", "passed": "green", "skipped": "dim"}.get(c.status, "")
                out.append((style, f"  v{c.winner_version} {c.check}: {c.status}: {c.reason}"))
        out.append(("bold", "Verdict"))
        vs = {"clean": "green", "reordered": "yellow", "anomaly": "bold red", "skipped": "dim"}.get(self.verdict.verdict, "")
        out.append((vs, f"  {self.verdict.verdict}: {self.verdict.why}"))
        if self.verdict.likely_reason:
            out.append(("yellow", f"  likely reason: {self.verdict.likely_reason}"))
        out.append(("", f"  log order:    {' → '.join('v' + str(x) for x in self.log_order)}"))
        out.append(("", f"  serial order: {' → '.join('v' + str(x) for x in self.serial_order)}"
                    + ("  (differs from the log)" if self.serial_order != self.log_order else "")))
        if self.message and self.verdict.verdict == "anomaly":
            out.append(("bold", "The engine would have printed"))
            for ln in self.message.splitlines():
                out.append(("", "  " + ln))
        if self.defeated:
            out.append(("bold", "Aborted attempts this commit defeated"))
            for d in self.defeated:
                out.append(("red", f"  {d.exception or 'unknown exception'}"
                            + (f" partition {d.partition}" if d.partition else "")
                            + (f" file {d.file}" if d.file else "")
                            + f" — {d.source}"))
                if d.why:
                    out.append(("dim", f"    {d.why}"))
        if self.advice:
            out.append(("bold", "What to change"))
            for a in self.advice:
                out.append(("cyan", f"  • {a.title}"))
                out.append(("", f"    {a.detail}"))
                out.append(("dim", f"    evidence: {a.evidence}"))
        return [(s, safe.inert(t, 4000)) for s, t in out]


def _winner_summary(log: DeltaLog, v: int) -> WindowCommit:
    rec = log.record(v)
    parts = ", ".join(",".join(f"{k}={val}" for k, val in p.items()) for p in rec.partitions_touched[:4])
    if len(rec.partitions_touched) > 4:
        parts += f" +{len(rec.partitions_touched) - 4}"
    return WindowCommit(v, rec.operation, rec.timestamp, rec.num_add, rec.num_remove, rec.is_blind_append,
                        rec.has_metadata, rec.has_protocol, rec.txn_app_ids, parts, rec.txn_id)


def explain_version(
    log: DeltaLog,
    version: int,
    *,
    rules: str | None = None,
    isolation_level: str | None = None,
    state: StateIndex | None = None,
    defeated: list[DefeatedAttempt] | None = None,
) -> Explanation:
    state = state or StateIndex(log)
    rec = log.record(version)
    verdict = replay_commit(log, version, state, rules=rules, isolation_level=isolation_level)
    sets = commit_sets(log, version, state)
    window = verdict.window
    in_log = [w for w in window if log.has_version(w)]
    winners = [_winner_summary(log, w) for w in in_log]
    log_order = list(window) + [version]
    if verdict.verdict == "reordered":
        forgiven = set(verdict.reordered_before)
        first = [w for w in window if w not in forgiven]
        serial = first + [version] + [w for w in window if w in forgiven]
    else:
        serial = list(log_order)
    wobjs = [winning_commit(log, w) for w in in_log]
    cfg = sets.read_metadata.configuration if sets.read_metadata else {}
    adv = advise(
        sets,
        exception=verdict.exception,
        winners=wobjs,
        winning_version=verdict.winning_version if verdict.winning_version is not None else (verdict.reordered_before[0] if verdict.reordered_before else None),
        reordered_before=verdict.reordered_before,
        isolation_level=verdict.isolation_level,
        table_config=cfg,
        writer=sets.writer,
        operation_parameters=rec.operation_parameters,
    )
    defeated = list(defeated or [])
    for d in defeated:
        # advice grounded in the loser's evidence (forensics.evidence.loser), said once
        for text in d.advice or ():
            a = Advice("For the aborted transaction", text, d.source)
            if a not in adv:
                adv.append(a)
    who = rec.user_name or (rec.job or {}).get("jobName") if isinstance(rec.job, dict) else rec.user_name
    header = CommitHeader(rec.timestamp, rec.engine_info, who, rec.isolation_level, rec.is_blind_append, rec.txn_id,
                          verdict.certainty if verdict.certainty else Bound.UNKNOWN.value)
    return Explanation(
        version=version,
        operation=rec.operation,
        read_version=rec.read_version,
        verdict=verdict,
        sets=sets,
        winners=winners,
        log_order=log_order,
        serial_order=serial,
        message=verdict.result.message if verdict.result is not None else None,
        advice=adv,
        defeated=defeated,
        header=header,
    )
