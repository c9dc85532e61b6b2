"""One attribution per aborted attempt: every (read versions, what it did, winner, exception, rule)
combination the evidence leaves possible, each replayed through the writer's rules, ranked.

The engine checks the winners from the loser's readVersion up and stops at the first conflict
(conflict-rules §5). An attempt that left only files has no readVersion and no operation, so each
read version and each operation its files allow names its own first conflict. Bounds, each stated
in `basis`: the orphan rows' source files (forensics.evidence.content: what it did and the versions
those files were live together), their footers and schema (forensics.evidence.footers), trusted
file times, a stray commit's readVersion, what the user stated (LoserFacts), an error text's
exception, partition and winner, an app id only from the version that first committed it (or
that first commit itself, beating its twin). What
survives is grouped by (winner, exception, rule) and ranked (RANKING says how); `ambiguous` when
more than one survives. Computed once per table version (forensics.Table caches the evidence).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from forensics.evidence.attempts import Attempt, Clock
from forensics.evidence.footers import ReadBounds
from forensics.evidence.content import weakened
from forensics.evidence.hypotheses import (AFTER_MS, Hypothesis, _try, app_hypothesis, app_ids_of, first_app_versions, hypotheses,
                                           partition_predicate, retry_hypothesis, window)
from forensics.log.delta_log import DeltaLog
from forensics.sets.commit_sets import StateIndex, writer_family

if TYPE_CHECKING:
    from forensics.errortext import ErrorReport
    from forensics.evidence.content import ContentReading

MAX_READ_VERSIONS = 24  # read versions replayed per hypothesis when nothing narrows them
# How candidates are ordered, calibrated on bench/differential.py (FIDELITY.md "Blame: calibration"):
# what the files show before a guess, then the newest read version that yields the candidate.
RANKING = ("what the files show first; winners that landed before the attempt's last file before later ones; "
           "an app's first commit beating its twin after the others; the answer more read versions give; the hypotheses' order; the later winner")


@dataclass(frozen=True)
class Candidate:
    """One answer the evidence allows: had the attempt read a version in `read_versions` and done
    `hypothesis`, the rules abort it with `exception` against `winning_version` by `rule`."""

    read_versions: tuple[int, int]
    winning_version: int
    exception: str
    rule: str
    hypothesis: str
    operation: str
    rank: int
    why: str
    partition: dict | None = None
    file: str | None = None
    from_content: bool = False  # the operation is the one the orphan rows show
    predicate: str | None = None  # the read predicate the hypothesis replayed
    app_id: str | None = None
    support: int = 1  # how many read versions give this answer
    late: bool = False  # the winner landed after the attempt's last file
    hypothesis_rank: int = 0  # the hypothesis's place in the ladder (0: the most likely)
    stale: bool = False  # only read versions older than the table's slowest transaction suggests give it
    weight: float | None = None  # the time prior's weight of its read versions (None: file times not trusted)
    spans: tuple[tuple[int, int, int], ...] | None = None  # (read version, shortest, longest ms from a start then to the first file)
    lag_ms: int | None = None  # a late winner: how long after the attempt's last file it landed

    def to_dict(self) -> dict[str, Any]:
        return {"readVersions": list(self.read_versions), "winningVersion": self.winning_version, "exception": self.exception,
                "rule": self.rule, "hypothesis": self.hypothesis, "operation": self.operation, "rank": self.rank,
                "why": self.why, "partition": self.partition, "file": self.file}


@dataclass
class Attribution:
    """The answers an attempt's evidence leaves, most likely first, and what narrowed them."""

    candidates: list[Candidate] = field(default_factory=list)
    basis: list[str] = field(default_factory=list)  # each bound used, in words
    read_versions: tuple[int, int] | None = None  # the read versions the bounds allow
    tried: list[str] = field(default_factory=list)  # hypotheses that commit in every allowed read version

    @property
    def ambiguous(self) -> bool:
        return len(self.candidates) > 1

    @property
    def winners(self) -> list[int]:
        return sorted({c.winning_version for c in self.candidates})

    def first(self) -> Candidate | None:
        return self.candidates[0] if self.candidates else None

    def one_of(self) -> str:
        """"v4 (ConcurrentAppendException)" or "one of v8, v5 (...)": the ranking in a few words."""
        if not self.candidates:
            return "no candidate"
        parts = [f"v{c.winning_version} ({c.exception})" for c in self.candidates]
        return parts[0] if len(parts) == 1 else "one of " + ", ".join(parts)


