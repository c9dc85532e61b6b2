"""Rebuild the losing transaction of an error text and replay it (explain-error with a table).

The text names the rule that fired and, usually, the winner. From the rule we infer what the
loser must have read or deleted (conflict-rules §5.2-§5.8): an append conflict in partition P means its
read predicate matched P (it read P or the whole table); DeleteRead naming F means it read F;
DeleteDelete means it removed F; Metadata means the winner changed metadata; Transaction means
the same appId. We build each candidate as a what-if transaction reading R = winner - 1 (or
the version current when an event log says the query started) and keep the first whose replay
reproduces the text's exception against the winner. Inferred, and labelled so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import polars as pl

from forensics.errortext import ErrorReport
from forensics.evidence.attribution import Candidate, same_rule
from forensics.evidence.hypotheses import Hypothesis, partition_predicate
from forensics.evidence.walk import canonical
from forensics.errors import ExitCode, ForensicsError
from forensics.times import as_datetime, fmt_time, utc_default
from forensics.log.delta_log import DeltaLog
from forensics.model import CommitRecord
from forensics.sets.commit_sets import StateIndex
from forensics.replay.advice import Advice
from forensics.replay.whatif import WhatIfRequest, WhatIfResult, whatif
from forensics.evidence.winner import WinnerMatch, find_winner

FAMILY_RULES = {"delta-rs": "delta-rs", "kernel": "kernel", "databricks": "databricks",
                "delta-spark<=3.1": "delta-spark<=3.1", "delta-spark-3.2-4.0": "delta-spark-3.2-4.0",
                "delta-spark-4.1+": "delta-spark-4.1+"}


@dataclass(frozen=True)
class LoserFacts:
    """What the user knows of the failed transaction, beyond its error text (explain-error flags).

    Each fact replaces an inference: `read_version` the assumed winner-1, `failed_at_ms` bounds when
    the winner landed, `operation`/`predicate` come first among the hypotheses of what the loser did.
    """

    read_version: int | None = None
    failed_at_ms: int | None = None
    operation: str | None = None
    predicate: str | None = None

    def said(self) -> list[str]:
        out = [f"readVersion {self.read_version}" if self.read_version is not None else "",
               f"failed at {fmt_time(self.failed_at_ms, utc_default())}" if self.failed_at_ms is not None else "",
               f"operation {self.operation}" if self.operation else "", f"predicate {self.predicate}" if self.predicate else ""]
        return [x for x in out if x]


def facts_from_sql(sql: str) -> tuple[str, str | None]:
    """(operation, condition) of a DELETE / UPDATE / MERGE / INSERT statement, read with sqlglot's
    Spark dialect (parsed, never run). A usage error when it is none of those."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except sqlglot.errors.ParseError as e:
        raise ForensicsError(ExitCode.USAGE, f"--sql: not a statement Spark SQL can parse ({str(e).splitlines()[0][:200]})") from e
    where = tree.args.get("where")
    if isinstance(tree, exp.Delete):
        return "DELETE", where.this.sql(dialect="spark") if where is not None else None
    if isinstance(tree, exp.Update):
        return "UPDATE", where.this.sql(dialect="spark") if where is not None else None
    if isinstance(tree, exp.Merge):
        on = tree.args.get("on")
        return "MERGE", on.sql(dialect="spark") if on is not None else None
    if isinstance(tree, exp.Insert):
        return "WRITE", None
    raise ForensicsError(ExitCode.USAGE, "--sql: give the failed DELETE, UPDATE, MERGE or INSERT statement")


