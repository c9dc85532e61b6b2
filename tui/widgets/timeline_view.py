"""The timeline view: each concurrency window as a bar from readVersion to the version it landed at.

Conflicts (anomalies: the rules say a winner should have aborted it) are marked ✗ at the
winner, WriteSerializable reorders ↺ at the blind appends it was serialized before, and
aborted attempts from evidence (orphan files, error texts) get their own bars, placed by their
attribution (read version to winner; file times only where they can be trusted).
A Line-API ScrollView: only the bars on screen are drawn.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from forensics import safe
from tui.data import Rows
from tui.messages import JumpTo

LABEL_W = 30
VERDICT_STYLE = {"clean": "green", "reordered": "yellow", "anomaly": "bold red", "skipped": "dim", "aborted": "red", None: "cyan"}


@dataclass
class Bar:
    kind: str  # "commit" | "attempt"
    lo: int  # readVersion (or the last version before the attempt started)
    hi: int  # the version it landed at (or the last version before it was last seen)
    label: str
    version: int | None = None
    verdict: str | None = None
    marks: dict[int, tuple[str, str]] = field(default_factory=dict)  # version -> (char, style)
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def target(self) -> int | None:
        """The version Enter opens: the commit, or an aborted attempt's most likely winner (✗)."""
        if self.version is not None:
            return self.version
        return next((v for v, (ch, _) in self.marks.items() if ch == "✗"), None)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "version": self.version, "readVersion": self.lo, "end": self.hi, "verdict": self.verdict,
                "marks": {str(k): v[0] for k, v in self.marks.items()}, **self.detail}


def build_bars(rows: Rows, attempts: list[Any] | None = None, all_commits: bool = False,
               file_times_trusted: bool = False) -> list[Bar]:
    """Bars for windows (readVersion < version-1), or every commit with a readVersion; then the
    aborted attempts, each placed by its attribution."""
    bars: list[Bar] = []
    for i, v in enumerate(rows.version):
        r = rows.read_version[i]
        w = rows.window_size(i)
        if r is None or (not w and not all_commits):
            continue
        vi = rows.verdicts.get(v)
        marks: dict[int, tuple[str, str]] = {}
        if vi is not None:
            if vi.verdict == "anomaly" and vi.winning_version is not None:
                marks[vi.winning_version] = ("✗", "bold red")
            for b in vi.reordered_before:
                marks[b] = ("↺", "bold yellow")
        bars.append(
            Bar("commit", r, v, f"v{v} {safe.inert(rows.operation[i] or '—', 18)}", v, vi.verdict if vi else None, marks,
                {"exception": vi.exception if vi else None, "winningVersion": vi.winning_version if vi else None})
        )
    for a in attempts or []:
        bars.append(attempt_bar(rows, a, file_times_trusted))
    bars.sort(key=lambda b: (b.hi, b.kind != "commit", b.lo))
    return bars


def attempt_bar(rows: Rows, a: Any, file_times_trusted: bool = False) -> Bar:
    """An aborted attempt placed by its attribution: from the version its candidates read to the
    winners they name (an ambiguous one across all, "one of"); without a candidate, by its file
    times only when those can be compared with commit times."""
    cands = list(getattr(a, "candidates", []) or [])
    first, last = getattr(a, "first_seen", None), getattr(a, "last_seen", None)
    exc = getattr(a, "likely_exception", None)
    parts = getattr(a, "partitions", None) or []
    detail: dict[str, Any] = {"exception": exc, "partitions": parts}
    if cands:
        rv = min(c.read_versions[1] for c in cands)
        winners = list(dict.fromkeys(c.winning_version for c in cands))
        hi = max(max(winners), rv)
        marks = {winners[0]: ("✗", "bold red")}  # the most likely winner; the bar spans the others
        what = "one of " + ", ".join(f"v{w}" for w in winners) if len(winners) > 1 else safe.inert(exc or "", 16)
        detail["candidates"] = [c.to_dict() for c in cands]
        return Bar("attempt", rv, hi, f"✗ attempt {what}".rstrip(), None, "aborted", marks, detail)
    rv = getattr(a, "read_version", None)
    hi = getattr(a, "winning_version", None)
    if file_times_trusted and (rv is None or hi is None):
        ts = [t if t is not None else 0 for t in rows.timestamp]
        if rv is None:
            rv = rows.version[max(bisect.bisect_right(ts, first or 0) - 1, 0)] if rows.version else 0
        if hi is None:
            hi = rows.version[min(bisect.bisect_left(ts, last or first or 0), len(rows.version) - 1)] if rows.version else rv
        detail.update(firstSeen=first, lastSeen=last)  # trusted: they say when it wrote
    rng = getattr(getattr(a, "attribution", None), "read_versions", None)
    if rv is None:
        rv = rng[0] if rng else (rows.version[0] if rows.version else 0)
    if hi is None:
        hi = min(rng[1], rows.version[-1]) if rng and rows.version else rv
    return Bar("attempt", rv, max(hi, rv), f"✗ attempt {safe.inert(exc or '', 16)}".rstrip(), None, "aborted", {}, detail)


