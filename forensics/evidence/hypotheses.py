"""What an aborted attempt that left only data files may have done, and when it can have run.

The generic ladder of hypotheses, least reading first (blind append into its partitions -> a
streaming batch of a query that writes this table -> an OPTIMIZE of its partitions -> read its
own partitions -> read the whole table; delta-rs records every snapshot file as read by a
predicate-less write (conflict-rules §9), so there a partition read comes before the "blind"
append), its re-run's operation, and the window of commits that can have beaten it.
forensics.evidence.attribution replays them and ranks what aborts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any


from forensics.evidence.attempts import Attempt, Clock
from forensics.errors import ForensicsError
from forensics.times import fmt_time, utc_default
from forensics.log.delta_log import DeltaLog
from forensics.sets.commit_sets import StateIndex
from forensics.replay.whatif import WhatIfRequest, WhatIfResult, whatif

MAX_BACK = 20  # read versions tried per hypothesis (latest first)
AFTER_MS = 60_000  # commits this soon after the last file (and the first one after it) may still have beaten the attempt
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


def txn_app_ids(raw: str | None) -> list[str]:
    """The txn appIds of one commit, from the commit index's JSON column ([] when none or unreadable)."""
    if not raw:
        return []
    try:
        ids = json.loads(raw)
    except ValueError:
        return []
    return list(ids) if isinstance(ids, dict) else []


def app_ids_of(log: DeltaLog, limit: int = 3) -> list[str]:
    """The txn appIds seen in the log (streaming queries, idempotent writers), most recent first."""
    out: list[str] = []
    for raw in reversed(log.commits["txn_app_ids"].to_list()):
        for a in txn_app_ids(raw):
            if a not in out:
                out.append(a)
        if len(out) >= limit:
            break
    return out[:limit]


def first_app_versions(log: DeltaLog) -> dict[str, tuple[int, bool]]:
    """A txn appId is written by a streaming batch or by an idempotent write (delta-spark's
    `txnAppId` option, delta-rs's `CommitProperties(app_transactions=...)`): both read their own
    txn version, and a concurrent commit of the same appId aborts them (ConcurrentTransaction)."""
    out: dict[str, tuple[int, bool]] = {}
    for v, op, raw in log.commits.select(["version", "operation", "txn_app_ids"]).iter_rows():
        for a in txn_app_ids(raw):
            out.setdefault(a, (v, "STREAMING" in str(op or "").upper()))
    return out


def app_hypothesis(a: str, streaming: bool, why: str) -> Hypothesis:
    label = f"was a streaming batch of query {a} ({why})" if streaming else f"was an idempotent write of application {a} ({why})"
    return Hypothesis(label, "STREAMING UPDATE", app_id=a)


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
    apps = sorted(rec.txn_app_ids) if "STREAMING" in rec.operation.upper() else []
    return Hypothesis(label, rec.operation.upper(), predicate=cond, app_id=apps[0] if len(apps) == 1 else None)


def hypotheses(log: DeltaLog, attempt: Attempt, writer: str, *, rewrote_a_file: bool = False,
               retry: int | None = None) -> list[Hypothesis]:
    """Least reading first; a known re-run's own operation before any; an attempt that rewrote a
    committed file read it, so it was no blind append or streaming batch."""
    parts = [p for p in attempt.partitions]
    pred = partition_predicate(parts)
    blind = Hypothesis("blind-appended into its partitions (read nothing)", "INSERT")
    apps = app_ids_of(log)
    since = first_app_versions(log) if apps else {}
    streams = [app_hypothesis(a, since[a][1], "read only its own txn") for a in apps if a in since]
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


def _rerun_read(log: DeltaLog, retry: int) -> int:
    """The version the re-run `retry` read (its commit's readVersion, else the one before it): the
    attempt's winner landed at or before it."""
    rv = log.record(retry).read_version
    return rv if rv is not None and rv < retry else retry - 1


def window(log: DeltaLog, attempt: Attempt, clock: Clock, retry: int | None) -> tuple[int | None, int, list[int], str]:
    """(until, lowest read version, landed-after versions, why): the commits that could have beaten it."""
    versions = log.versions
    lo_exact = min(versions) if versions else 0
    if clock.trusted:
        # Object stores keep whole seconds (S3's Last-Modified): a file stamped at second s was written
        # before s+1, so a commit within that second may have come before it.
        last = attempt.last_seen + (999 if attempt.last_seen % 1000 == 0 and attempt.first_seen % 1000 == 0 else 0)
        before = [v for v, t in _timestamps(log) if t is not None and t <= last]
        later = sorted((t, v) for v, t in _timestamps(log) if t is not None and t > last)
        # The job's commit check came after its last file, by how much no file says (driver work,
        # tasks that write nothing): the first commit after it could always have beaten it.
        after = sorted({v for t, v in later if t <= last + AFTER_MS} | ({later[0][1]} if later else set()))
        if not before:
            return None, lo_exact, after, "its files are older than every retained commit"
        until = max(before)
        why = (f"its files were written from {fmt_time(attempt.first_seen, utc_default())} to {fmt_time(attempt.last_seen, utc_default())}; "
               f"v{until} is the last commit that landed before the last of them")
        if retry is not None:
            # Its re-run came after the failure: the winner landed before the re-run and by what it read.
            bound = _rerun_read(log, retry)
            after = [v for v in after if v <= bound]
            if bound < until:
                until = bound
            why += f"; its re-run v{retry} read v{bound}, so the winner is at or before v{bound}"
    else:
        after = []
        if retry is not None:
            until = _rerun_read(log, retry)
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