@dataclass
class ErrorExplanation:
    """A failed transaction explained from its error: the committed version that beat it, by which rule,
    how sure, and what to change."""
    report: ErrorReport
    match: WinnerMatch | None
    winning_version: int | None
    replay: WhatIfResult | None
    hypothesis: str | None
    reproduced: bool
    advice: list[Advice]  # what to do, the example in the user's SQL, the evidence
    why: str
    loser_partitions: list[dict[str, Any]] = field(default_factory=list)
    window: tuple[int, int] | None = None
    read_why: str | None = None  # which version the loser is taken to have read, and how that is known
    # The incident story (forensics.analysis.story), set by the front object: the evidence stage
    # comes before the analysis stage that tells it.
    story_lines: list[Any] = field(default_factory=list)
    # Every answer the text and the table allow, most likely first (the first is `winning_version`'s);
    # from the aborted attempt the text is tied to when its orphan files are in the table.
    candidates: list[Candidate] = field(default_factory=list)
    # The winning version's commit as the log records it (set by the front object; not in the JSON).
    winning_commit: CommitRecord | None = field(default=None, repr=False, compare=False)

    @property
    def ambiguous(self) -> bool:
        """More than one commit may have beaten the transaction (`candidates` ranks them)."""
        return len({c.winning_version for c in self.candidates}) > 1 or bool(self.match and self.match.ambiguous)

    # Flat answers for code (the same values as the JSON's keys of the same name).
    @property
    def verdict(self) -> str:
        """`aborted`: the transaction that printed the error never committed (as `replay`'s aborted rows)."""
        return "aborted"

    @property
    def recognized(self) -> bool:
        """Whether the text or exception was recognised as a Delta concurrency error."""
        return self.report.recognized

    @property
    def exception(self) -> str | None:
        """The Delta exception's simple name, e.g. `ConcurrentAppendException`."""
        return self.report.exception

    @property
    def error_class(self) -> str | None:
        """Delta's error class (`DELTA_CONCURRENT_APPEND`, ...) as the error gave it."""
        return self.report.error_class

    @property
    def family(self) -> str:
        """The writer family the text comes from (delta-spark, delta-rs, kernel, databricks, unknown)."""
        return self.report.family

    @property
    def rule(self) -> str | None:
        """The rule that fired: append, delete-read, delete-delete, metadata, protocol, txn, write, ..."""
        return self.report.rule

    @property
    def partition(self) -> dict[str, Any] | None:
        """The partition the error names, parsed into column values."""
        return self.report.partition

    @property
    def file(self) -> str | None:
        """The data file the error names, if any."""
        return self.report.file

    @property
    def certainty(self) -> str | None:
        """`inferred` when the loser was rebuilt and replayed (it never reached the log), else None."""
        return "inferred" if self.replay else None

    @property
    def winner_committed_at(self) -> datetime | None:
        """When the winning commit landed (aware UTC), from the log."""
        return as_datetime(self.winning_commit.timestamp) if self.winning_commit is not None else None

    def story(self) -> list[Any]:
        """The incident in a few plain lines (StoryLine, a str): who won, what each side did, the rule,
        how sure, what to change. `"\\n".join(x.story())` prints it."""
        return list(self.story_lines)

    @property
    def story_text(self) -> str:
        """The story as one text, a line each."""
        return "\n".join(str(line) for line in self.story_lines)

    def to_dict(self) -> dict[str, Any]:
        """The `explain-error --json` document (camelCase keys, without `schema_version`)."""
        r = self.report
        return {
            "recognized": r.recognized,
            "exception": r.exception,
            "errorClass": r.error_class,
            "family": r.family,
            "rule": r.rule,
            "partition": r.partition,
            "file": r.file,
            "winner": r.winner.to_dict() if r.winner else None,
            "winningVersion": self.winning_version,
            "winnerMatch": self.match.to_dict() if self.match else None,
            "replay": self.replay.to_dict() if self.replay else None,
            "hypothesis": self.hypothesis,
            "reproduced": self.reproduced,
            "certainty": "inferred" if self.replay else None,
            "advice": [a.to_dict() for a in self.advice],  # the same records as explain's advice
            "why": self.why,
            "story": [line.text for line in self.story_lines],
            "candidates": [c.to_dict() for c in self.candidates],
            "ambiguous": self.ambiguous,
        }


