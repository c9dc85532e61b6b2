"""Contention statistics, in the spirit of a database's lock statistics.

Computed from the Timeline (forensics.analysis.timeline) and the commit index. The records, as built
here (`Stats.to_dict` gives every key in camelCase, each time with its ISO 8601 twin: `startMs`,
`startIso`; the JSON contract is forensics/schemas/stats.schema.json):

{
  "table": str, "from_version": int, "to_version": int,
  "window": "1h", "window_ms": 3600000,
  "totals": {"commits": n, "stale_windows": n, "conflicts": n, "reorders": n, "aborted_attempts": n,
             "skipped": n, "reordered_commits": n, "forgiven_pairs": n, "aborted_conflicts": n,
             "aborted_known_winner": n, "aborted_ambiguous": n},
  "window_lengths": {"windows": n, "longest_ms": n|null, "longest_version": v|null, "median_ms": n|null},
  "partitions": [            # most contended first, whole range
     {"partition": "date=2024-06-25" | "(table)", "commits": n, "stale_windows": n, "overlaps": n,
      "conflicts": n, "reorders": n, "aborted_attempts": n, "score": n}],
  "files": [{"file": path, "conflicts": n, "reorders": n, "aborted_attempts": n}],
  "buckets": [               # per time window (by commit / abort time), same counters per partition
     {"start_ms": t, "end_ms": t, "partitions": [...as above...], "files": [...]}],
  "operation_matrix": {
     "categories": ["INSERT", "UPDATE/DELETE/MERGE", "OPTIMIZE", "METADATA", "OTHER", "UNKNOWN"],
     "cells": [{"current": cat, "winner": cat, "pairs": n, "clean": n, "reordered": n, "conflict": n,
                "aborted": n, "unchecked": n}]},
  "concurrency": [{"start_ms": t, "end_ms": t, "transactions": n, "max_concurrent": n, "commits": n,
                   "stale_windows": n}],
  "retries": {"metrics": [{"version": v, "writer": id, "key": "num_retries", "value": n}],
              "metric_totals": {"num_retries": n}, "metric_commits": n,
              "repeats": [{"version": v, "previous_version": v, "writer": id, "operation": op,
                           "partitions": [...], "gap_ms": n, "median_gap_ms": n, "why": str}],
              "attempts": [{"span_id": id, "partitions": [...], "winning_version": v, "exception": str|null,
                            "operation": op|null, "operation_from": "content"|"hypothesis"|"unknown",
                            "ambiguous": bool, "answer": str|null, "retry_version": v|null,
                            "overlapping_commits": [v...]}]}
}

Definitions. A *stale window*: a commit whose readVersion R < V-1 (winners R+1..V-1 landed in
between; conflict-rules §3). Partition of a commit: the distinct partitionValues of its add/remove actions
("(table)" when it wrote none: unpartitioned table or metadata only). *overlaps*: stale windows
in which at least one winner wrote the same partition. *conflicts*: commits the replay says
should have aborted (anomaly), counted at the partition the rule named; *reorders* (= *reordered_commits*):
commits that passed only because a winner was forgiven (verdict reordered, conflict-rules §6; the same count
as `replay`'s and the TUI's, forensics.replay.windows.ReorderCount), counted once at each partition (file)
a forgiven winner wrote; *forgiven_pairs*: the (commit, forgiven winner) pairs behind them, in the totals
and the operation matrix's `reordered`; *aborted_attempts*: attempts from forensics.evidence (inferred);
*aborted_conflicts*: those the evidence attributes to a winner (conflicts that never reached the log, not in
`conflicts`), split into *aborted_known_winner* (one answer) and *aborted_ambiguous* (several remain,
forensics.evidence.attribution); in the matrix such an attempt is the current transaction, classed by its
first candidate's operation (what its files show, else the first guess whose replay aborts).
Time overlaps are half-open: a window that ends at the instant another starts did not overlap it
(`overlaps`). *window_lengths*: read→commit time of the stale windows whose read time is known. The matrix rows are the current transaction's
operation class and the columns the winner's, as in Delta's isolation-level documentation.
"""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass, field
from typing import Any

from forensics.errors import ExitCode, ForensicsError
from forensics.model import OPERATION_CLASSES, hive_partition, operation_class
from forensics.schemas import camel_keys
from forensics.times import fmt_duration, with_iso
from forensics.log.delta_log import DeltaLog
from forensics.replay.windows import ReorderCount
from forensics.analysis.timeline import Span, Timeline