class TimelineView(ScrollView, can_focus=True):
    """One bar per window; j/k select, Enter opens the version, +/- zoom, h/l pan, 0 resets."""

    HELP = "Timeline: bars from readVersion (├) to the version the commit landed at (●).\n✗ marks the winner of a conflict, ↺ a blind append the commit was reordered before,\nred bars are aborted attempts found as evidence. +/- zoom, h/l pan, 0 resets, Enter opens the version."
    BINDINGS = [
        Binding("j,down", "move(1)", "down", show=False),
        Binding("k,up", "move(-1)", "up", show=False),
        Binding("g,home", "move(-1000000000)", "top", show=False),
        Binding("G,end", "move(1000000000)", "bottom", show=False),
        Binding("plus,equals_sign", "zoom(0.5)", "zoom in"),
        Binding("minus", "zoom(2)", "zoom out"),
        Binding("h,left", "pan(-1)", "pan", show=False),
        Binding("l,right", "pan(1)", "pan", show=False),
        Binding("0", "reset", "reset zoom"),
        Binding("enter", "open", "open version"),
    ]
    cursor: reactive[int] = reactive(0)

    def __init__(self, bars: list[Bar], id: str | None = None) -> None:
        super().__init__(id=id)
        self.bars = bars
        self.reset_axis()

    def set_bars(self, bars: list[Bar]) -> None:
        """Show other bars (all commits, or with aborted attempts), from the top, axis reset."""
        self.bars = bars
        self.cursor = 0
        self.reset_axis()
        self.virtual_size = Size(self.size.width, len(bars) + 1)
        self.refresh()

    def reset_axis(self) -> None:
        if self.bars:
            self.a0 = min(b.lo for b in self.bars)
            self.a1 = max(b.hi for b in self.bars)
        else:
            self.a0, self.a1 = 0, 1

    def on_mount(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.bars) + 1)

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.bars) + 1)

    def action_move(self, d: int) -> None:
        if self.bars:
            self.cursor = max(0, min(self.cursor + d, len(self.bars) - 1))

    def watch_cursor(self, old: int, new: int) -> None:
        body = max(self.size.height - 1, 1)
        top = int(self.scroll_y)
        if new < top:
            self.scroll_to(y=new, animate=False, immediate=True)
        elif new >= top + body:
            self.scroll_to(y=new - body + 1, animate=False, immediate=True)
        self.refresh()

    def action_zoom(self, factor: float) -> None:
        if not self.bars:
            return
        b = self.bars[self.cursor]
        center = (b.lo + b.hi) / 2
        span = max((self.a1 - self.a0) * factor, 2)
        self.a0 = int(center - span / 2)
        self.a1 = int(center + span / 2) + 1
        self.refresh()

    def action_pan(self, d: int) -> None:
        step = max((self.a1 - self.a0) // 4, 1) * d
        self.a0 += step
        self.a1 += step
        self.refresh()

    def action_reset(self) -> None:
        self.reset_axis()
        self.refresh()

    def action_open(self) -> None:
        if self.bars:
            self.post_message(JumpTo(self.bars[self.cursor].target))

    @property
    def selected(self) -> Bar | None:
        return self.bars[self.cursor] if self.bars else None

    def _x(self, v: float, w: int) -> int:
        return round((v - self.a0) / max(self.a1 - self.a0, 1) * (w - 1))

    def bar_text(self, idx: int, width: int | None = None) -> str:
        return "".join(s.text for s in self._bar_segments(self.bars[idx], width or self.size.width or 120, Style()))

    def _bar_segments(self, b: Bar, width: int, base: Style) -> list[Segment]:
        w = max(width - LABEL_W - 1, 10)
        cells = [(" ", base)] * w
        st = base + Style.parse(VERDICT_STYLE.get(b.verdict, "cyan"))
        x0, x1 = self._x(b.lo, w), self._x(b.hi, w)
        fill = "┄" if b.kind == "attempt" else "─"
        for x in range(max(x0, 0), min(x1, w - 1) + 1):
            cells[x] = (fill, st)
        if 0 <= x0 < w:
            cells[x0] = ("├", st)
        if 0 <= x1 < w:
            cells[x1] = ("✗" if b.kind == "attempt" else "●", st)
        for v, (ch, style) in b.marks.items():
            x = self._x(v, w)
            if 0 <= x < w:
                cells[x] = (ch, base + Style.parse(style))
        label = b.label[: LABEL_W - 1].ljust(LABEL_W)
        segs = [Segment(label + " ", base + (Style(color="red") if b.kind == "attempt" else Style()))]
        segs += [Segment(ch, s) for ch, s in cells]
        return segs

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        if y == 0:
            w = max(width - LABEL_W - 1, 10)
            ruler = [" "] * w
            for v in (self.a0, (self.a0 + self.a1) // 2, self.a1):
                t = f"v{v}"
                x = min(max(self._x(v, w) - len(t) // 2, 0), w - len(t))
                ruler[x : x + len(t)] = list(t)
            head = f"{len(self.bars)} bar(s)".ljust(LABEL_W) + " " + "".join(ruler)
            return Strip([Segment(head.ljust(width)[:width], base + Style(bold=True, underline=True))])
        i = int(self.scroll_y) + y - 1
        if i >= len(self.bars):
            if not self.bars and y == 2:
                return Strip([Segment("  no concurrency windows: every commit read the version just before it".ljust(width)[:width], base + Style(dim=True))])
            return Strip([Segment(" " * width, base)])
        row_base = base + (Style(reverse=True) if i == self.cursor and self.has_focus else Style(bgcolor="grey23") if i == self.cursor else Style())
        return Strip(self._bar_segments(self.bars[i], width, row_base)).crop(0, width).extend_cell_length(width, row_base)