# --------------------------------------------------------------------------------------
# Which commits could have fired the rule (when the text names no winner)
# --------------------------------------------------------------------------------------


def rule_candidates(log: DeltaLog, report: ErrorReport, window: tuple[int, int] | None,
                    after: int | None = None) -> list[int]:
    """Commits that carry what the rule needs from a winner (conflict-rules §5): adds in the partition,
    a remove of the file, a metaData/protocol/txn action; only after the loser's readVersion when known."""
    c = log.commits
    if after is not None:
        c = c.filter(pl.col("version") > after)
    if window is not None:
        c = c.filter(pl.col("timestamp").is_null() | ((pl.col("timestamp") >= window[0]) & (pl.col("timestamp") <= window[1])))
    vs = set(c["version"].to_list())
    a = log.actions.filter(pl.col("version").is_in(list(vs)))
    rule = report.rule
    if rule == "append":
        # Every add counts, dataChange=false included: delta-spark's WinningCommitSummary does not look
        # at the flag (conflict-rules §3), and delta-rs reports a compaction as "added new data".
        adds = a.filter(pl.col("kind") == "add")
        out = []
        for v, pv in adds.select(["version", "partition_values"]).unique().iter_rows():
            if report.partition:
                try:
                    got = json.loads(pv) if pv else {}
                except ValueError:
                    got = {}
                if any(str(got.get(k)) != str(val) for k, val in report.partition.items()):
                    continue
            out.append(v)
        return sorted(set(out))
    if rule in ("delete-read", "delete-delete"):
        rem = a.filter(pl.col("kind") == "remove")
        if report.file:
            f = canonical(report.file, log.location)
            return sorted({v for v, p in rem.select(["version", "path"]).iter_rows() if canonical(p, log.location) == f})
        return sorted(set(rem["version"].to_list()))
    col = {"metadata": "has_metadata", "protocol": "has_protocol", "txn": "has_txn"}.get(rule or "")
    if col:
        return sorted(c.filter(pl.col(col))["version"].to_list())
    return []


# --------------------------------------------------------------------------------------
# Hypothetical losers per rule
# --------------------------------------------------------------------------------------


def loser_hypotheses(log: DeltaLog, report: ErrorReport, winner: int, parts: list[dict[str, Any]],
                     facts: LoserFacts | None = None) -> list[Hypothesis]:
    """What the loser may have done, most likely first; what the user stated comes before any guess."""
    guesses = _guesses(log, report, winner, parts)
    if facts is not None and facts.operation:
        kw = "ON" if facts.operation.upper() == "MERGE" else "WHERE"
        said = " ".join(x for x in (facts.operation.upper(), facts.predicate and f"{kw} {facts.predicate}") if x)
        return [Hypothesis(f"as stated: {said}", facts.operation.upper(), predicate=facts.predicate), *guesses]
    return guesses