TABLE_KEY = "(table)"
RETRY_METRIC = re.compile(r"retr|attempt", re.I)
REPEAT_GAP_FACTOR = 3  # a gap this many times the writer's median gap is "after a gap"


def parse_window(text: str) -> int:
    """'1h', '15m', '30s', '1d', '500ms' -> milliseconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*", text or "")
    if not m:
        raise ForensicsError(ExitCode.USAGE, f"--window {text!r}: use a number and a unit, e.g. 15m, 1h, 1d")
    n = float(m.group(1)) * {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}[m.group(2)]
    if n < 1:
        raise ForensicsError(ExitCode.USAGE, f"--window {text!r} is shorter than 1 ms")
    return int(n)


@dataclass
class _Counter:
    commits: int = 0
    stale_windows: int = 0
    overlaps: int = 0
    conflicts: int = 0
    reorders: int = 0
    aborted_attempts: int = 0

    @property
    def score(self) -> int:
        return self.conflicts * 4 + self.aborted_attempts * 4 + self.reorders * 2 + self.overlaps

    def to_dict(self, key: str, name: str) -> dict[str, Any]:
        return {name: key, "commits": self.commits, "stale_windows": self.stale_windows, "overlaps": self.overlaps,
                "conflicts": self.conflicts, "reorders": self.reorders, "aborted_attempts": self.aborted_attempts,
                "score": self.score}


@dataclass
class Stats:
    """Contention over a range of versions: totals, how long read-to-commit windows were, and the
    partitions, files and time buckets where commits collided."""
    table: str
    from_version: int | None
    to_version: int | None
    window_ms: int
    window: str
    totals: dict[str, int]
    window_lengths: dict[str, Any]
    partitions: list[dict[str, Any]]
    files: list[dict[str, Any]]
    buckets: list[dict[str, Any]]
    operation_matrix: dict[str, Any]
    concurrency: list[dict[str, Any]]
    retries: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    findings: list[Any] = field(default_factory=list, repr=False)  # the replay's, for --strict; not in the JSON

    def to_dict(self) -> dict[str, Any]:
        """The `stats --json` object: camelCase keys (operationMetrics names as the log has them)."""
        d = camel_keys({
            "table": self.table,
            "from_version": self.from_version,
            "to_version": self.to_version,
            "window": self.window,
            "window_ms": self.window_ms,
            "totals": self.totals,
            "window_lengths": self.window_lengths,
            "partitions": self.partitions,
            "files": self.files,
            "buckets": self.buckets,
            "operation_matrix": self.operation_matrix,
            "concurrency": self.concurrency,
            "retries": self.retries,
            "notes": self.notes,
        }, keep=("metric_totals",))
        for k in ("buckets", "concurrency"):
            d[k] = [with_iso(b, "startMs", "endMs") for b in d[k]]
        return d


def _pkeys(parts: list[dict[str, Any]] | None) -> list[str]:
    keys = sorted({hive_partition(p) or TABLE_KEY for p in (parts or [])})
    return keys or [TABLE_KEY]


def overlaps(a0: int, a1: int, b0: int, b1: int) -> bool:
    """Whether two read→commit windows shared time. Half-open: one that ends at the instant the
    other starts did not overlap it; a zero-length window is its one millisecond [t, t+1)."""
    return a0 < max(b1, b0 + 1) and b0 < max(a1, a0 + 1)


def _stale(s: Span, copies: dict[int, int]) -> bool:
    """A commit whose window held other commits; a copied commit file is not one (DeltaLog.copies)."""
    return (s.kind == "commit" and s.version is not None and s.read_version is not None
            and s.read_version < s.version - 1 and s.version not in copies)


def table_stats(log: DeltaLog, tl: Timeline, window_ms: int = 3_600_000, window: str = "1h", top: int = 20,
                attempts: list[Any] | None = None) -> Stats:
    """`attempts`: the evidence's Attempts behind the timeline's attempt spans (their attribution)."""
    recs = {r.version: r for r in log.records()}
    found = _attempts_by_span(tl, attempts or [])
    by_v = {s.version: s for s in tl.commits if s.version is not None}
    wins = {v: _pkeys(recs[v].partitions_touched) if v in recs else [TABLE_KEY] for v in recs}

    def bucket_of(t: int | None) -> int | None:
        return None if t is None else (t // window_ms) * window_ms

    parts: dict[str, _Counter] = {}
    files: dict[str, dict[str, int]] = {}
    bparts: dict[int | None, dict[str, _Counter]] = {}
    bfiles: dict[int | None, dict[str, dict[str, int]]] = {}

    def bump(b: int | None, key: str, attr: str) -> None:
        for d in (parts, bparts.setdefault(b, {})):
            c = d.setdefault(key, _Counter())
            setattr(c, attr, getattr(c, attr) + 1)

    def fbump(b: int | None, path: str | None, attr: str) -> None:
        if not path:
            return
        for d in (files, bfiles.setdefault(b, {})):
            c = d.setdefault(path, {"conflicts": 0, "reorders": 0, "aborted_attempts": 0})
            c[attr] += 1

    totals = {"commits": 0, "stale_windows": 0, "conflicts": 0, "reorders": 0, "aborted_attempts": 0, "skipped": 0,
              "aborted_conflicts": 0, "aborted_known_winner": 0, "aborted_ambiguous": 0}
    for s in tl.spans:
        b = bucket_of(s.end_ms)
        if s.kind == "attempt":
            totals["aborted_attempts"] += 1
            if s.winning_version is not None:
                totals["aborted_conflicts"] += 1
                a = found.get(s.id)
                totals["aborted_ambiguous" if a is not None and a.ambiguous else "aborted_known_winner"] += 1
            for k in ([hive_partition(s.partition) or TABLE_KEY] if s.partition is not None else _pkeys(s.partitions)):
                bump(b, k, "aborted_attempts")
            fbump(b, s.file, "aborted_attempts")
            continue
        totals["commits"] += 1
        mine = wins.get(s.version, _pkeys(s.partitions))  # type: ignore[arg-type]
        for k in mine:
            bump(b, k, "commits")
        if s.verdict == "skipped":
            totals["skipped"] += 1
        if _stale(s, log.copies):
            totals["stale_windows"] += 1
            winner_parts = set()
            for w in range(s.read_version + 1, s.version):  # type: ignore[operator]
                winner_parts.update(wins.get(w, []))
            for k in mine:
                bump(b, k, "stale_windows")
                if k in winner_parts:
                    bump(b, k, "overlaps")
        if s.verdict == "anomaly":
            totals["conflicts"] += 1
            keys = [hive_partition(s.partition) or TABLE_KEY] if s.partition is not None else mine
            for k in keys:
                bump(b, k, "conflicts")
            fbump(b, s.file, "conflicts")
        if s.verdict == "reordered":  # one reordered commit, once per partition / file its forgiven winners wrote
            forgiven_parts: set[str] = set()
            forgiven_files: set[str] = set()
            for w in s.reordered_before:
                forgiven_parts.update(wins.get(w, [TABLE_KEY]))
                wa = log.actions_of(w)
                forgiven_files.update(wa.filter(wa["kind"] == "add")["path"].to_list())
            for k in sorted(forgiven_parts):
                bump(b, k, "reorders")
            for path in sorted(forgiven_files):
                fbump(b, path, "reorders")

    def ranked(d: dict[str, _Counter], name: str) -> list[dict[str, Any]]:
        rows = [c.to_dict(k, name) for k, c in d.items()]
        rows.sort(key=lambda r: (-r["score"], -r["stale_windows"], -r["commits"], r[name]))
        return rows[:top]

    def franked(d: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
        rows = [{"file": k, **c} for k, c in d.items()]
        rows.sort(key=lambda r: (-(r["conflicts"] * 4 + r["aborted_attempts"] * 4 + r["reorders"]), r["file"]))
        return rows[:top]

    reorders = ReorderCount.of(tl.commits)
    totals["reorders"] = reorders.commits
    totals.update(reorders.to_dict())
    buckets = [
        {"start_ms": b, "end_ms": None if b is None else b + window_ms,
         "partitions": ranked(bparts.get(b, {}), "partition"), "files": franked(bfiles.get(b, {}))}
        for b in sorted(set(bparts) | set(bfiles), key=lambda x: -1 if x is None else x)
    ]
    return Stats(
        table=tl.table,
        from_version=tl.from_version,
        to_version=tl.to_version,
        window_ms=window_ms,
        window=window,
        totals=totals,
        window_lengths=window_lengths(tl, log.copies),
        partitions=ranked(parts, "partition"),
        files=franked(files),
        buckets=buckets,
        operation_matrix=operation_matrix(tl, recs, found),
        concurrency=concurrency(tl, window_ms, log.copies),
        retries=retries(tl, recs, by_v, found),
        notes=list(tl.notes),
    )


def _attempts_by_span(tl: Timeline, attempts: list[Any]) -> dict[str, Any]:
    """Timeline attempt span id -> its evidence Attempt (the same orphan files)."""
    by_files = {tuple(f.path for f in a.files): a for a in attempts}
    return {s.id: by_files[tuple(s.files)] for s in tl.attempts if tuple(s.files) in by_files}


def _loser_operation(s: Span, found: dict[str, Any]) -> tuple[str | None, str]:
    """An attempt span's operation and where it comes from: its stray commit's, else its attribution's
    (forensics.analysis.silent: what its files show, else the first guess whose replay aborts)."""
    a = found.get(s.id)
    if a is not None and not a.stray_commit:
        from forensics.evidence.attempts import attempt_operation

        op, src = attempt_operation(a)
        if op:
            return op, src
    if s.operation:
        return s.operation, "stray-commit" if a is not None and a.stray_commit else "hypothesis"
    return None, "unknown"


def operation_matrix(tl: Timeline, recs: dict[int, Any], found: dict[str, Any] | None = None) -> dict[str, Any]:
    """Pairs (current txn, winner) over every replayed window, by outcome of that pair's check."""
    cells: dict[tuple[str, str], dict[str, int]] = {}

    def cat(v: int) -> str:
        r = recs.get(v)
        return operation_class(r.operation, r.operation_parameters) if r else "UNKNOWN"

    def add(cur: str, win: str, outcome: str) -> None:
        c = cells.setdefault((cur, win), {"pairs": 0, "clean": 0, "reordered": 0, "conflict": 0, "aborted": 0, "unchecked": 0})
        c["pairs"] += 1
        c[outcome] += 1

    for s in tl.spans:
        if s.kind == "attempt":
            if s.winning_version is not None:
                add(operation_class(_loser_operation(s, found or {})[0]), cat(s.winning_version), "aborted")
            continue
        if s.verdict == "serial" or not s.window or s.version is None:
            continue
        cur = cat(s.version)
        for w in s.window:
            if s.verdict == "skipped":
                out = "unchecked"
            elif s.verdict == "anomaly" and s.winning_version is not None:
                # conflict-rules §5.10: checks stop at the first winner that aborts the transaction
                out = "conflict" if w == s.winning_version else ("clean" if w < s.winning_version else "unchecked")
            elif w in s.reordered_before:
                out = "reordered"
            else:
                out = "clean"
            add(cur, cat(w), out)
    used = [c for c in OPERATION_CLASSES if any(c in k for k in cells)]
    return {
        "categories": used,
        "cells": [{"current": a, "winner": b, **v} for (a, b), v in sorted(cells.items(), key=lambda kv: (OPERATION_CLASSES.index(kv[0][0]), OPERATION_CLASSES.index(kv[0][1])))],
    }


