"""`explain`: the story of one version, in words a data engineer can check against the log.

What the transaction read (and how sure we are), which commits landed in its window, each
check and its result, the file or partition involved, the serial order against the log
order, the message the engine would have printed, the aborted attempts it defeated (from
evidence and error texts), and advice grounded in that evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from forensics import safe
from forensics.analysis.counterfactual import layout_verdict
from forensics.analysis.story import (StoryLine, bound_in_words, clauses, damaged_commits, did, explanation_story, in_words,
                                     rule_in_words, rule_of_exception)
from forensics.evidence.defeated import DefeatedAttempt
from forensics.replay.advice import Advice, advise, fixes_for_loser, logged_condition
from forensics.log.delta_log import DeltaLog
from forensics.model import Bound, CommitRecord
from forensics.replay.verdict import CommitVerdict, replay_commit, winning_commit
from forensics.rules import CheckOutcome
from forensics.sets.commit_sets import CommitSets, StateIndex, commit_sets
from forensics.times import as_datetime, with_iso

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
    txn_app_ids: dict[str, int]  # appId -> version, as history's txnAppIds
    partitions: str  # the first partitions it touched, Hive-style
    txn_id: str | None

    def to_dict(self) -> dict[str, Any]:
        return with_iso({"version": self.version, "operation": self.operation, "timestamp": self.timestamp, "adds": self.adds,
                         "removes": self.removes, "isBlindAppend": self.is_blind_append, "metadata": self.metadata,
                         "protocol": self.protocol, "txnAppIds": self.txn_app_ids, "partitions": self.partitions,
                         "txnId": self.txn_id}, "timestamp")


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
        return with_iso({"timestamp": self.timestamp, "engine": self.engine, "who": self.who, "isolationLevel": self.isolation_level,
                         "isBlindAppend": self.is_blind_append, "txnId": self.txn_id, "certainty": self.certainty}, "timestamp")


class Verdict(str):
    """A verdict's word (`clean`, `reordered`, `anomaly`, `skipped`), a `str`, that still answers the
    replay record's attributes (`.why`, `.exception`, ...) for code written when `Explanation.verdict`
    was that record (now `Explanation.replayed`)."""

    def __new__(cls, replayed: CommitVerdict) -> "Verdict":
        word = super().__new__(cls, replayed.verdict)
        word._replayed = replayed
        return word

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_replayed":
            raise AttributeError(name)
        return getattr(self._replayed, name)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Verdict, (self._replayed,))


@dataclass
class Explanation:
    """The story of one version. The answer is flat (`verdict`, `exception`, `winning_version`,
    `rule`, `partition`, `file`, `certainty`, `committed_at`); `replayed` keeps the replay's full
    record with every check, `story()` tells it in lines (each a `str`)."""

    version: int
    operation: str | None
    read_version: int | None
    replayed: CommitVerdict
    sets: CommitSets
    winners: list[WindowCommit]
    log_order: list[int]
    serial_order: list[int]
    message: str | None
    advice: list[Advice]
    header: CommitHeader
    defeated: list[DefeatedAttempt] = field(default_factory=list)
    # the commits the story names (this one, the one it read, its window, re-runs of its losers); not in the JSON
    commits: dict[int, CommitRecord] = field(default_factory=dict)
    damaged: dict[int, list[str]] = field(default_factory=dict)  # of those, what the reader rejected (story.stands_on)

    @property
    def verdict(self) -> Verdict:
        """clean, reordered, anomaly or skipped (a `str`)."""
        return Verdict(self.replayed)

    @property
    def winning_version(self) -> int | None:
        """The commit it lost to or was reordered against; else the version of an aborted attempt
        it defeated (its loser: `defeated`)."""
        if self.replayed.winning_version is not None:
            return self.replayed.winning_version
        if self.replayed.reordered_before:
            return self.replayed.reordered_before[0]
        return self.defeated[0].loser_of if self.defeated else None

    @property
    def exception(self) -> str | None:
        """The exception the engine would have thrown (an anomaly: the log holds a commit it should have aborted)."""
        return self.replayed.exception

    @property
    def rule(self) -> str | None:
        """The conflict rule (conflict-rules section) the winner tripped, or None for a clean commit."""
        return self.replayed.rule

    @property
    def partition(self) -> dict | None:
        """The partition values the conflict was on, when the rule names one."""
        return self.replayed.partition

    @property
    def file(self) -> str | None:
        """The data file the conflict was on, when the rule names one."""
        return self.replayed.file

    @property
    def reordered_before(self) -> list[int]:
        """Winners it was serialised before (forgiven blind appends under WriteSerializable)."""
        return list(self.replayed.reordered_before)

    @property
    def isolation_level(self) -> str | None:
        """The isolation level the commit was replayed at (the override, else the commit's own)."""
        return self.replayed.isolation_level or self.header.isolation_level

    @property
    def certainty(self) -> str:
        """exact, superset, subset, unknown, inferred (how far the log tells what it read)."""
        return self.header.certainty

    @property
    def why(self) -> str:
        """One sentence saying why the replay reached its verdict."""
        return self.replayed.why

    @property
    def committed_at(self) -> datetime | None:
        """When the version was committed (aware UTC)."""
        return as_datetime(self.header.timestamp)

    @property
    def story_text(self) -> str:
        """The story as one text, a line each."""
        return "\n".join(self.story())

    def to_dict(self) -> dict[str, Any]:
        """The `explain --json` document (camelCase keys, without `schema_version`)."""
        return {
            "version": self.version,
            "operation": self.operation,
            "readVersion": self.read_version,
            "commit": self.header.to_dict(),
            "verdict": self.replayed.to_dict(with_checks=True),
            "exception": self.replayed.exception,
            "winningVersion": self.replayed.winning_version,
            "partition": self.replayed.partition,
            "file": self.replayed.file,
            "sets": self.sets.to_dict(),
            "window": [w.to_dict() for w in self.winners],
            "logOrder": self.log_order,
            "serialOrder": self.serial_order,
            "message": self.message,
            "defeatedAttempts": [d.to_dict() for d in self.defeated],
            "advice": [a.to_dict() for a in self.advice],
            "story": [line.text for line in self.story()],
        }

    def story(self, utc: bool | None = None) -> list[StoryLine]:
        """The incident in a few plain lines (each a `str`: `"\\n".join(e.story())`): who and when, what each side did, the rule, how sure, what to
        change. `utc`: times in UTC alone (None: as DELTA_FORENSICS_UTC asks)."""
        return explanation_story(self, utc)

    def lines(self, verbose: bool = False, utc: bool | None = None) -> list[Line]:
        """The story, then the evidence: checks that passed fold into one line per winner unless `verbose`."""
        out: list[Line] = [(ln.style, ln.text) for ln in self.story(utc)]
        h, v, rv = self.header, self.replayed, self.read_version
        iso = v.isolation_level or h.isolation_level
        out.append(("", ""))
        out.append(("bold", "Evidence" + ("" if verbose else " (--verbose shows every check)")))
        out.append(("", f"  read version {rv if rv is not None else 'not recorded'}; isolation {iso or 'unknown'}"
                    + (" (recorded)" if h.isolation_level else " (not recorded: the table's default)")
                    + (f"; rules of {v.profile}" if v.profile else "")))
        if v.profile_why and verbose:
            out.append(("dim", f"  rules chosen because: {in_words(v.profile_why)}"))
        r = self.sets.read
        out.append(("bold", "What it read"))
        if not r.recorded_read:
            out.append(("", "  nothing (no read recorded)"))
        else:
            out.append(("", f"  partition predicate: {' OR '.join(r.partition_predicates) or 'none'}"))
            if r.data_predicates:
                out.append(("", f"  data predicates (delta-spark's conflict checker ignores them): {'; '.join(r.data_predicates)}"))
            if r.whole_table:
                out.append(("", "  it read the whole table (readWholeTable)"))
            nfiles = "unknown" if r.files is None else str(len(r.files))
            out.append(("", f"  files read at v{rv}: {nfiles} ({bound_in_words(r.files_bound.value)})"))
        for c in clauses(r.why):
            out.append(("dim", f"  · {c}"))
        w = self.sets.write
        out.append(("bold", "What it wrote"))
        out.append(("", f"  it {did(self.commits.get(self.version))}" + ("" if w.is_blind_append else "; not a blind append"
                    + (" (recorded)" if w.is_blind_append_recorded is not None else " (isBlindAppend not recorded: taken as not blind)"))))
        out.append(("bold", f"Its window: {len(self.winners)} commit(s) landed between v{rv} and v{self.version}" if rv is not None else "Its window: unknown"))
        for wi in self.winners:
            out.append(("", f"  v{wi.version} {wi.operation or '?'}: +{wi.adds} -{wi.removes}"
                        f"{', blind append' if wi.is_blind_append else ''}{', metadata' if wi.metadata else ''}"
                        f"{', protocol' if wi.protocol else ''}{(', partitions ' + wi.partitions) if wi.partitions else ''}"))
        res = v.result
        if res is not None and res.checks:
            out.append(("bold", "Checks"))
            out += _check_lines(res.checks, verbose)
        out.append(("bold", "Verdict"))
        vs = {"clean": "green", "reordered": "yellow", "anomaly": "bold red", "skipped": "dim"}.get(v.verdict, "")
        out.append((vs, f"  {v.verdict}: {in_words(v.why)}"))
        if v.likely_reason:
            out.append(("yellow", f"  likely reason: {in_words(v.likely_reason)}"))
        out.append(("", f"  log order:    {' → '.join('v' + str(x) for x in self.log_order)}"))
        out.append(("", f"  serial order: {' → '.join('v' + str(x) for x in self.serial_order)}"
                    + ("  (differs from the log)" if self.serial_order != self.log_order else "")))
        if self.message and v.verdict == "anomaly":
            out.append(("bold", "The engine would have printed"))
            for ln in self.message.splitlines():
                out.append(("", "  " + ln))
        if self.defeated:
            out.append(("bold", "Aborted attempts this commit defeated"))
            for d in self.defeated:
                out.append(("red", f"  {d.exception or 'unknown exception'}"
                            + (f" in partition {', '.join(f'{k}={x}' for k, x in d.partition.items()) or 'the table root'}" if d.partition is not None else "")
                            + (f", file {d.file}" if d.file else "")
                            + f" ({in_words(d.source)})"))
                for c in clauses(d.why):
                    out.append(("dim", f"    · {c}"))
        if self.advice:
            out.append(("bold", "What to change"))
            for a in self.advice:
                out.append(("cyan", f"  • {a.title}"))
                if a.detail:
                    out.append(("", f"    {in_words(a.detail)}"))
                if a.evidence:
                    out.append(("dim", f"    evidence: {in_words(a.evidence)}"))
        return [(st, safe.inert(t, 4000)) for st, t in out]


def _forgiven(c: CheckOutcome) -> str | None:
    """Why a passed check did not abort although it matched (a forgiven winner), or None."""
    if c.reordered:
        return "blind append, WriteSerializable" if "WriteSerializable" in c.reason else "not checked at SnapshotIsolation"
    if c.inferred and c.status == "passed":
        return "row-level concurrency, inferred"
    return None


def _check_lines(checks: list[CheckOutcome], verbose: bool) -> list[Line]:
    """Every check when verbose; else one line per winner, with the check that decided (failed or
    forgave) in full beneath it."""
    out: list[Line] = []
    by_winner: dict[int | None, list[CheckOutcome]] = {}
    for c in checks:
        by_winner.setdefault(c.winner_version, []).append(c)
    for wv, cs in by_winner.items():
        decided = [c for c in cs if c.status == "failed" or _forgiven(c)]
        if verbose:
            for c in cs:
                style = "red" if c.status == "failed" else ("yellow" if _forgiven(c) else {"passed": "green", "skipped": "dim"}.get(c.status, ""))
                out.append((style, f"  v{wv} {rule_in_words(c.check)}: {c.status}: {in_words(c.reason)}"))
            continue
        passed = sum(1 for c in cs if c.status == "passed" and c not in decided)
        skipped = sum(1 for c in cs if c.status == "skipped")
        head = f"  v{wv}: {passed} check(s) passed" + (f", {skipped} skipped" if skipped else "")
        for c in decided:
            head += (f"; {rule_in_words(c.check)}: failed ({c.exception})" if c.status == "failed"
                     else f"; {rule_in_words(c.check)}: forgiven ({_forgiven(c)})")
        out.append(("red" if any(c.status == "failed" for c in decided) else ("yellow" if decided else "green"), head))
        for c in decided:
            out.append(("red" if c.status == "failed" else "yellow", f"    {rule_in_words(c.check)}: {in_words(c.reason)}"))
    return out


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
        log=log, state=state, version=version, rules=rules,  # each change is replayed before it is given
        layout=lambda col: layout_verdict(log, version, col, state=state, rules=rules, isolation_level=isolation_level),
    )
    defeated = list(defeated or [])
    commits = {x: log.record(x) for x in [version, rec.read_version, *in_log] if x is not None and log.has_version(x)}
    for d in defeated:
        if d.retry_version is not None and log.has_version(d.retry_version):
            commits[d.retry_version] = log.record(d.retry_version)
        # advice grounded in the loser's evidence (its orphan files, its re-run, its error text), said once
        retry = commits.get(d.retry_version) if d.retry_version is not None else None
        for a in _loser_fixes(log, state, d, retry, sets.writer) or d.fixes():
            if a not in adv:
                adv.append(a)
    who = rec.user_name or (rec.job or {}).get("jobName") if isinstance(rec.job, dict) else rec.user_name
    header = CommitHeader(rec.timestamp, rec.engine_info, who, rec.isolation_level, rec.is_blind_append, rec.txn_id,
                          verdict.certainty if verdict.certainty else Bound.UNKNOWN.value)
    return Explanation(
        version=version,
        operation=rec.operation,
        read_version=rec.read_version,
        replayed=verdict,
        sets=sets,
        winners=winners,
        log_order=log_order,
        serial_order=serial,
        message=verdict.result.message if verdict.result is not None else None,
        advice=adv,
        defeated=defeated,
        header=header,
        commits=commits,
        damaged=damaged_commits(log, commits),
    )


def _loser_fixes(log: DeltaLog, state: StateIndex, d: DefeatedAttempt, retry: CommitRecord | None, writer: str) -> list[Advice]:
    """What the transaction that lost to this version should change, from its traces: the partitions
    its orphan files are in, and its re-run's condition (the user's SQL as the engine logged it)."""
    conds = [(logged_condition(retry.operation_parameters or {}), f"its re-run v{retry.version}'s condition")] if retry is not None else []
    try:
        return fixes_for_loser(log, state, d.loser_of, rule=rule_of_exception(d.exception), parts=list(d.wrote),
                               loser_operation=retry.operation if retry is not None else d.operation,
                               family="delta-rs" if writer == "delta-rs" else None, file=d.file, conditions=conds,
                               read_version=d.read_version)
    except Exception:  # noqa: BLE001 - advice must not fail the explanation
        return []