def _guesses(log: DeltaLog, report: ErrorReport, winner: int, parts: list[dict[str, Any]]) -> list[Hypothesis]:
    rule = report.rule
    hint_parts = [report.partition] if report.partition else []
    pred = partition_predicate(hint_parts) if hint_parts else None
    if rule == "append":
        own = partition_predicate(parts) if parts else None
        read_hint = Hypothesis(f"its read predicate matched {pred}: it read that partition", "UPDATE", predicate=pred) if pred else None
        whole = Hypothesis("it read the whole table (no literal partition predicate)", "MERGE")
        insert = Hypothesis("it was a non-blind INSERT that read the table", "WRITE")
        compact = Hypothesis(f"it was a compaction (OPTIMIZE) of {pred or own or 'the table'}", "OPTIMIZE", predicate=pred or own)
        if read_hint and parts and report.partition not in parts:
            # it wrote elsewhere, yet files in the hint's partition conflicted: it read more than it wrote
            return [whole, read_hint, insert, compact]
        if read_hint:
            return [read_hint, whole, insert, compact]
        if own:
            return [Hypothesis(f"it read its own partitions ({own})", "UPDATE", predicate=own), whole, insert, compact]
        return [whole, insert, compact]
    if rule in ("delete-read", "delete-delete"):
        fpred = None
        if report.file:
            rows = log.actions.filter(pl.col("kind").is_in(["add", "remove"])).select(["path", "partition_values"]).to_dicts()
            f = canonical(report.file, log.location)
            for r in rows:
                if canonical(r["path"], log.location) == f and r["partition_values"]:
                    try:
                        fpred = partition_predicate([json.loads(r["partition_values"])])
                    except ValueError:
                        pass
                    break
        fpred = fpred or pred
        verb = "read" if rule == "delete-read" else "removed"
        out = []
        if fpred:
            out.append(Hypothesis(f"it {verb} {report.file or 'the file'} while compacting {fpred} (OPTIMIZE)", "OPTIMIZE", predicate=fpred))
            out.append(Hypothesis(f"it {verb} {report.file or 'the file'} in {fpred} (DELETE)", "DELETE", predicate=fpred))
            out.append(Hypothesis(f"it {verb} {report.file or 'the file'} in {fpred} (UPDATE)", "UPDATE", predicate=fpred))
        out.append(Hypothesis(f"it {verb} {report.file or 'files'} reading the whole table", "MERGE"))
        return out
    if rule in ("metadata", "protocol"):
        return [Hypothesis("it wrote to the table while the winner changed its " + rule, "INSERT")]
    if rule == "txn":
        rec = log.record(winner)
        return [Hypothesis(f"it was a streaming batch of query {a} (same appId as the winner)", "STREAMING UPDATE", app_id=a)
                for a in sorted(rec.txn_app_ids)] or [Hypothesis("it was a streaming batch", "STREAMING UPDATE")]
    return [Hypothesis("it read the whole table", "MERGE")]


def read_version_for(log: DeltaLog, winner: int, start_ms: int | None) -> tuple[int, str]:
    if start_ms is not None:
        before = [v for v, t in log.commits.select(["version", "timestamp"]).iter_rows() if t is not None and t <= start_ms and v < winner]
        if before:
            return max(before), f"readVersion {max(before)}: the last commit before the query started ({fmt_time(start_ms, utc_default())})"
    return winner - 1, f"readVersion {winner - 1}: assumed just before the winner (the loser's own readVersion is not in the text)"


def replay_loser(log: DeltaLog, state: StateIndex, report: ErrorReport, winner: int, *, parts: list[dict[str, Any]],
                 rules: str | None, start_ms: int | None,
                 facts: LoserFacts | None = None) -> tuple[WhatIfResult | None, Hypothesis | None, bool, str]:
    if facts is not None and facts.read_version is not None:
        R, rwhy = facts.read_version, f"readVersion {facts.read_version}: as stated"
    else:
        R, rwhy = read_version_for(log, winner, start_ms)
    if R < 0:
        return None, None, False, "the winner is version 0: nothing was read before it"
    rules = rules or FAMILY_RULES.get(report.family)
    first: tuple[WhatIfResult, Hypothesis] | None = None
    for h in loser_hypotheses(log, report, winner, parts, facts):
        write_parts = parts or ([report.partition] if report.partition else [])
        req = WhatIfRequest(read_version=R, operation=h.operation, predicate=h.predicate,
                            partitions=[{k: ("" if v is None else v) for k, v in p.items()} for p in write_parts if p],
                            rules=rules, until=winner, app_id=h.app_id)
        try:
            res = whatif(log, req, state)
        except ForensicsError:
            continue
        first = first or (res, h)
        r = res.result
        if r.verdict == "abort" and r.exception == report.exception and r.winning_version == winner:
            return res, h, True, rwhy
        if r.verdict == "abort" and r.winning_version == winner and report.exception and same_rule(r.exception, report.exception):
            return res, h, True, rwhy
    if first:
        return first[0], first[1], False, rwhy
    return None, None, False, rwhy


