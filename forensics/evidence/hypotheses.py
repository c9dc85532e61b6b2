"""Replay an aborted attempt that left only data files: which exception most likely killed it?

We do not know what the attempt read, so we try hypotheses from the least reading to the most
(blind append into its partitions -> a streaming batch of a query that writes this table ->
an OPTIMIZE of its partitions -> read its own partitions -> read the whole table) with `whatif` against the commits that landed
in its window, and take the first that aborts. Within a hypothesis the read version goes from
the latest candidate back (the attempt read as recently as the evidence allows). delta-rs
records every snapshot file as read by a predicate-less write (conflict-rules §9), so there a partition
read is tried before the "blind" append. The result is inferred, never exact.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import partial
from typing import Any


from forensics.evidence.attempts import Attempt, Clock
from forensics.evidence.footers import ReadBounds
from forensics.errors import ForensicsError
from forensics.times import fmt_time, utc_default
from forensics.log.delta_log import DeltaLog
from forensics.sets.commit_sets import StateIndex, writer_family
from forensics.replay.whatif import WhatIfRequest, WhatIfResult, whatif

MAX_BACK = 20  # read versions tried per hypothesis (latest first)
AFTER_MS = 60_000  # commits this soon after the last file may still have beaten the attempt
_SIMPLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Hypothesis:
    label: str  # what the attempt is assumed to have read, in words
    operation: str
    predicate: str | None = None
    app_id: str | None = None


def _ident(col: str) -> str:
    return col if _SIMPLE.match(col) else "`" + col.replace("`", "``") + "`"


def partition_predicate(parts: list[dict[str, Any]]) -> str | None:
    """`date = '2024-08-02'`, `(a = 'x' AND b IS NULL) OR (...)`: literal SQL text, built here."""
    terms = []
    for p in parts:
        if not p:
            return None  # a file at the root of a partitioned table: no partition to name
        conj = [f"{_ident(k)} IS NULL" if v is None else f"{_ident(k)} = '{str(v).replace(chr(39), chr(39) * 2)}'" for k, v in p.items()]
        terms.append(" AND ".join(conj))
    if not terms:
        return None
    if len(terms) == 1:
        return terms[0]
    return " OR ".join(f"({t})" for t in terms)


def app_ids_of(log: DeltaLog, limit: int = 3) -> list[str]:
    """Streaming query ids (txn appIds) seen in the log, most recent first."""
    out: list[str] = []
    for raw in reversed(log.commits["txn_app_ids"].to_list()):
        if not raw:
            continue
        try:
            ids = json.loads(raw)
        except ValueError:
            continue
        for a in ids if isinstance(ids, dict) else []:
            if a not in out:
                out.append(a)
        if len(out) >= limit:
            break
    return out[:limit]


def retry_hypothesis(log: DeltaLog, retry: int) -> Hypothesis | None:
    """The re-run did what the failed run tried: its own operation and condition come first."""
    from forensics.predicates import predicate_strings

    rec = log.record(retry)
    if not rec.operation:
        return None
    conds = [s.text for s in predicate_strings(rec.operation, rec.operation_parameters)
             if s.role in ("condition", "merge_condition") and s.text.strip()]
    cond = conds[0] if conds else None
    label = f"did what its re-run v{retry} did ({rec.operation}{' ' + cond if cond else ''})"
    return Hypothesis(label, rec.operation.upper(), predicate=cond)


def hypotheses(log: DeltaLog, attempt: Attempt, writer: str, *, rewrote_a_file: bool = False,
               retry: int | None = None) -> list[Hypothesis]:
    """Least reading first; a known re-run's own operation before any; an attempt that rewrote a
    committed file read it, so it was no blind append or streaming batch."""
    parts = [p for p in attempt.partitions]
    pred = partition_predicate(parts)
    blind = Hypothesis("blind-appended into its partitions (read nothing)", "INSERT")
    streams = [Hypothesis(f"was a streaming batch of query {a} (read only its own txn)", "STREAMING UPDATE", app_id=a) for a in app_ids_of(log)]
    # OPTIMIZE reads its partitions but, at SnapshotIsolation (conflict-rules §2.1), ignores concurrent
    # appends: its conflict surface lies between a blind append and a DML on the same partitions.
    optimize = [Hypothesis(f"compacted its partitions ({pred}; OPTIMIZE ignores concurrent appends)", "OPTIMIZE", predicate=pred)] if pred else []
    own = [Hypothesis(f"read its own partitions ({pred})", "UPDATE", predicate=pred)] if pred else []
    whole = Hypothesis("read the whole table", "MERGE")
    first = [h for h in [retry_hypothesis(log, retry)] if h is not None] if retry is not None else []
    if rewrote_a_file:
        return first + own + optimize + [whole]
    if writer == "delta-rs":
        # conflict-rules §9: a predicate-less delta-rs write (append, OPTIMIZE) counts every snapshot file as read
        return first + streams + own + [blind] + optimize + [whole]
    return first + [blind] + streams + optimize + own + [whole]


def _timestamps(log: DeltaLog) -> list[tuple[int, int | None]]:
    return [(v, t) for v, t in log.commits.select(["version", "timestamp"]).iter_rows()]


def window(log: DeltaLog, attempt: Attempt, clock: Clock, retry: int | None) -> tuple[int | None, int, list[int], str]:
    """(until, lowest read version, landed-after versions, why): the commits that could have beaten it."""
    versions = log.versions
    lo_exact = min(versions) if versions else 0
    if clock.trusted:
        before = [v for v, t in _timestamps(log) if t is not None and t <= attempt.last_seen]
        after = [v for v, t in _timestamps(log) if t is not None and attempt.last_seen < t <= attempt.last_seen + AFTER_MS]
        if not before:
            return None, lo_exact, after, "its files are older than every retained commit"
        until = max(before)
        why = (f"its files were written from {fmt_time(attempt.first_seen, utc_default())} to {fmt_time(attempt.last_seen, utc_default())}; "
               f"v{until} is the last commit that landed before the last of them")
    else:
        after = []
        if retry is not None:
            rv = log.record(retry).read_version
            until = rv if rv is not None and rv < retry else retry - 1
            why = (f"v{retry} re-wrote one of its files byte for byte (same partition and size): a re-run after the failure, "
                   f"which read v{until}, so the winner is at or before v{until}")
        else:
            until = max(versions)
            why = "file times cannot place it (" + clock.why + "); every retained commit up to the latest was considered"
    return until, max(lo_exact, until - MAX_BACK), after, why


def _try(log: DeltaLog, state: StateIndex, h: Hypothesis, parts: list[dict], R: int, until: int, rules: str | None) -> WhatIfResult | None:
    req = WhatIfRequest(read_version=R, operation=h.operation, predicate=h.predicate,
                        partitions=[{k: ("" if v is None else v) for k, v in p.items()} for p in parts if p],
                        rules=rules, until=until, app_id=h.app_id)
    try:
        return whatif(log, req, state)
    except ForensicsError:
        return None


def replay_attempt(log: DeltaLog, state: StateIndex, attempt: Attempt, clock: Clock, *, retry: int | None = None,
                   rules: str | None = None, read_version: int | None = None, bounds: ReadBounds | None = None) -> None:
    """Fill `attempt`'s window and likely exception (in place)."""
    until, r_lo, after, wwhy = window(log, attempt, clock, retry)
    if bounds is not None and not clock.trusted:
        r_lo = min(r_lo, min(bounds.versions) - 1)  # the footers reach further back than the default search
    if bounds is not None:
        wwhy += "; " + "; ".join(bounds.why)
    attempt.retry_version = retry
    attempt.landed_after = after
    if until is None:
        attempt.why = f"not replayed: {wwhy}"
        return
    attempt.concurrent_versions = [v for v in log.versions if r_lo < v <= until]
    engines = [e for e in log.commits["engine_info"].to_list() if e]
    writer = "delta-rs" if (rules or "").startswith("delta-rs") else writer_family(engines[-1] if engines else None)
    hyps = hypotheses(log, attempt, writer, rewrote_a_file=bounds is not None and any("holds rows of" in w for w in bounds.why),
                      retry=retry)
    tried: list[str] = []

    def read_versions(upto: int) -> list[int]:
        rs = [read_version] if read_version is not None else list(range(upto - 1, r_lo - 1, -1))
        if bounds is not None and read_version is None:
            rs = [r for r in rs if r in bounds.versions]
        return rs

    def search(upto: int) -> tuple[Hypothesis, int, WhatIfResult] | None:
        # Hypotheses from least to most reading; within each, read versions newest first. Without
        # file times that place the attempt, the winning version is the least certain part of the
        # answer (the exception is the most certain): the output labels it inferred.
        rs = read_versions(upto)
        for h in hyps:
            for R in rs:
                res = _try(log, state, h, attempt.partitions, R, upto, rules)
                if res is not None and res.result.verdict == "abort":
                    return h, R, res
            tried.append(h.label)
        return None

    found = search(until)
    extended = False
    if found is None and after:
        tried.clear()
        found = search(max(after))
        extended = found is not None
        if extended:
            attempt.concurrent_versions = [v for v in log.versions if r_lo < v <= max(after)]
    if found is None:
        attempt.why = (f"inferred: no hypothesis aborts against v{r_lo + 1}..v{until} ({wwhy}); "
                       "the attempt may have failed for a reason the log does not show (a crash, a killed job, a lost rename race)")
        attempt.tried = [{"hypothesis": t} for t in tried]
        return
    h, R, res = found
    r = res.result
    if read_version is None:
        upto = max(after) if extended else until
        attempt.other_first_conflicts = partial(_alternatives, log, state, attempt, hyps, read_versions(upto), upto, rules,
                                                (r.exception, r.winning_version))
    attempt.likely_exception, attempt.winning_version, attempt.rule = r.exception, r.winning_version, r.rule
    attempt.hypothesis, attempt.read_version, attempt.partition, attempt.file = h.label, R, r.partition, r.file
    attempt.operation = h.operation
    attempt.tried = [{"hypothesis": t, "verdict": "commit"} for t in tried] + [{"hypothesis": h.label, "verdict": "abort", "read_version": R}]
    less = f"; hypotheses reading less ({'; '.join(tried)}) commit in the same window" if tried else ""
    attempt.why = (
        f"inferred: if it {h.label} at readVersion {R}, the {r.profile} rules abort it with {r.exception} "
        f"against v{r.winning_version} ({r.why}){less}. Window: {wwhy}"
        + ("; only commits that landed just after its last file explain it" if extended else "")
        + "."
    )


def _alternatives(log: DeltaLog, state: StateIndex, attempt: Attempt, hyps: list[Hypothesis], rs: list[int], until: int,
                  rules: str | None, shown: tuple[str | None, int | None]) -> list[dict]:
    """Every other first conflict the orphan files allow. The engine checks the winners from the
    loser's readVersion up and stops at the first conflict; without that readVersion each read
    version (and each thing the loser may have done) names its own first conflict, and all of them
    are as consistent with the files as the one shown (conflict-rules §5)."""
    seen: dict[tuple[str | None, int | None], dict] = {}
    for h in hyps:
        for R in rs:
            res = _try(log, state, h, attempt.partitions, R, until, rules)
            if res is None or res.result.verdict != "abort":
                continue
            key = (res.result.exception, res.result.winning_version)
            if key != shown and key not in seen:
                seen[key] = {"exception": key[0], "winning_version": key[1], "read_version": R, "hypothesis": h.label}
    return sorted(seen.values(), key=lambda d: (d["winning_version"] is None, d["winning_version"] or 0))