def _per_log(log: DeltaLog, name: str, compute: Any) -> Any:
    """`compute(log)` once per opened log (kept on it): each attempt of a table asks the same of its commits."""
    memo = vars(log).setdefault("_attribution_memo", {})
    if name not in memo:
        memo[name] = compute(log)
    return memo[name]


def _commit_ms(log: DeltaLog) -> dict[int, int | None]:
    """Each commit's timestamp (ms), once per opened log."""
    return _per_log(log, "commit_ms", lambda lg: dict(lg.commits.select(["version", "timestamp"]).iter_rows()))


def _app_since(log: DeltaLog) -> dict[str, tuple[int, bool]]:
    """appId -> (the first version that committed a txn of it, whether its writes are streaming)."""
    return _per_log(log, "app_since", first_app_versions)


def _app_fits(app_id: str, R: int, since: dict[str, tuple[int, bool]], winner: int, exception: str) -> bool:
    """A write of `app_id` at R: the app had committed by R, or this is the app's first commit racing
    its twin (two instances of a new query on one checkpoint): then only the commit that first wrote
    the app beats it, by ConcurrentTransaction (OptimisticTransaction's txn check, conflict-rules §2)."""
    first = since.get(app_id)
    if first is None:
        return False
    if first[0] <= R:
        return True
    return exception == "ConcurrentTransactionException" and winner == first[0]


_VERBS = {"OPTIMIZE": "compacted", "DELETE": "deleted", "UPDATE": "updated", "MERGE": "merged into",
          "INSERT": "blind-appended into", "OVERWRITE": "overwrote"}


def _slowest_transaction_ms(log: DeltaLog) -> int | None:
    """The longest read-to-commit time among commits that record their readVersion (None: fewer than
    three do): how stale a transaction of this table's writers gets."""
    return _per_log(log, "slowest_transaction_ms", _slowest_span_ms)


def _slowest_span_ms(log: DeltaLog, at_least: int = 3) -> int | None:
    ts = dict(log.commits.select(["version", "timestamp"]).iter_rows())
    spans = [ts[v] - ts[r] for v, r in log.commits.select(["version", "read_version"]).iter_rows()
             if r is not None and r < v and ts.get(v) is not None and ts.get(r) is not None]
    return max(spans) if len(spans) >= at_least else None


def _content_hypotheses(log: DeltaLog, reading: "ContentReading", parts: list[dict]) -> list[Hypothesis]:
    """What the rows show, as replayable hypotheses. New rows only may be a streaming batch of a
    query that already writes this table: that comes first (its app id is specific evidence)."""
    part = partition_predicate(parts)
    out = []
    if reading.kind == "append":
        since = _app_since(log)
        out += [app_hypothesis(a, since[a][1], "its files show new rows only") for a in app_ids_of(log) if a in since]
    for op in reading.operations:
        if op == "MERGE":
            # a MERGE reads what its ON condition matches, more than the rows it touched: the whole
            # table when the condition has no partition literal (delta-rs, conflict-rules §9), else its partitions
            out.append(Hypothesis(f"merged into the table (its files show {reading.kind}; the ON condition read the whole table)", "MERGE"))
            if part:
                out.append(Hypothesis(f"merged into {part} (its files show {reading.kind})", "MERGE", predicate=part))
            continue
        if op in ("OPTIMIZE", "INSERT", "OVERWRITE"):
            pred = part  # the rows a rewrite touched are no condition of a compaction or a write
        else:
            pred = " AND ".join(f"({p})" if " OR " in p else p for p in (part, reading.predicate) if p) or None
        where = (part or "the table") if op in ("OPTIMIZE", "INSERT", "OVERWRITE") else (f"the rows where {pred}" if pred else "the table")
        label = f"{_VERBS.get(op, op.lower())} {where} (its files show {reading.kind})"
        out.append(Hypothesis(label, "INSERT") if op == "INSERT" else Hypothesis(label, op, predicate=pred))
        if op in ("DELETE", "UPDATE") and reading.predicate and pred != part:
            # its condition matched at least the rows it touched and may have matched more (`v > 45`
            # also matches rows a winner adds, in any partition): its partitions, then the whole table
            if part:
                out.append(Hypothesis(f"{_VERBS[op]} rows of {part} by a broader condition (its files show {reading.kind})",
                                      op, predicate=part))
            out.append(Hypothesis(f"{_VERBS[op]} rows by a condition on the whole table (its files show {reading.kind})",
                                  op, predicate="TRUE"))
    return out