def not_this_table(log: DeltaLog, report: ErrorReport, facts: LoserFacts | None) -> str | None:
    """Why the text cannot be about this table's retained history, or None: the winner it names (or
    the snapshot the winner or the loser read) is newer than the table's latest version."""
    latest = log.latest_version
    if latest is None:
        return None
    hint = report.winner
    said = [("the winner is version", hint.version if hint else None), ("the winner read version", hint.read_version if hint else None),
            ("the failed transaction read version", facts.read_version if facts else None)]
    for what, v in said:
        if v is not None and v > latest:
            return (f"{what} {v}, but this table's log ends at version {latest}: the error comes from another table "
                    "(or this one was re-created since); nothing here can be the winner")
    return None


def _stated_replay(log: DeltaLog, state: StateIndex, report: ErrorReport, facts: LoserFacts, rules: str | None,
                   window: tuple[int, int] | None) -> WinnerMatch | None:
    """The winner of the transaction the user described, when its replay reproduces the text's rule."""
    until = None
    if window is not None:
        landed = [v for v, ts in log.commits.select(["version", "timestamp"]).iter_rows() if ts is not None and ts <= window[1]]
        until = max(landed) if landed else None
    req = WhatIfRequest(read_version=facts.read_version, operation=facts.operation.upper(), predicate=facts.predicate,
                        rules=rules or FAMILY_RULES.get(report.family), until=until)
    try:
        r = whatif(log, req, state).result
    except ForensicsError:
        return None
    if r.verdict != "abort" or r.winning_version is None or not (r.exception == report.exception or same_rule(r.exception, report.exception)):
        return None
    return WinnerMatch(r.winning_version, [r.winning_version], "replay", False,
                       f"inferred: the transaction you described ({facts.operation.upper()} at readVersion {facts.read_version}) "
                       f"replays to {r.exception} first against v{r.winning_version}: the engine checks the winners in order and "
                       "stops at the first conflict")


def _window(log: DeltaLog, window: tuple[int, int] | None, facts: LoserFacts | None) -> tuple[int, int] | None:
    """When the winner can have landed: an event log's execution window, narrowed by what the user said."""
    if facts is None or (facts.failed_at_ms is None and facts.read_version is None):
        return window
    lo, hi = window if window is not None else (0, 2**62)
    if facts.failed_at_ms is not None:
        hi = min(hi, facts.failed_at_ms)
    if facts.read_version is not None and log.has_version(facts.read_version):
        ts = log.record(facts.read_version).timestamp
        lo = max(lo, ts) if ts is not None else lo
    return lo, hi


