"""The shareable post-mortem: one self-contained HTML file.

In order: the title and the incident story (the lines `explain` leads with), the aborted attempts
with their attribution ("one of", ranked, when ambiguous), then the detail: the timeline chart
(inline SVG, drawn over the incident's window), the verdict of every replayed commit with its rule
in words, what to change (each change once, with the conflicts it serves), statistics and
counterfactuals. Readable offline and as a CI artifact: no
script, stylesheet, font or image is fetched (inline CSS, pure SVG, no JavaScript). Every string
goes through `e()`: the project's shorthand said in words (`forensics.analysis.story.in_words`),
control characters made visible, HTML-escaped.
"""

from __future__ import annotations

import datetime as _dt
import html
import re
from pathlib import Path
from typing import Any

from forensics.analysis.story import in_words, partitions
from forensics.export.chrome import assign_lanes, span_bounds
from forensics.export.mermaid import mermaid
from forensics.export.postmortem import Postmortem, build_postmortem, verdict_rule
from forensics.model import hive_partition
from forensics.times import fmt_duration, fmt_time, iso_utc, utc_default
from forensics.safe import inert, inert_multiline
from forensics.analysis.timeline import Span, Timeline

COLORS = {"clean": "#3f9b5a", "serial": "#9cc5a8", "reordered": "#d9a21b", "anomaly": "#c8372d", "skipped": "#9a9a9a", "aborted": "#7a1f9c"}
MAX_LANES = 6
MAX_ATTEMPT_ROWS = 12  # aborted attempts drawn, one row each; the attempts table lists every one
FOCUS_PAD = 0.04  # the chart's margin either side of the incident's window, as a share of it
CHAR_EM = 0.62  # a generous width of one character, in font sizes, for placing labels apart
MAX_VERDICT_ROWS = 2000  # the verdict table of a huge range: the rest is in the json/csv/parquet exports
ROW_H = 18
LABEL_W = 230
CHART_W = 1000

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1320px}
h1{font-size:20px;margin:0 0 4px}h3{font-size:14px;margin:16px 0 6px}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.muted{color:#666;font-size:12px}table{border-collapse:collapse;font-size:12px;margin:6px 0}
td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}th{background:#f4f4f4}
td.n{text-align:right;font-variant-numeric:tabular-nums}.chip{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px;border-radius:2px}
.appear{color:#b3261e}.vanish{color:#1e6b34}.unknown{color:#666}pre{background:#f6f6f6;padding:8px;overflow:auto;font-size:11px}
.story{font-size:14px;line-height:1.5;max-width:1100px}.v-anomaly{color:#b3261e;font-weight:bold}.v-reordered{color:#8a6500}
.v-aborted{color:#7a1f9c}.v-skipped{color:#666}.advice li{margin:0 0 8px;font-size:13px}.advice p{margin:2px 0}
.story p{margin:0 0 4px}ol.ranked{margin:2px 0;padding-left:18px}
svg text{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif}
"""


def e(value: Any, max_len: int | None = 2000) -> str:
    """Untrusted value → words (no rule-reference shorthand), inert, HTML-escaped text."""
    return html.escape(inert(in_words(value if isinstance(value, str) else inert(value, None)), max_len), quote=True)


def _title(s: Span, labels: dict[str, str]) -> str:
    parts = [s.id + (f" {s.operation}" if s.operation else ""), f"writer: {labels.get(s.writer, s.writer)}", f"verdict: {s.verdict}"]
    if s.read_version is not None:
        parts.append(f"readVersion: {s.read_version}")
    parts.append(f"start: {iso_utc(s.start_ms) or 'unknown'} ({s.start_source})")
    parts.append(f"end: {iso_utc(s.end_ms) or 'unknown'} ({s.end_source})")
    if s.exception:
        parts.append(f"{s.exception} vs v{s.winning_version} [{hive_partition(s.partition) or ''}] rule {s.rule}")
    if s.reordered_before:
        parts.append("serialised before " + ", ".join(f"v{x}" for x in s.reordered_before))
    if s.kind == "attempt":
        parts.append(f"attribution: {s.one_of or 'no candidate'}")
        parts.append(f"last file written: {iso_utc(s.file_time_ms)} (file times are trusted)" if s.file_time_ms is not None
                     else f"file times: {s.file_times or 'unknown'}")
    if s.why:
        parts.append(s.why)
    return "\n".join(parts)


def _commit_label(s: Span) -> str:
    return f"commit v{s.version} {s.operation or ''} ({s.verdict})"


def _winners_of(s: Span) -> list[int]:
    """The commits a conflict names: every candidate's winner (an attempt), the winner, or the reorders."""
    out = [c["winning_version"] for c in s.candidates] if s.candidates else (
        [s.winning_version] if s.winning_version is not None else [])
    return list(dict.fromkeys(out + list(s.reordered_before)))


def focus_range(tl: Timeline) -> tuple[int, int] | None:
    """The incident's window: its aborted attempts, conflicts and reorders with the commits they
    name, padded a little, so the incident fills the chart; the whole range when nothing conflicted."""
    ends = {s.version: s.end_ms for s in tl.commits}
    ts: list[int] = []
    for s in tl.spans:
        b = span_bounds(s)
        if s.verdict not in ("aborted", "anomaly", "reordered") or b is None:
            continue
        ts += list(b) + [t for w in _winners_of(s) if (t := ends.get(w)) is not None]
    if not ts:
        return tl.time_range()
    t0, t1 = min(ts), max(ts)
    pad = max(1, int((t1 - t0) * FOCUS_PAD))
    return t0 - pad, t1 + pad


def _attempt_label(s: Span) -> str:
    """The words on an attempt's bar: its winner, or "one of" its candidates' winners (ranked)."""
    ws = _winners_of(s)
    if len(ws) > 1:
        return f"{s.id} lost to one of " + ", ".join(f"v{w}" for w in ws) + f" ({len(s.candidates)} candidates, ranked)"
    return f"{s.id} lost to v{ws[0]} ({s.exception or 'conflict'})" if ws else f"{s.id}: no candidate"


def _text_w(text: str, size: int) -> float:
    return len(text) * size * CHAR_EM  # generous: labels placed by this never touch


def timeline_svg(tl: Timeline) -> str:
    """The incident's window as a chart: the Delta log's commits (row 0), each writer's transactions,
    then one row per aborted attempt placed by its attribution. Commits outside the window are
    counted at its edges; labels are placed so none overlaps another."""
    commits = [s for s in tl.spans if s.kind == "commit"]
    attempts = [s for s in tl.attempts if span_bounds(s) is not None][:MAX_ATTEMPT_ROWS]
    lanes = assign_lanes(tl, commits)
    labels = {w.id: w.label for w in tl.writers}
    rows: list[tuple[str, int]] = []
    for w in tl.writers:
        used = [min(lane, MAX_LANES - 1) for (wid, lane) in lanes.values() if wid == w.id]
        rows += [(w.id, k) for k in range(1 + max(used))] if used else []
    row_of = {key: i + 1 for i, key in enumerate(rows)}  # row 0: Delta log
    att_row = {s.id: len(rows) + 1 + i for i, s in enumerate(attempts)}
    n_rows = len(rows) + len(attempts)
    rng = focus_range(tl)
    height = (n_rows + 1) * ROW_H + 56
    out = [f'<svg class="timeline" width="{LABEL_W + CHART_W + 20}" height="{height}" role="img" aria-label="timeline">']
    out.append('<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse">'
               '<path d="M0,0 L10,5 L0,10 z" fill="#444"/></marker></defs>')
    if rng is None:
        out.append('<text x="10" y="20">no timestamps</text></svg>')
        return "".join(out)
    t0, t1 = rng
    span_ms = max(1, t1 - t0)

    def x(t: int) -> float:
        return LABEL_W + min(max(t - t0, 0), span_ms) * CHART_W / span_ms

    def y(row: int) -> int:
        return 10 + row * ROW_H

    bottom = y(n_rows + 1)
    for i in range(n_rows + 1):
        if i % 2 == 0:
            out.append(f'<rect x="0" y="{y(i)}" width="{LABEL_W + CHART_W + 20}" height="{ROW_H}" fill="#fafafa"/>')
    out.append(f'<rect class="plot" x="{LABEL_W}" y="{y(0)}" width="{CHART_W}" height="{bottom - y(0)}" fill="none" stroke="#e2e2e2"/>')
    out.append(f'<text class="lab" x="4" y="{y(0) + 13}" font-size="11" font-weight="bold">Delta log</text>')
    for (wid, k), r in row_of.items():
        lab = labels.get(wid, wid) + (f" ({k + 1})" if k else "")
        out.append(f'<text class="lab" x="4" y="{y(r) + 13}" font-size="11">{e(lab, 34)}</text>')
    for s in attempts:
        out.append(f'<text class="lab" x="4" y="{y(att_row[s.id]) + 13}" font-size="11">{e(s.id + ", " + labels.get(s.writer, s.writer), 34)}</text>')
    for i in range(6):
        t = t0 + span_ms * i // 5
        xx = x(t)
        out.append(f'<line x1="{xx:.1f}" y1="{y(0)}" x2="{xx:.1f}" y2="{bottom}" stroke="#e2e2e2"/>')
        tick = iso_utc(t) if i == 0 else "+" + fmt_duration(t - t0)
        anchor = "start" if i == 0 else "end" if i == 5 else "middle"
        out.append(f'<text class="lab tick" x="{xx:.1f}" y="{bottom + 14}" font-size="10" text-anchor="{anchor}">{e(tick)}</text>')
    winners = {w for s in tl.spans if s.verdict in ("aborted", "anomaly", "reordered") for w in _winners_of(s)}
    pos: dict[str, tuple[float, float, int]] = {}
    before: list[int] = []
    after: list[int] = []
    log_label_end = -1.0
    for s in commits + attempts:
        b = span_bounds(s)
        if b is None or (s.kind == "commit" and s.id not in lanes):
            continue
        if s.kind == "commit" and (b[1] < t0 or b[0] > t1):
            (before if b[1] < t0 else after).append(s.version)  # type: ignore[arg-type]
            continue
        r = att_row[s.id] if s.kind == "attempt" else row_of[(lanes[s.id][0], min(lanes[s.id][1], MAX_LANES - 1))]
        x0, x1 = x(b[0]), x(b[1])
        w = max(2.0, x1 - x0)
        color = COLORS.get(s.verdict, "#777")
        look = ' stroke="#7a1f9c" stroke-dasharray="3,2" fill-opacity="0.35"' if s.kind == "attempt" else ' fill-opacity="0.85"'
        unknown_start = ' stroke="#555" stroke-width="0.5"' if s.start_ms is None else ""
        out.append(f'<rect class="span {s.kind} {s.verdict}" x="{x0:.1f}" y="{y(r) + 3}" width="{w:.1f}" height="{ROW_H - 6}" rx="2" fill="{color}"{look}{unknown_start}>'
                   f'<title>{e(_title(s, labels), 4000)}</title></rect>')
        pos[s.id] = (x0, x0 + w, r)
        if s.kind == "attempt":
            text = _attempt_label(s)
            tw = _text_w(text, 10)
            tx = x0 + 3 if x0 + 3 + tw <= LABEL_W + CHART_W else max(LABEL_W + 2.0, LABEL_W + CHART_W - tw)
            out.append(f'<text class="lab bar-label" x="{tx:.1f}" y="{y(r) + 13}" font-size="10">{e(text, 200)}</text>')
            if s.file_time_ms is not None and t0 <= s.file_time_ms <= t1:  # only a trusted file time is drawn
                xf = x(s.file_time_ms)
                out.append(f'<line class="filetime" x1="{xf:.1f}" y1="{y(r) + 1}" x2="{xf:.1f}" y2="{y(r) + ROW_H - 1}" stroke="#222" stroke-width="2">'
                           f'<title>{e("last file written " + (iso_utc(s.file_time_ms) or "") + " (file times are trusted)")}</title></line>')
        elif s.end_ms is not None:
            xe = x(s.end_ms)
            win = s.version in winners
            out.append(f'<line class="mark{" winner" if win else ""}" x1="{xe:.1f}" y1="{y(0) + 3}" x2="{xe:.1f}" y2="{y(0) + ROW_H - 3}" '
                       f'stroke="{"#222" if win else color}" stroke-width="{3 if win else 1.5}"><title>{e(_commit_label(s))}</title></line>')
            lab = f"v{s.version}"
            if xe + 2 > log_label_end and xe + 2 + _text_w(lab, 10) <= LABEL_W + CHART_W:
                out.append(f'<text class="lab version" x="{xe + 2:.1f}" y="{y(0) + 12}" font-size="10">{lab}</text>')
                log_label_end = xe + 2 + _text_w(lab, 10) + 4
    for ed in tl.edges:
        a, b2 = pos.get(ed.source), pos.get(ed.target)
        if a is None or b2 is None:
            continue
        dash = ' stroke-dasharray="4,3"' if ed.kind == "reorder" else ""
        col = "#444" if ed.kind != "reorder" else "#b07d00"
        out.append(f'<line x1="{a[0]:.1f}" y1="{y(a[2]) + ROW_H / 2:.1f}" x2="{b2[1]:.1f}" y2="{y(b2[2]) + ROW_H / 2:.1f}" stroke="{col}" '
                   f'stroke-width="1.2" marker-end="url(#arrow)"{dash}><title>{e(ed.kind + ": " + ed.why)}</title></line>')
    if before:
        out.append(f'<text class="lab edge-note" x="{LABEL_W}" y="{bottom + 30}" font-size="10">← {len(before)} earlier commit(s), '
                   f'{_versions(before)}, not drawn</text>')
    if after:
        out.append(f'<text class="lab edge-note" x="{LABEL_W + CHART_W}" y="{bottom + 44 if before else bottom + 30}" font-size="10" '
                   f'text-anchor="end">{len(after)} later commit(s), {_versions(after)}, not drawn →</text>')
    out.append("</svg>")
    return "".join(out)


def _versions(vs: list[int]) -> str:
    vs = sorted(vs)
    return f"v{vs[0]}" if len(vs) == 1 else f"v{vs[0]}..v{vs[-1]}"


def _legend() -> str:
    names = {"serial": "no window", "clean": "clean", "reordered": "reordered", "anomaly": "anomaly (should have aborted)",
             "skipped": "skipped (window unknown)", "aborted": "aborted attempt (inferred)"}
    return '<p class="muted">' + "".join(f'<span class="chip" style="background:{COLORS[k]}"></span>{html.escape(v)}' for k, v in names.items()) + \
        " · arrows: loser → winner; dashed: serialised before</p>"


def _table(headers: list[str], rows: list[list[Any]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    h = "".join(f"<th>{html.escape(x)}</th>" for x in headers)
    body = "".join("<tr>" + "".join(f'<td{" class=n" if i in numeric else ""}>{e(c, 400) if c is not None else ""}</td>' for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{body}</table>"


def _story(pm: Postmortem) -> str:
    """The story's lines, one paragraph each: the words `explain` leads with."""
    return ('<div class="story">' + "".join(f"<p>{e(line, 4000)}</p>" for line in pm.story) + "</div>") if pm.story else ""


def _cell(value: Any, cls: str = "") -> str:
    return f'<td{f" class={cls}" if cls else ""}>{"" if value is None else e(value, 1000)}</td>'


def _verdicts(tl: Timeline, utc: bool) -> str:
    """Every replayed commit of the range: who, what, which version it read, the verdict, the winner, the rule."""
    labels = {w.id: w.label for w in tl.writers}
    rows = [s for s in tl.commits if s.verdict != "serial"]
    serial = len(tl.commits) - len(rows)
    if not rows:
        return f"<p>No commit in this range had another commit land between its read and its commit ({serial} commit(s)).</p>"
    head = "".join(f"<th>{h}</th>" for h in ("version", "committed", "writer", "operation", "readVersion", "verdict", "winner",
                                             "rule", "how sure"))
    body = []
    for s in rows[:MAX_VERDICT_ROWS]:
        winner = (f"v{s.winning_version}" if s.verdict == "anomaly" and s.winning_version is not None
                  else ", ".join(f"v{x}" for x in s.reordered_before) + " (forgiven)" if s.reordered_before else None)
        body.append(f'<tr title="{e(s.why, 2000)}">' + _cell(f"v{s.version}", "n") + _cell(fmt_time(s.end_ms, utc))
                    + _cell(labels.get(s.writer, s.writer)) + _cell(s.operation) + _cell(s.read_version, "n")
                    + _cell(s.verdict, f"v-{s.verdict}") + _cell(winner) + _cell(verdict_rule(s)) + _cell(s.certainty) + "</tr>")
    more = len(rows) - MAX_VERDICT_ROWS
    note = f'<p class="muted">{more} more replayed commit(s): the json, csv or parquet export has every one.</p>' if more > 0 else ""
    return (f'<table class="verdicts"><tr>{head}</tr>{"".join(body)}</table>{note}'
            f'<p class="muted">{serial} other commit(s) read the version just before their own: nothing landed in between, '
            "nothing to check.</p>")


def _read(s: Span) -> str | None:
    """The read versions its candidates name: "2", "1..2"."""
    rs = [v for c in s.candidates for v in c["read_versions"]]
    if not rs:
        return None if s.read_version is None else str(s.read_version)
    return str(min(rs)) if min(rs) == max(rs) else f"{min(rs)}..{max(rs)}"


def _attribution(s: Span) -> str:
    """The winner, or "one of" with every candidate in rank order (HTML)."""
    if not s.candidates:
        return e(f"v{s.winning_version}" if s.winning_version is not None else "unknown: no candidate")
    if len(s.candidates) == 1:
        return e(s.one_of or f"v{s.winning_version}")
    items = "".join(f"<li>{e(_candidate_words(c), 600)}</li>" for c in s.candidates)
    return f'{e(s.one_of or "one of")}<ol class="ranked">{items}</ol>'


def _candidate_words(c: dict[str, Any]) -> str:
    """"v3 (ConcurrentAppendException), had it read v2 and <hypothesis>"."""
    lo, hi = c["read_versions"]
    read = str(lo) if lo == hi else f"{lo}..{hi}"
    return f"v{c['winning_version']} ({c['exception']}), had it read v{read} and {c['hypothesis']}"


def _window(s: Span, utc: bool) -> str:
    """Where the chart puts it, and from what."""
    if s.start_ms is None and s.end_ms is None:
        return "not placed: no candidate and no trusted file time"
    src = {"readVersion-commit-time": "the version read", "winner-commit-time": "the winner's commit",
           "read-range-commit-time": "the read versions", "first-file-written": "its first file", "last-file-written": "its last file"}
    took = fmt_duration(s.end_ms - s.start_ms) if s.start_ms is not None and s.end_ms is not None else "unknown"
    return (f"{fmt_time(s.start_ms, utc)} ({src.get(s.start_source, s.start_source)}), {took} to "
            f"{src.get(s.end_source, s.end_source)}")


def _attempts(tl: Timeline, utc: bool) -> str:
    """Every aborted attempt with its attribution ("one of", ranked, when ambiguous); a file time
    only where file times can be compared with commit times, and a word saying which."""
    rows = tl.attempts
    if not rows:
        return "" if tl.evidence else '<p class="muted">Aborted attempts were not looked for (no evidence collected).</p>'
    labels = {w.id: w.label for w in tl.writers}
    head = "".join(f"<th>{h}</th>" for h in ("attempt", "window (commit times)", "writer", "readVersion", "wrote", "lost to",
                                             "rule", "re-run as", "how sure", "last file written"))
    body = []
    for s in rows[:MAX_VERDICT_ROWS]:
        ft = (f"{fmt_time(s.file_time_ms, utc)} (file times are trusted)" if s.file_time_ms is not None
              else "not shown: file times are not trusted" if s.file_times.startswith("not trusted") else "unknown")
        body.append(f'<tr title="{e(s.why, 2000)}">' + _cell(s.id) + _cell(_window(s, utc)) + _cell(labels.get(s.writer, s.writer))
                    + _cell(_read(s), "n") + _cell(f"{len(s.files)} file(s) in {partitions(s.partitions) or 'unknown partitions'}")
                    + f"<td>{_attribution(s)}</td>" + _cell(verdict_rule(s))
                    + _cell(f"v{s.retry_version}" if s.retry_version is not None else None) + _cell(s.certainty)
                    + f'<td title="{e(s.file_times, 2000)}">{e(ft)}</td></tr>')
    clocks = sorted({s.file_times for s in rows if s.file_times})
    note = "".join(f'<p class="muted">File times {e(c, 2000)}</p>' for c in clocks)
    return ('<h2>Aborted attempts</h2><p class="muted">From orphan files: they never reached the log. Each is placed by its '
            "attribution, from the commit time of the version it read to its winner's commit.</p>"
            f'<table class="attempts"><tr>{head}</tr>{"".join(body)}</table>{note}')


def _advice(pm: Postmortem) -> str:
    """Each distinct change once (by its title), with the conflicts it serves, then each distinct
    detail, example and piece of evidence on a line of its own."""
    if not pm.advice:
        return "<p>No change is suggested: no conflict in this range has advice grounded in the log.</p>"
    groups: dict[str, dict[str, list[Any]]] = {}
    for a in pm.advice:
        g = groups.setdefault(a["title"], {"version": [], "serves": [], "detail": [], "example": [], "evidence": []})
        for key in g:
            vals = a.get(key) if key == "serves" else [a.get(key)]
            g[key] += [v for v in vals or [] if v not in (None, "") and v not in g[key]]
    items = []
    for title, g in groups.items():
        serves = ", ".join(g["serves"]) or ", ".join(f"v{v}" for v in g["version"])
        items.append(f'<li><b>{e(title)}</b> <span class="muted">(for {e(serves)})</span>'
                     + "".join(f"<p>{e(d, 4000)}</p>" for d in g["detail"])
                     + "".join(f"<pre>{html.escape(inert_multiline(x, 4000))}</pre>" for x in g["example"])
                     + "".join(f'<p class="muted">evidence: {e(x, 2000)}</p>' for x in g["evidence"]) + "</li>")
    return f'<ul class="advice">{"".join(items)}</ul>'


def _stats(st: dict[str, Any]) -> str:
    heads = [re.sub(r"(?<=[a-z])(?=[A-Z])", " ", k).replace("_", " ").lower() for k in st["totals"]]  # staleWindows: stale windows
    out = ["<h3>Totals</h3>", _table(heads, [list(st["totals"].values())], set(range(len(st["totals"]))))]
    out.append(f"<h3>Most contended partitions (window {e(st['window'])})</h3>")
    out.append(_table(["partition", "commits", "stale windows", "overlaps", "conflicts", "reorders", "aborted attempts"],
                      [[p["partition"], p["commits"], p["staleWindows"], p["overlaps"], p["conflicts"], p["reorders"], p["abortedAttempts"]]
                       for p in st["partitions"][:15]], {1, 2, 3, 4, 5, 6}))
    if st["files"]:
        out.append("<h3>Most contended files</h3>")
        out.append(_table(["file", "conflicts", "reorders", "aborted attempts"],
                          [[f["file"], f["conflicts"], f["reorders"], f["abortedAttempts"]] for f in st["files"][:15]], {1, 2, 3}))
    m = st["operationMatrix"]
    if m["cells"]:
        cats = m["categories"]
        cell = {(c["current"], c["winner"]): c for c in m["cells"]}
        rows = []
        for a in cats:
            r: list[Any] = [a]
            for b in cats:
                c = cell.get((a, b))
                r.append(None if c is None else f"{c['pairs']} pairs: {c['clean']} clean, {c['reordered']} reordered, "
                         f"{c['conflict']} conflict, {c['aborted']} aborted, {c['unchecked']} unchecked")
            rows.append(r)
        out.append("<h3>Operation pairs (rows: current transaction, columns: winning commit)</h3>")
        out.append(_table(["current \\ winner"] + cats, rows))
    conc = st["concurrency"]
    if conc:
        out.append("<h3>Concurrency over time (transactions whose read→commit window overlaps each bucket)</h3>")
        mx = max(1, max(c["transactions"] for c in conc))
        w = max(4, min(40, 900 // max(1, len(conc))))
        bars = []
        for i, c in enumerate(conc[:400]):
            hgt = 80 * c["transactions"] / mx
            bars.append(f'<rect x="{i * w}" y="{90 - hgt:.1f}" width="{w - 1}" height="{hgt:.1f}" fill="#4a78b5">'
                        f'<title>{e(c["startIso"])}: {c["transactions"]} transactions, max {c["maxConcurrent"]} at once, '
                        f'{c["staleWindows"]} stale windows</title></rect>')
        out.append(f'<svg width="{max(100, len(conc[:400]) * w)}" height="95">{"".join(bars)}</svg>')
    r = st["retries"]
    out.append("<h3>Retry indications</h3>")
    counters = ", ".join(f"{k} {v}" for k, v in r["metricTotals"].items()) or "no retry counter"
    out.append(f"<p>operationMetrics in {r['metricCommits']} of {st['totals']['commits']} commit(s): {e(counters)} · "
               f"repeated commits after a gap: {len(r['repeats'])} · "
               f"aborted attempts: {len(r['attempts'])}</p>")
    if r["repeats"]:
        out.append(_table(["version", "previous", "writer", "operation", "gap ms", "why"],
                          [[x["version"], x["previousVersion"], x["writer"], x["operation"], x["gapMs"], x["why"]] for x in r["repeats"][:30]], {0, 1, 4}))
    return "".join(out)


def _counterfactuals(cfs: list[dict[str, Any]]) -> str:
    if not cfs:
        return "<p>No counterfactual computed.</p>"
    out = []
    for cf in cfs:
        out.append(f"<h3>{e(cf['scenario'])}</h3>")
        out.append(f'<p class="muted">{e(cf["summary"])} ({e(cf["certainty"])})</p>')
        items = []
        for key in ("appear", "vanish", "unknown"):
            for c in cf[key]:
                what = (f"v{c['version']} {c['exception'] or 'conflict'} against v{c['winningVersion']}" if c["kind"] == "conflict"
                        else f"v{c['version']} serialised before v{c['winningVersion']}" if c["kind"] == "reorder" else f"v{c['version']}")
                items.append(f'<li class="{key}"><b>{key}</b>: {e(what)}{" [" + e(hive_partition(c["partition"])) + "]" if c.get("partition") else ""}'
                             f' <span class="muted">{e(c["why"], 600)}</span></li>')
        out.append("<ul>" + "".join(items) + "</ul>" if items else "<p>No conflict or reorder would appear or vanish.</p>")
        if cf.get("files"):
            out.append(f'<p class="muted">files placed: {cf["files"]["placed"]}, cannot be told: {cf["files"]["unknown"]}</p>')
        for n in cf.get("notes", []):
            out.append(f'<p class="muted">{e(n)}</p>')
    return "".join(out)


def html_report(tl: Timeline, postmortem: Postmortem | None = None, *, utc: bool | None = None) -> str:
    """The post-mortem of `tl`; without a `postmortem`, one told from the timeline alone."""
    utc = utc_default() if utc is None else utc
    pm = postmortem if postmortem is not None else build_postmortem(tl, utc=utc)
    now = fmt_time(int(_dt.datetime.now(_dt.timezone.utc).timestamp() * 1000), utc)
    parts = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>delta-forensics post-mortem: {e(tl.table, 200)}</title><style>{CSS}</style></head><body>",
        f"<h1>Concurrency post-mortem: {e(tl.table, 500)}</h1>",
        _story(pm),
        _attempts(tl, utc),
        f'<p class="muted">versions {tl.from_version}..{tl.to_version} · {len(tl.commits)} commits · {len(tl.attempts)} aborted attempts · '
        f"rules {e(tl.rules or 'of the engine that wrote each commit')} · generated {e(now)} by delta-forensics "
        f"(timeline schema {tl.schema_version})</p>",
        "<h2>Timeline</h2>",
        _legend(),
        f'<div class="chart" style="overflow-x:auto">{timeline_svg(tl)}</div>',
        "<h2>Verdicts</h2>",
        _verdicts(tl, utc),
        "<h2>What to change</h2>",
        _advice(pm),
    ]
    if pm.stats is not None:
        parts += ["<h2>Statistics</h2>", _stats(pm.stats)]
    parts += ["<h2>Counterfactuals</h2>", _counterfactuals(pm.counterfactuals)]
    parts += ["<h2>Mermaid source</h2>", f"<details><summary>sequence diagram (paste into Markdown)</summary><pre>{html.escape(mermaid(tl))}</pre></details>"]
    for n in tl.notes:
        parts.append(f'<p class="muted">{e(n)}</p>')
    parts.append("</body></html>\n")
    return "".join(parts)


def write_html(tl: Timeline, path: Path, postmortem: Postmortem | None = None, *, utc: bool | None = None) -> list[Path]:
    path.write_text(html_report(tl, postmortem, utc=utc), encoding="utf-8")
    return [path]