def candidate_hypotheses(log: DeltaLog, attempt: "Attempt", writer: str, reading: "ContentReading | None",
                         facts: Any, retry: int | None, rewrote_a_file: bool) -> list[tuple[Hypothesis, bool]]:
    """(hypothesis, from its files' content), most likely first: what the user stated, the re-run's
    operation, what the files show, then the generic ladder (least reading first)."""
    out: list[tuple[Hypothesis, bool]] = []
    if facts is not None and facts.operation:
        pred = facts.predicate or partition_predicate(attempt.partitions)
        out.append((Hypothesis(f"as stated: {facts.operation.upper()}{' ' + pred if pred else ''}", facts.operation.upper(),
                               predicate=pred), True))
        return out
    if retry is not None:
        h = retry_hypothesis(log, retry)
        if h is not None:
            out.append((h, True))  # what its re-run did is evidence, not a guess
    if reading is not None and reading.operations:
        out += [(h, True) for h in _content_hypotheses(log, reading, attempt.partitions)]
        if reading.kind != "append":
            return out  # rewritten rows: it read them, so no blind append, no streaming batch
    generic = hypotheses(log, attempt, writer, rewrote_a_file=rewrote_a_file)
    seen = {(h.operation, h.predicate, h.app_id) for h, _ in out}
    out += [(h, False) for h in generic if (h.operation, h.predicate, h.app_id) not in seen]
    return out