def explain_error(log: DeltaLog, report: ErrorReport, *, rules: str | None = None, window: tuple[int, int] | None = None,
                  state: StateIndex | None = None, evidence=None, facts: LoserFacts | None = None) -> ErrorExplanation:
    """Find the winner, rebuild the loser, replay it, and advise (conflict-rules §5, §7)."""
    from forensics.replay.advice import advice_for_error

    state = state or StateIndex(log)
    impossible = not_this_table(log, report, facts)
    if impossible:
        match = WinnerMatch(None, [], "none", False, impossible)
        return ErrorExplanation(report, match, None, None, None, False, [], impossible, [], window)
    window = _window(log, window, facts)
    after = facts.read_version if facts is not None else None
    match = find_winner(log, report.winner, loser_window=window)
    if match.version is None and not match.ambiguous and facts is not None and facts.read_version is not None and facts.operation:
        # What the user stated is the transaction itself: replay it from its read version, as the
        # engine checks the winners, R+1 upwards, stopping at the first conflict.
        match = _stated_replay(log, state, report, facts, rules, window) or match
    winner = match.version
    parts: list[dict[str, Any]] = []
    ev_choice = None
    ev_hits_ranked: list[Candidate] = []
    whys = [f"winner: {match.why}"]
    if winner is None and not match.ambiguous:
        # No key in the text: commits that carry what the rule needs, narrowed by aborted attempts' traces.
        cands = rule_candidates(log, report, window, after)
        if evidence is not None:
            # Each aborted attempt's attribution, kept to the answers that say what the text says: the
            # text and the attempt's files together name fewer winners than either alone.
            ev_hits = [(a, c) for a in evidence.attempts for c in a.candidates
                       if c.exception == report.exception and c.winning_version in cands
                       and (not report.partition or not c.partition or all(str(c.partition.get(k)) == str(v) for k, v in report.partition.items() if k in c.partition))]
            if ev_hits:
                ranked: list[int] = []
                # Within an attempt its own ranking; between attempts the text cannot tell them apart,
                # so the earlier attempt comes first (evidence lists attempts in the order written).
                order = {id(a): i for i, a in enumerate(evidence.attempts)}
                ev_hits.sort(key=lambda ac: (ac[1].rank, order[id(ac[0])]))
                for _, c in ev_hits:
                    if c.winning_version not in ranked:
                        ranked.append(c.winning_version)
                a0, c0 = ev_hits[0]
                winner, parts = ranked[0], a0.partitions
                ev_choice = (a0, c0)
                seen: set[int] = set()
                for _, c in ev_hits:
                    if c.winning_version not in seen:
                        seen.add(c.winning_version)
                        ev_hits_ranked.append(replace(c, rank=len(seen)))
                match = WinnerMatch(winner, ranked, "evidence", len(ranked) > 1,
                                    f"inferred from {len({id(a) for a, _ in ev_hits})} aborted attempt(s) whose orphan files replay to {report.exception}"
                                    + ("" if evidence.clock.trusted else
                                       " (their file times are not trusted: the attempts were placed by what their files hold, not by when they were written)")
                                    + (f"; one of v{', v'.join(map(str, ranked))}, most likely first ({c0.hypothesis}); "
                                       "which one beat it depends on the version the failed job read (give --read-version to decide)"
                                       if len(ranked) > 1 else ""))
        if winner is None and cands:
            if len(cands) == 1:
                winner = cands[0]
                match = WinnerMatch(winner, cands, "rule", False, f"inferred: the only commit that could fire the {report.rule} rule")
            else:
                match = WinnerMatch(None, cands, "rule", True, f"{len(cands)} commits could fire the {report.rule} rule: v{', v'.join(map(str, cands))}")
        whys = [f"winner: {match.why}"]
    elif winner is None and match.ambiguous:
        whys.append("ambiguous: not replayed")
    replay = hyp = None
    rwhy: str | None = None
    reproduced = False
    if ev_choice is not None and winner == ev_choice[1].winning_version:
        # The attempt the text is tied to: its own attribution's replay (read version, operation), not a new guess.
        a0, c0 = ev_choice
        req = WhatIfRequest(read_version=c0.read_versions[1], operation=c0.operation, predicate=c0.predicate,
                            partitions=[{k: ("" if v is None else v) for k, v in p.items()} for p in a0.partitions if p],
                            rules=rules or FAMILY_RULES.get(report.family), until=winner, app_id=c0.app_id)
        try:
            replay = whatif(log, req, state)
        except ForensicsError:
            replay = None
        if replay is not None:
            hyp = Hypothesis(c0.hypothesis, c0.operation, predicate=c0.predicate, app_id=c0.app_id)
            reproduced = replay.result.verdict == "abort" and replay.result.winning_version == winner
            rwhy = (f"readVersion {c0.read_versions[1]}: the newest its orphan files allow"
                    + (f" (any of v{c0.read_versions[0]}..v{c0.read_versions[1]} gives the same answer)" if c0.read_versions[0] != c0.read_versions[1] else ""))
            whys.append(f"the aborted attempt that left {a0.files[0].path} is this transaction: {c0.why}")
    if winner is not None and report.rule != "max-retries" and not reproduced:
        start = window[0] if window else None
        replay, hyp, reproduced, rwhy = None, None, False, ""
        if not parts and evidence is not None:
            # The loser's orphan files tell what it wrote: try each attempt that could have lost to this winner.
            wts = log.record(winner).timestamp
            # Attempts whose own attribution names this winner come first; an attempt whose partitions
            # the stated condition excludes is another job's (it must not lend its partitions).
            named = [a for a in evidence.attempts if any(c.winning_version == winner for c in a.candidates)]
            for a in (named + [a for a in evidence.attempts if a not in named])[:10]:
                if evidence.clock.trusted and wts is not None and wts > a.last_seen + 60_000:
                    continue
                if facts is not None and not _within_condition(a.partitions, facts.predicate):
                    continue
                res = replay_loser(log, state, report, winner, parts=a.partitions, rules=rules, start_ms=start, facts=facts)
                if res[2]:
                    replay, hyp, reproduced, rwhy = res
                    parts = a.partitions
                    whys.append(f"the aborted attempt that left {a.files[0].path} replays to this error: its partitions are the loser's (inferred)")
                    break
        if not reproduced:
            replay, hyp, reproduced, rwhy = replay_loser(log, state, report, winner, parts=parts, rules=rules, start_ms=start, facts=facts)
        if replay is not None and hyp is not None:
            r = replay.result
            if reproduced:
                whys.append(f"inferred: if {hyp.label} ({rwhy}), the {r.profile} rules abort it with {r.exception} against v{r.winning_version}: {r.why}")
            else:
                whys.append(f"the replay could not reproduce {report.exception} against v{winner} (closest: {hyp.label} gives "
                            f"{r.verdict}{' ' + str(r.exception) if r.exception else ''}); the loser did something the text does not reveal")
    if facts is not None and facts.said():
        whys.append("you said: " + ", ".join(facts.said()))
    conditions = [(facts.predicate, "your condition, as given")] if facts is not None and facts.predicate else []
    advice = advice_for_error(log, state, report, winner, replay, parts, conditions)
    exp = ErrorExplanation(report, match, winner, replay, hyp.label if hyp else None, reproduced,
                            advice, "; ".join(whys), parts, window, rwhy or None)
    exp.candidates = _candidates(report, match, ev_hits_ranked, replay)
    return exp