def concurrency(tl: Timeline, window_ms: int, copies: dict[int, int] | None = None) -> list[dict[str, Any]]:
    """Per bucket: transactions whose read→commit window touches it, and the most open at once.

    Windows are half-open (`overlaps`): one that ends at the instant the next starts did not overlap
    it (a purely sequential table has at most one open at once). Copied commit files are not transactions.
    """
    copies = copies or {}
    iv = [(s.start_ms, s.end_ms) for s in tl.commits
          if s.start_ms is not None and s.end_ms is not None and s.version not in copies]
    iv += [(s.start_ms, s.end_ms) for s in tl.attempts if s.start_ms is not None and s.end_ms is not None]
    ends = [s.end_ms for s in tl.commits if s.end_ms is not None]
    if not iv and not ends:
        return []
    lo = min([a for a, _ in iv] + ends)
    hi = max([b for _, b in iv] + ends)
    out = []
    b = (lo // window_ms) * window_ms
    while b <= hi:
        e = b + window_ms
        inside = [(max(a, b), min(z, e)) for a, z in iv if overlaps(a, z, b, e)]
        best = _most_open(inside)
        commits = [s for s in tl.commits if s.end_ms is not None and b <= s.end_ms < e]
        out.append({"start_ms": b, "end_ms": e, "transactions": len(inside), "max_concurrent": best,
                    "commits": len(commits), "stale_windows": sum(1 for s in commits if _stale(s, copies))})
        b = e
        if len(out) > 10_000:
            break  # a tiny --window over a long range: stop rather than print a million rows
    return out


def _most_open(windows: list[tuple[int, int]]) -> int:
    """The most windows open at one instant. At one instant, windows that end close first, then
    instantaneous ones (a commit that read nothing) count with those still open, then windows that
    start open: so a transaction that read the commit made at t does not overlap it, and a commit
    made strictly inside another's window does."""
    events = sorted([(z, 0) for a, z in windows if z > a] + [(a, 1) for a, z in windows if z <= a]
                    + [(a, 2) for a, z in windows if z > a])
    cur = best = 0
    for _, kind in events:
        if kind == 1:
            best = max(best, cur + 1)
        else:
            cur += 1 if kind == 2 else -1
            best = max(best, cur)
    return best


def window_lengths(tl: Timeline, copies: dict[int, int]) -> dict[str, Any]:
    """How long the stale windows stayed open, read→commit (only where the read's commit time is known)."""
    spans = [s for s in tl.commits if _stale(s, copies) and s.start_source == "readVersion-commit-time" and s.duration_ms is not None]
    if not spans:
        return {"windows": 0, "longest_ms": None, "longest_version": None, "median_ms": None}
    longest = max(spans, key=lambda s: (s.duration_ms, -(s.version or 0)))
    return {"windows": len(spans), "longest_ms": longest.duration_ms, "longest_version": longest.version,
            "median_ms": int(statistics.median(s.duration_ms for s in spans))}  # type: ignore[misc]


def retries(tl: Timeline, recs: dict[int, Any], by_v: dict[int, Span], found: dict[str, Any] | None = None) -> dict[str, Any]:
    # Metrics are numbers whatever the writer (the index decodes delta-spark's strings); a retry
    # counter every commit recorded as 0 (delta-rs' num_retries) is a total of 0, not "none".
    metrics, totals, with_metrics = [], {}, 0
    for v in sorted(by_v):
        r = recs.get(v)
        m = (r.operation_metrics or {}) if r else {}
        with_metrics += bool(m)
        for k, val in m.items():
            if not RETRY_METRIC.search(str(k)) or isinstance(val, bool) or not isinstance(val, (int, float)):
                continue
            n = int(val)
            if n >= 0:
                totals[str(k)] = totals.get(str(k), 0) + n
            if n > 0:
                metrics.append({"version": v, "writer": by_v[v].writer, "key": str(k), "value": n})
    # Repeats: the same writer, operation, parameters and partitions again after an unusual pause
    # (inferred: a job re-run after a failure looks like this; so does a scheduled job).
    repeats = []
    seq: dict[str, list[Span]] = {}
    for v in sorted(by_v):
        seq.setdefault(by_v[v].writer, []).append(by_v[v])
    for wid, spans in seq.items():
        gaps = [b.end_ms - a.end_ms for a, b in zip(spans, spans[1:]) if a.end_ms is not None and b.end_ms is not None]
        med = statistics.median(gaps) if gaps else 0
        for a, b in zip(spans, spans[1:]):
            ra, rb = recs.get(a.version), recs.get(b.version)
            if ra is None or rb is None or a.end_ms is None or b.end_ms is None:
                continue
            same = (ra.operation == rb.operation and json.dumps(ra.operation_parameters, sort_keys=True, default=str)
                    == json.dumps(rb.operation_parameters, sort_keys=True, default=str) and _pkeys(ra.partitions_touched) == _pkeys(rb.partitions_touched))
            gap = b.end_ms - a.end_ms
            if same and b.version - a.version > 1 and gap > REPEAT_GAP_FACTOR * med and gap > 0:
                repeats.append({"version": b.version, "previous_version": a.version, "writer": wid, "operation": rb.operation,
                                "partitions": _pkeys(rb.partitions_touched), "gap_ms": gap, "median_gap_ms": int(med),
                                "why": f"same writer, operation, parameters and partitions as v{a.version}, after {fmt_duration(gap)} "
                                       f"(> {REPEAT_GAP_FACTOR}× this writer's median gap of {fmt_duration(int(med))}) with other commits in between (inferred)"})
    commits = [s for s in tl.commits if s.start_ms is not None and s.end_ms is not None]
    atts = []
    for s in tl.attempts:
        keys = set(_pkeys(s.partitions))
        over = [c.version for c in commits if s.start_ms is not None and s.end_ms is not None
                and overlaps(c.start_ms, c.end_ms, s.start_ms, s.end_ms) and keys & set(_pkeys(c.partitions))]  # type: ignore[arg-type]
        from forensics.analysis.silent import one_of

        op, src = _loser_operation(s, found or {})
        a = (found or {}).get(s.id)
        atts.append({"span_id": s.id, "partitions": sorted(keys), "winning_version": s.winning_version,
                     "exception": s.exception, "operation": op, "operation_from": src,
                     "ambiguous": bool(a is not None and a.ambiguous), "answer": one_of(a.candidates) if a is not None
                     and a.candidates else None, "retry_version": s.retry_version, "overlapping_commits": over})
    return {"metrics": metrics, "metric_totals": totals, "metric_commits": with_metrics, "repeats": repeats, "attempts": atts}