def attribute(log: DeltaLog, state: StateIndex, attempt: "Attempt", *, read_range: tuple[int, int], basis: list[str],
              writer: str, rules: str | None, until: int, reading: "ContentReading | None" = None,
              facts: Any = None, report: "ErrorReport | None" = None, retry: int | None = None,
              rewrote_a_file: bool = False, allowed: frozenset[int] | None = None,
              late_after: int | None = None, fresh_from: int | None = None,
              spans: dict[int, tuple[int, int]] | None = None) -> Attribution:
    """Replay every hypothesis at every allowed read version against the winners up to `until`;
    group what aborts by (winner, exception, rule), rank. Read versions below `fresh_from` (older
    than the table's slowest transaction suggests) are tried too, and what only they give ranks last.
    `spans` (file times trusted): per read version, how long before its first file a job that read
    it started; they weigh the read versions (`time_weight`)."""
    lo, hi = read_range
    rs = [r for r in range(hi, lo - 1, -1) if allowed is None or r in allowed][:MAX_READ_VERSIONS]
    since = _app_since(log)
    hyps = candidate_hypotheses(log, attempt, writer, reading, facts, retry, rewrote_a_file)
    found: dict[tuple[int, str, str], dict[str, Any]] = {}
    tried: list[str] = []
    def fresh(reads: set[int]) -> set[int]:
        return {R for R in reads if fresh_from is None or R >= fresh_from}

    for hi_idx, (h, from_content) in enumerate(hyps):
        if not from_content and any(d["content"] and fresh(d["reads"]) for d in found.values()):
            break  # the evidence's own hypotheses answered: the generic ladder only lengthens the list
        aborted = False
        for R in rs:
            if h.app_id is not None and (h.app_id not in since or since[h.app_id][0] > max(R, until)):
                continue  # an app id no commit of this table carries, or whose first commit came after the window
            res = _try(log, state, h, attempt.partitions, R, until, rules)
            if res is None or res.result.verdict != "abort":
                continue
            r = res.result
            if r.winning_version is None or r.exception is None or r.winning_version <= R:
                continue
            if h.app_id is not None and not _app_fits(h.app_id, R, since, r.winning_version, r.exception):
                continue  # a write of an app that had not written this table at R, beaten by another commit
            if report is not None and not _fits_text(report, r, log):
                continue
            aborted = True
            # A write of an app before the app's first commit: only its twin, a rarer event than any
            # other conflict the evidence allows, so it ranks after them (live delta-spark 4.4 races).
            twin = h.app_id is not None and since[h.app_id][0] > R
            key = (r.winning_version, r.exception, r.rule)
            got = found.get(key)
            if got is None or (not got["content"] and from_content):
                # the best-supported hypothesis that gives this answer speaks for it
                reads = got["reads"] if got is not None else set()
                was_twin = got["twin"] if got is not None else True
                found[key] = got = {"reads": reads, "h": h, "h_idx": hi_idx, "content": from_content, "r": r, "R": R,
                                    "twin": was_twin}
            got["twin"] = got["twin"] and twin
            got["reads"].add(R)
        if not aborted:
            tried.append(h.label)
    # A winner that landed after the attempt's last file (`late_after`) still beat it (a job commits
    # after writing), but less often than one that landed before: it ranks after those.
    for d in found.values():
        d["late"] = late_after is not None and d["r"].winning_version > late_after
        landed = _commit_ms(log).get(d["r"].winning_version)
        d["lag_ms"] = max(0, landed - attempt.last_seen) if d["late"] and landed is not None and attempt.last_seen is not None else None
        d["stale"] = not fresh(d["reads"])
        d["support"] = len(fresh(d["reads"]) or d["reads"])
        counted = sorted(fresh(d["reads"]) or d["reads"])
        d["spans"] = tuple((R, *spans.get(R, (0, 0))) for R in counted) if spans is not None else None
        d["weight"] = time_weight(d["spans"]) if d["spans"] is not None else None
    ordered = sorted(found.values(), key=rank_key)
    cands = []
    for rank, d in enumerate(ordered, 1):
        r, h = d["r"], d["h"]
        reads = (min(d["reads"]), max(d["reads"]))
        at = f"readVersion {reads[0]}" if reads[0] == reads[1] else f"a readVersion from {reads[0]} to {reads[1]}"
        cands.append(Candidate(reads, r.winning_version, r.exception, r.rule, h.label, h.operation, rank,
                               f"if it {h.label} at {at}, the {r.profile} rules abort it with {r.exception} against "
                               f"v{r.winning_version} ({r.why})", r.partition, r.file, d["content"], h.predicate, h.app_id,
                               d["support"], d["late"], d["h_idx"], d["stale"], d["weight"], d["spans"], d["lag_ms"]))
    return Attribution(cands, list(basis), (lo, hi), tried)


def rank_key(d: dict[str, Any]) -> tuple:
    """RANKING: answers that need a read older than the table's slowest transaction suggests last;
    then what the files show first, winners that landed before the last file before those after it,
    an app's first commit beating its twin after the others, the answer its read versions make
    likelier (`time_weight` where file times are trusted, else how many read versions give it), the
    ladder's order of hypotheses, then the later winner. Chosen among the orderings of
    bench/calibrate_blame.py on differential runs (FIDELITY.md "Blame"); the twin and stale terms
    from live delta-spark races, which calibrate_blame's recorded features do not carry."""
    weight = d.get("weight")
    return (d.get("stale", False), not d["content"], d["late"], d.get("twin", False),
            -(weight if weight is not None else d.get("support", len(d["reads"]))), d["h_idx"], -d["r"].winning_version)


JOB_SCALE_MS = 1000  # below about a second, every duration of a job is taken as equally likely


