"""The version list: a Line-API ScrollView that renders only the rows on screen.

A DataTable holds a Python object per cell and lays out every row; at 100k+ versions that is
seconds of work and memory for rows nobody sees. Here a row is built from a few list lookups
when it scrolls into view, so opening and scrolling cost the same at 20 or 1,000,000 versions.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from forensics import safe
from tui.data import Rows, fmt_time, local_offset

BADGE = {"clean": ("✓ clean", "green"), "reordered": ("↺ reordered", "yellow"), "anomaly": ("✗ anomaly", "bold red"), "skipped": ("· skipped", "dim")}
ISO_SHORT = {"Serializable": "Serializable", "WriteSerializable": "WriteSerial.", "SnapshotIsolation": "Snapshot"}


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    width: int
    right: bool = False
    priority: int = 0  # lower = dropped last when the list is narrow


COLUMNS = (
    Column("version", "version", 8, True, 0),
    Column("time", "time", 20, False, 1),
    Column("operation", "operation", 18, False, 0),
    Column("read", "readVer", 8, True, 0),
    Column("isolation", "isolation", 12, False, 3),
    Column("blind", "blind", 5, False, 4),
    Column("adds", "+add", 6, True, 2),
    Column("removes", "-rm", 6, True, 2),
    Column("verdict", "verdict", 16, False, 0),
)


class VersionList(ScrollView, can_focus=True):
    """Every retained version, one line each; `j`/`k` move, `g`/`G` jump to the ends."""

    HELP = (
        "Version list: one line per retained version.\n"
        "readVersion is yellow when it is stale (readVersion < version-1: a concurrency window).\n"
        "The verdict column shows the replay's verdict and the window size (w = versions in the window)."
    )
    BINDINGS = [
        Binding("j,down", "cursor(1)", "down", show=False),
        Binding("k,up", "cursor(-1)", "up", show=False),
        Binding("pagedown,ctrl+f", "page(1)", "page down", show=False),
        Binding("pageup,ctrl+b", "page(-1)", "page up", show=False),
        Binding("g,home", "first", "top", show=False),
        Binding("G,end", "last", "bottom", show=False),
    ]
    COMPONENT_CLASSES = {"version-list--header", "version-list--cursor", "version-list--cursor-blur", "version-list--stale"}
    DEFAULT_CSS = """
    VersionList { background: $surface; }
    VersionList > .version-list--header { text-style: bold; background: $panel; }
    VersionList > .version-list--cursor { background: $accent 60%; text-style: bold; }
    VersionList > .version-list--cursor-blur { background: $accent 25%; }
    VersionList > .version-list--stale { color: $warning; }
    """

    cursor: reactive[int] = reactive(0, always_update=False)
    utc: reactive[bool] = reactive(False)

    class Highlighted(Message):
        """The cursor moved to another version."""

        def __init__(self, version: int | None) -> None:
            self.version = version
            super().__init__()

    def __init__(self, rows: Rows | None = None, *, utc: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows = rows
        self.replay_pending = False
        self.set_reactive(VersionList.utc, utc)

    # ---- data --------------------------------------------------------------------------

    def set_rows(self, rows: Rows, keep_version: int | None = None) -> None:
        self.rows = rows
        self.refresh_rows(keep_version)

    def refresh_rows(self, keep_version: int | None = None) -> None:
        """Call after the rows' filter or verdicts changed."""
        n = len(self.rows) if self.rows else 0
        self.virtual_size = Size(self.size.width, n + 1)
        target = 0
        if keep_version is not None and self.rows is not None:
            r = self.rows.row_of_version(keep_version)
            target = r if r is not None else 0
        self.set_reactive(VersionList.cursor, min(target, max(n - 1, 0)) if n else 0)
        self.post_message(self.Highlighted(self.current_version))
        self.refresh()
        self.call_after_refresh(self._scroll_cursor_into_view)

    @property
    def current_version(self) -> int | None:
        if not self.rows or not len(self.rows) or not 0 <= self.cursor < len(self.rows):
            return None
        return self.rows.version[self.rows.visible[self.cursor]]

    def select_version(self, version: int) -> bool:
        if not self.rows:
            return False
        r = self.rows.row_of_version(version)
        if r is None:
            return False
        self.cursor = r
        return True

    # ---- keys ----------------------------------------------------------------------------

    @property
    def _body_height(self) -> int:
        return max(self.size.height - 1, 1)

    def action_cursor(self, delta: int) -> None:
        self._move(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self._move(self.cursor + direction * self._body_height)

    def action_first(self) -> None:
        self._move(0)

    def action_last(self) -> None:
        self._move((len(self.rows) if self.rows else 1) - 1)

    def _move(self, row: int) -> None:
        n = len(self.rows) if self.rows else 0
        if n:
            self.cursor = max(0, min(row, n - 1))

    def watch_cursor(self, old: int, new: int) -> None:
        self._scroll_cursor_into_view()
        self._refresh_line(old)
        self._refresh_line(new)
        if new >= 0:
            self.post_message(self.Highlighted(self.current_version))

    def watch_utc(self) -> None:
        self.refresh()

    def _refresh_line(self, row: int) -> None:
        y = row - int(self.scroll_y) + 1
        if 1 <= y < self.size.height:
            self.refresh_line(y)

    def _scroll_cursor_into_view(self) -> None:
        top = int(self.scroll_y)
        body = self._body_height
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + body:
            self.scroll_to(y=self.cursor - body + 1, animate=False, immediate=True)

    def on_click(self, event) -> None:
        y = event.get_content_offset(self)
        if y is None:
            return
        if y.y >= 1:
            self.focus()
            self._move(int(self.scroll_y) + y.y - 1)

    def on_resize(self) -> None:
        n = len(self.rows) if self.rows else 0
        self.virtual_size = Size(self.size.width, n + 1)

    # ---- rendering -------------------------------------------------------------------------

    def columns_for(self, width: int) -> list[Column]:
        """The columns that fit, dropping the highest priority numbers first."""
        cols = list(COLUMNS)
        while sum(c.width + 1 for c in cols) > width and any(c.priority for c in cols):
            worst = max(c.priority for c in cols)
            cols = [c for c in cols if c.priority != worst]
        return cols

    def header_text(self, width: int) -> str:
        tz = "UTC" if self.utc else f"local {local_offset()}"
        parts = []
        for c in self.columns_for(width):
            title = f"time ({tz})" if c.key == "time" else c.title
            parts.append(_fit(title, c.width, c.right))
        return " ".join(parts)

    def cells(self, i: int) -> list[tuple[str, str]]:
        """(text, rich style) per column for column index `i` (all log text made inert)."""
        rows = self.rows
        assert rows is not None
        stale = rows.window_size(i)
        rv = rows.read_version[i]
        blind = rows.blind[i]
        iso = rows.isolation[i]
        vi = rows.verdict_of(i)
        if vi is not None:
            label, style = BADGE.get(vi.verdict, (safe.inert(vi.verdict, 12), ""))
            badge = label + (f" w{stale}" if stale else "")
        elif stale:
            badge, style = (f"w{stale}" + (" …" if self.replay_pending else "")), "yellow"
        else:
            badge, style = "", ""
        out = {
            "version": (str(rows.version[i]), "bold"),
            "time": (fmt_time(rows.timestamp[i], self.utc), ""),
            "operation": (safe.inert(rows.operation[i] or "—", 60), ""),
            "read": ("" if rv is None else str(rv), "yellow" if stale else ""),
            "isolation": (safe.inert(ISO_SHORT.get(iso or "", iso or ""), 30), "dim" if not iso else ""),
            "blind": ("" if blind is None else ("yes" if blind else "no"), ""),
            "adds": (str(rows.adds[i]), "green" if rows.adds[i] else "dim"),
            "removes": (str(rows.removes[i]), "red" if rows.removes[i] else "dim"),
            "verdict": (badge, style),
        }
        return [out[c.key] for c in self.columns_for(self.size.width or 200)]

    def row_text(self, row: int) -> str:
        """The plain text of a display row (used by tests and export)."""
        assert self.rows is not None
        cols = self.columns_for(self.size.width or 200)
        return " ".join(_fit(t, c.width, c.right) for (t, _), c in zip(self.cells(self.rows.visible[row]), cols))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        if y == 0:
            hs = self.get_component_rich_style("version-list--header")
            return Strip([Segment(_fit(self.header_text(width), width), base + hs)])
        rows = self.rows
        row = int(self.scroll_y) + y - 1
        if rows is None or row >= len(rows):
            if rows is None and y == 2:
                return Strip([Segment(_fit("  loading versions…", width), base + Style(dim=True))])
            if rows is not None and not len(rows) and y == 2:
                return Strip([Segment(_fit("  no version matches the filter (Esc clears it)", width), base + Style(dim=True))])
            return Strip([Segment(" " * width, base)])
        i = rows.visible[row]
        line_style = base
        if row == self.cursor:
            line_style = base + self.get_component_rich_style("version-list--cursor" if self.has_focus else "version-list--cursor-blur")
        segs: list[Segment] = []
        used = 0
        for (text, style), col in zip(self.cells(i), self.columns_for(width)):
            cell = _fit(text, col.width, col.right)
            segs.append(Segment(cell, line_style + Style.parse(style) if style else line_style))
            segs.append(Segment(" ", line_style))
            used += col.width + 1
        if used < width:
            segs.append(Segment(" " * (width - used), line_style))
        return Strip(segs).crop(0, width)

    def on_focus(self) -> None:
        self._refresh_line(self.cursor)

    def on_blur(self) -> None:
        self._refresh_line(self.cursor)


def _fit(text: str, width: int, right: bool = False) -> str:
    if cell_len(text) > width:
        return set_cell_size(text, width - 1) + "…" if width > 1 else set_cell_size(text, width)
    pad = width - cell_len(text)
    return (" " * pad + text) if right else (text + " " * pad)