def _candidates(report: ErrorReport, match: WinnerMatch | None, from_attempts: list[Candidate],
                replay: WhatIfResult | None) -> list[Candidate]:
    """The explanation's answers, ranked: the tied attempt's attribution when there is one, else the
    winner the text names or the commits that can fire its rule (each as the loser reading just before it)."""
    if from_attempts:
        return from_attempts
    if match is None:
        return []
    vs = list(match.candidates) if match.ambiguous else ([match.version] if match.version is not None else [])
    out = []
    for rank, v in enumerate(vs, 1):
        r = replay.result if replay is not None and replay.result.winning_version == v else None
        out.append(Candidate((v - 1, v - 1), v, report.exception or "?", report.rule or "?",
                             r and replay.request.operation or "unknown", r and replay.request.operation or "unknown", rank,
                             r.why if r is not None else f"v{v} carries what the {report.rule} rule needs ({match.how})"))
    return out



def _within_condition(parts: list[dict[str, Any]], condition: str | None) -> bool:
    """Whether every partition an attempt wrote is one the stated condition allows."""
    from forensics.predicates.advice import pinned_values

    for p in parts:
        for col, val in (p or {}).items():
            pinned = pinned_values(condition, col)
            if pinned is not None and str(val) not in pinned:
                return False
    return True


def text_only_explanation(report: ErrorReport) -> dict[str, Any]:
    """What an error text says on its own (no table given): the `explain-error --json` object, nothing replayed."""
    from forensics.replay.advice import general_fixes

    return ErrorExplanation(report, None, None, None, None, False, general_fixes(report.rule),
                            "no table given: what the text says, nothing replayed").to_dict()