def time_weight(spans: tuple[tuple[int, int, int], ...]) -> float:
    """How likely the job read one of these versions, from when each was the newest: a job that read
    R started while R was the newest version, so it ran between `shortest` and `longest` ms before its
    first file. How long jobs run is unknown across orders of magnitude (a second to hours), so each
    order is taken as equally likely (a log-uniform prior on the duration, flat below a second): R's
    weight is log((longest + 1 s) / (shortest + 1 s)). A version that was the newest for a long time
    weighs more, and one read hours before the files less than one read just before them."""
    return sum(math.log((hi + JOB_SCALE_MS) / (lo + JOB_SCALE_MS)) for _, lo, hi in spans)


def _fits_text(report: "ErrorReport", r: Any, log: DeltaLog) -> bool:
    """The replay says what the error text says: its exception, its partition, its winner."""
    if report.exception and not (r.exception == report.exception or same_rule(r.exception, report.exception)):
        return False
    if report.partition and r.partition and any(str(r.partition.get(k)) != str(v) for k, v in report.partition.items() if k in r.partition):
        return False
    hint = report.winner
    if hint is not None and hint.version is not None and hint.version != r.winning_version:
        return False
    return True


def replay_attempt(log: DeltaLog, state: StateIndex, attempt: Attempt, clock: Clock, *, retry: int | None = None,
                   rules: str | None = None, read_version: int | None = None, bounds: ReadBounds | None = None,
                   facts: Any = None, report: Any = None, reading: Any = None) -> None:
    """Attribute `attempt` (in place): its window, its candidates (forensics.evidence.attribution),
    and the first candidate's values in the single-valued fields."""
    until, r_lo, after, wwhy = window(log, attempt, clock, retry)
    attempt.retry_version = retry
    attempt.landed_after = after
    if until is None:
        attempt.why = f"not replayed: {wwhy}"
        return
    basis = [wwhy]
    if facts is not None and getattr(facts, "read_version", None) is not None:
        read_version = facts.read_version
    oldest = min(log.versions) if log.versions else 0
    lo, hi = r_lo, until
    allowed: frozenset[int] | None = None
    attempt.content = reading
    rows_bound = False
    if reading is not None and reading.read_versions is not None and read_version is None:
        c_lo, c_hi = reading.read_versions
        if max(oldest, c_lo) <= min(c_hi, until):
            lo, hi = max(oldest, c_lo), min(c_hi, until)
            rows_bound = True
            basis.append(reading.why)
        else:
            basis.append(f"{reading.why} (outside the window its file times allow: the rows' bound is not used)")
    elif reading is not None:
        basis.append(reading.why)
    if bounds is not None:
        if reading is not None and reading.read_versions is not None and not any(lo <= v <= hi for v in bounds.versions):
            lo, hi = r_lo, until  # the footers and the rows disagree: the footers' bound stands alone
            basis.append("the footers' bound and the rows' bound do not overlap: the rows' bound is not used")
        if not clock.trusted:
            lo = min(lo, min(bounds.versions) - 1)
        allowed = bounds.versions
        basis += list(bounds.why)
    fresh_from = None
    if clock.trusted and read_version is None:
        slow = _slowest_transaction_ms(log)
        if slow is not None:
            since = attempt.first_seen - 2 * slow - 1000
            early = [v for v, t in log.commits.select(["version", "timestamp"]).iter_rows() if t is not None and t < since]
            if early and max(early) > lo:
                fresh_from = max(early)
                basis.append(f"read versions before v{fresh_from} rank last: the slowest transaction this table committed took "
                             f"{slow / 1000:.1f} s from its read to its commit, and a job that wrote its files more than twice "
                             "that after its read would be slower than any it committed (possible: a failed job may be slow)")
    if read_version is not None:
        lo = hi = read_version
        allowed, fresh_from = None, None
        basis.append(f"it read v{read_version} (" + ("as stated" if facts is not None and facts.read_version is not None
                                                      else "its commit file records it") + ")")
    engines = [e for e in log.commits["engine_info"].to_list() if e]
    writer = "delta-rs" if (rules or "").startswith("delta-rs") else writer_family(engines[-1] if engines else None)
    rewrote = bounds is not None and any("holds rows of" in w for w in bounds.why)
    lo = max(lo, 0)

    spans = _start_spans(log, attempt, lo, hi) if clock.trusted and read_version is None else None
    if spans is not None and len(spans) > 1:
        basis.append("each read version weighs by how long it was the newest before its first file (a job that read it "
                     "started then; its duration taken as equally likely at every scale above a second)")

    def run(upto: int):
        return attribute(log, state, attempt, read_range=(lo, min(hi, upto)), basis=basis, writer=writer, rules=rules,
                         until=upto, reading=reading, facts=facts, report=report, retry=retry, rewrote_a_file=rewrote,
                         allowed=allowed, late_after=until if upto > until else None, fresh_from=fresh_from,
                         spans=spans)

    # A job commits after writing its files: commits that landed just after its last file can still
    # have beaten it (ranked after those that landed before).
    att = run(max(after) if after else until)
    if not att.candidates and rows_bound:
        # The attempt aborted, yet no read version the rows allow names a conflict: the rows were not
        # what it rewrote (new rows equal to old ones). Drop their bound and their operation.
        lo, hi, allowed = max(r_lo, 0), until, (bounds.versions if bounds is not None else None)
        reading = weakened(reading)
        basis.append("no read version the rows' bound allows names a conflict: the bound and the operation they show are not used")
        att = run(max(after) if after else until)
    extended = bool(after) and bool(att.candidates) and all(c.winning_version > until for c in att.candidates)
    if after:
        att.basis.append(f"commits that landed after its last file (v{min(after)}..v{max(after)}: the first one, and those "
                         f"within {AFTER_MS // 1000} s) may have beaten it too: a job commits after writing; they rank after the others")
    attempt.attribution = att
    attempt.concurrent_versions = [v for v in log.versions if lo < v <= (max(after) if extended else until)]
    first = att.first()
    if first is None:
        attempt.why = (f"inferred: no hypothesis aborts against v{lo + 1}..v{until} ({'; '.join(basis)}); "
                       "the attempt may have failed for a reason the log does not show (a crash, a killed job, a lost rename race)")
        attempt.tried = [{"hypothesis": t, "verdict": "commit"} for t in att.tried]
        return
    attempt.likely_exception, attempt.winning_version, attempt.rule = first.exception, first.winning_version, first.rule
    attempt.hypothesis, attempt.read_version, attempt.partition, attempt.file = (first.hypothesis, first.read_versions[1],
                                                                                first.partition, first.file)
    attempt.operation = first.operation
    attempt.tried = [{"hypothesis": t, "verdict": "commit"} for t in att.tried] + [
        {"hypothesis": c.hypothesis, "verdict": "abort", "read_version": c.read_versions[1]} for c in att.candidates]
    others = (f"; {len(att.candidates) - 1} other answer(s) fit the same evidence: {att.one_of()}"
              if att.ambiguous else "")
    less = f"; hypotheses reading less ({'; '.join(att.tried)}) commit in the same window" if att.tried else ""
    attempt.why = f"inferred: {first.why}{less}{others}. Window: {'; '.join(att.basis)}."


def _start_spans(log: DeltaLog, attempt: Attempt, lo: int, hi: int) -> dict[int, tuple[int, int]]:
    """Per read version R in lo..hi: (shortest, longest) ms from the job's start to its first file
    had it read R (it started while R was the newest version). Whole-second file times (object
    stores) may be up to 999 ms early."""
    ts = _commit_ms(log)
    start_by = attempt.first_seen + (999 if attempt.first_seen % 1000 == 0 and attempt.last_seen % 1000 == 0 else 0)
    out = {}
    for R in range(lo, hi + 1):
        if ts.get(R) is not None:
            nxt = ts.get(R + 1)
            out[R] = (max(0, start_by - (start_by if nxt is None else nxt)), max(0, start_by - ts[R]))
    return out


def same_rule(a: str | None, b: str | None) -> bool:
    """Two exception names for one rule: Kernel throws delete-delete as ConcurrentWriteException
    (conflict-rules §7.6)."""
    return {a, b} == {"ConcurrentWriteException", "ConcurrentDeleteDeleteException"}
