"""Chrome trace-event JSON (opens in ui.perfetto.dev and chrome://tracing).

pid 1 is the table. tid 1 is the "Delta log" track (an instant per commit); every writer gets
one or more tracks (lanes): a writer's read→commit windows can overlap (a stale handle, several
threads), and slices on one track must nest, so overlapping spans go to the writer's next lane.
Each transaction is a complete event (`ph:"X"`, ts/dur in microseconds). Flow events
(`ph:"s"` on the loser at its read time, `ph:"f"`, `bp:"e"` on the winner at its commit) draw
an arrow loser → winner for conflicts and aborts, and reordered txn → the winner it was
serialised before. Trace event format: catapult `docs/trace-event-format.md`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from forensics.safe import inert
from forensics.analysis.timeline import Span, Timeline

PID = 1
LOG_TID = 1
LANE_STRIDE = 100  # writer i, lane k -> tid (i + 1) * 100 + k


def _us(ms: int) -> int:
    return int(ms) * 1000


def span_bounds(s: Span) -> tuple[int, int] | None:
    """(start, end) in ms; a span with an unknown start is drawn as a point at its end."""
    if s.end_ms is None and s.start_ms is None:
        return None
    end = s.end_ms if s.end_ms is not None else s.start_ms
    start = s.start_ms if s.start_ms is not None else end
    assert start is not None and end is not None
    return (min(start, end), end)


def assign_lanes(tl: Timeline, spans: Iterable[Span] | None = None) -> dict[str, tuple[str, int]]:
    """span id -> (writer id, lane): greedy interval partitioning per writer (of `spans`: all by default)."""
    out: dict[str, tuple[str, int]] = {}
    by_writer: dict[str, list[Span]] = {}
    for s in tl.spans if spans is None else spans:
        by_writer.setdefault(s.writer, []).append(s)
    for wid, spans in by_writer.items():
        lanes_end: list[int] = []
        for s in sorted(spans, key=lambda x: (span_bounds(x) or (0, 0), x.id)):
            b = span_bounds(s)
            if b is None:
                continue
            lane = next((i for i, e in enumerate(lanes_end) if e < b[0]), None)
            if lane is None:
                lanes_end.append(b[1])
                lane = len(lanes_end) - 1
            else:
                lanes_end[lane] = b[1]
            out[s.id] = (wid, lane)
    return out


def _name(s: Span) -> str:
    op = inert(s.operation or "?", 60)
    if s.kind == "attempt":
        lost = inert(s.one_of, 120) if s.one_of and s.one_of.startswith("one of") else s.exception or ""
        return f"aborted {op if s.operation else 'attempt'} ✗ {lost}".strip()
    mark = {"clean": "✓", "serial": "✓", "reordered": "↺", "anomaly": "⚠", "skipped": "?"}.get(s.verdict, "")
    return f"v{s.version} {op} {mark}".strip()


def _args(s: Span) -> dict[str, Any]:
    d = {k: v for k, v in s.to_dict().items() if v not in (None, [], "", {})}
    for k in ("why", "likely_reason", "file"):
        if k in d:
            d[k] = inert(d[k], 2000)
    return d


def chrome_trace(tl: Timeline) -> dict[str, Any]:
    lanes = assign_lanes(tl)
    widx = {w.id: i for i, w in enumerate(tl.writers)}
    labels = {w.id: w.label for w in tl.writers}
    ev: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "args": {"name": f"Delta table {inert(tl.table, 300)}"}},
        {"ph": "M", "name": "thread_name", "pid": PID, "tid": LOG_TID, "args": {"name": "Delta log"}},
        {"ph": "M", "name": "thread_sort_index", "pid": PID, "tid": LOG_TID, "args": {"sort_index": 0}},
    ]
    named: set[int] = set()
    tid_of: dict[str, int] = {}
    for s in tl.spans:
        if s.id not in lanes:
            continue
        wid, lane = lanes[s.id]
        tid = (widx.get(wid, len(widx)) + 1) * LANE_STRIDE + lane
        tid_of[s.id] = tid
        if tid not in named:
            named.add(tid)
            label = inert(labels.get(wid, wid), 200) + (f" (lane {lane + 1})" if lane else "")
            ev.append({"ph": "M", "name": "thread_name", "pid": PID, "tid": tid, "args": {"name": label}})
            ev.append({"ph": "M", "name": "thread_sort_index", "pid": PID, "tid": tid, "args": {"sort_index": tid}})
        start, end = span_bounds(s)  # type: ignore[misc]
        ev.append(
            {
                "ph": "X",
                "name": _name(s),
                "cat": f"{s.kind},{s.verdict}",
                "pid": PID,
                "tid": tid,
                "ts": _us(start),
                "dur": _us(end - start),
                "args": _args(s),
            }
        )
        if s.kind == "commit" and s.end_ms is not None:
            ev.append({"ph": "i", "s": "t", "name": f"commit v{s.version}", "cat": "commit", "pid": PID, "tid": LOG_TID,
                       "ts": _us(s.end_ms), "args": {"operation": inert(s.operation or "", 200), "verdict": s.verdict}})
    by_id = {s.id: s for s in tl.spans}
    flow_id = 0
    for e in tl.edges:
        src, dst = by_id.get(e.source), by_id.get(e.target)
        if src is None or dst is None or src.id not in tid_of or dst.id not in tid_of:
            continue  # the winner is outside --from/--to: no arrow
        flow_id += 1
        s0, _ = span_bounds(src)  # type: ignore[misc]
        _, d1 = span_bounds(dst)  # type: ignore[misc]
        name = f"{e.kind}: {e.exception or e.rule or ''}".strip().rstrip(":")
        ev.append({"ph": "s", "id": flow_id, "name": name, "cat": e.kind, "pid": PID, "tid": tid_of[src.id], "ts": _us(s0)})
        ev.append({"ph": "f", "bp": "e", "id": flow_id, "name": name, "cat": e.kind, "pid": PID, "tid": tid_of[dst.id], "ts": _us(d1)})
    return {
        "traceEvents": ev,
        "displayTimeUnit": "ms",
        "otherData": {"generator": "delta-forensics", "timeline_schema_version": tl.schema_version, "table": inert(tl.table, 500),
                      "from_version": tl.from_version, "to_version": tl.to_version},
    }


def write_chrome_trace(tl: Timeline, path: Path) -> list[Path]:
    path.write_text(json.dumps(chrome_trace(tl), ensure_ascii=False), encoding="utf-8")
    return [path]
