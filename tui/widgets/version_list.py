"""The version list: a Line-API ScrollView that renders only the rows on screen, and its keys.

A DataTable holds a Python object per cell and lays out every row; at 100k+ versions that is
seconds of work and memory for rows nobody sees. Here a row is built from a few list lookups
when it scrolls into view, so opening and scrolling cost the same at 20 or 1,000,000 versions.

The list owns what acts on it: moving, `/` search, `:` jump, filters, `w` to the winning commit,
Esc back along jumps; and the replay of every concurrency window that fills its verdict column.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual import work
from textual.binding import Binding
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import get_current_worker

from forensics import Table, error_line, safe
from tui.data import Rows, VerdictInfo
from tui.messages import (
    ListFiltered,
    ReplayDone,
    ReplayStarted,
    RowsReady,
    SearchChanged,
    ShowView,
    VersionHighlighted,
)
from tui.prompt import PromptScreen
from tui.widgets.version_columns import cells, columns_for, fit, header_text

VERDICT_CYCLE = (None, "window", "anomaly", "reordered", "clean", "skipped")
VERDICTS = ("clean", "reordered", "anomaly", "skipped", "window")
VIEWS = {"timeline": "timeline", "matrix": "matrix", "whatif": "whatif", "what-if": "whatif"}


class VersionList(ScrollView, can_focus=True):
    """Every retained version, one line each; `j`/`k` move, `g`/`G` jump to the ends."""

    HELP = (
        "Version list: one line per retained version.\n"
        "readVersion is yellow when it is stale (readVersion < version-1: a concurrency window).\n"
        "The verdict column shows the replay's verdict and the window size (w = versions in the window)."
    )
    BINDINGS = [
        Binding("slash", "search", "search"),
        Binding("colon", "jump", "jump"),
        Binding("f", "filter", "filter"),
        Binding("w", "winner", "winner"),
        Binding("n", "search_next", "next match", show=False),
        Binding("N", "search_prev", "prev match", show=False),
        Binding("v", "cycle_verdict", "verdict filter", show=False),
        Binding("escape", "back", "back", show=False),
        Binding("j,down", "cursor(1)", "down", show=False),
        Binding("k,up", "cursor(-1)", "up", show=False),
        Binding("pagedown,ctrl+f", "page(1)", "page down", show=False),
        Binding("pageup,ctrl+b", "page(-1)", "page up", show=False),
        Binding("g,home", "first", "top", show=False),
        Binding("G,end", "last", "bottom", show=False),
    ]
    #: Keys that also work while a side pane has focus: the main screen hands them over.
    REACH = ("slash", "colon", "f", "w", "n", "N", "v", "escape")
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

    def __init__(self, *, utc: bool = False, replay: bool = True, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: Rows | None = None
        self.replay = replay
        self.replay_pending = False
        self.replayed = False
        self.search_term = ""
        self.jump_stack: list[int] = []
        self.winners: dict[int, int] = {}  # version -> winning version, from the explain narrative
        self.set_reactive(VersionList.utc, utc)

    # ---- the table's versions and their verdicts ------------------------------------------------

    def load(self, table: Table) -> None:
        """Show `table`, the cursor on its newest version; then replay its windows."""
        self.replayed = False
        self.winners.clear()
        self.build_rows(table)

    def show_listing(self, rows: Rows) -> None:
        """The listed versions (provisional: time and number only) until `load` replaces them; a
        second listing (the names, then with their times) keeps the cursor where the user put it."""
        keep = self.current_version if self.rows is not None and self.rows.provisional else None
        self.rows = rows
        last = rows.version[-1] if rows.version else None
        self.refresh_rows(keep if keep is not None else last)
        self.post_message(RowsReady(rows.version[0] if rows.version else None, last, len(rows.version)))

    @work(thread=True, exclusive=True, group="rows")
    def build_rows(self, table: Table) -> None:
        rows = Rows.from_table(table)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._rows_built, table, rows)

    def _rows_built(self, table: Table, rows: Rows) -> None:
        keep = self.current_version if self.rows is not None and self.rows.provisional else None
        self.rows = rows
        self.replay_pending = self.replay
        first, last = (rows.version[0], rows.version[-1]) if rows.version else (None, None)
        self.refresh_rows(keep if keep is not None else last)
        self.post_message(RowsReady(first, last, len(rows.version)))
        if self.replay:
            self.post_message(ReplayStarted())
            self.run_replay(table)

    @work(thread=True, exclusive=True, group="replay")
    def run_replay(self, table: Table) -> None:
        """Every concurrency window through the rules; the list works without it meanwhile."""
        try:
            report, state = table.replay_report(), "done"
        except Exception as e:  # noqa: BLE001 - a ForensicsError as documented, anything else with its type
            report, state = None, f"replay failed: {error_line(e)}"
        if not get_current_worker().is_cancelled:
            self.post_message(ReplayDone(report, state))

    def on_replay_done(self, event: ReplayDone) -> None:
        """Fill the verdict column, then let the screen update the header and the panes."""
        self.replay_pending = False
        self.replayed = event.report is not None
        if event.report is not None and self.rows is not None:
            self.rows.verdicts = {v: VerdictInfo.of(cv) for v, cv in event.report.verdicts.items()}
            if self.rows.verdict_filter:
                self.rows.set_filter()
                self.refresh_rows(self.current_version)
        self.refresh()

    @classmethod
    def reach_action(cls, key: str) -> str | None:
        """The action of `key` when it is one of the keys that work from the side panes too."""
        if key not in cls.REACH:
            return None
        return next(b.action for b in cls.BINDINGS if isinstance(b, Binding) and key in b.key.split(","))

    def note_winner(self, version: int, winner: int | None) -> None:
        """The explain narrative named the commit that won against `version` (`w` prefers it)."""
        if winner is not None:
            self.winners[version] = winner

    # ---- rows on screen --------------------------------------------------------------------------

    def refresh_rows(self, keep_version: int | None = None) -> None:
        """Call after the rows' filter or verdicts changed."""
        n = len(self.rows) if self.rows else 0
        self.virtual_size = Size(self.size.width, n + 1)
        target = 0
        if keep_version is not None and self.rows is not None:
            r = self.rows.row_of_version(keep_version)
            target = r if r is not None else 0
        self.set_reactive(VersionList.cursor, min(target, max(n - 1, 0)) if n else 0)
        self.post_message(VersionHighlighted(self.current_version))
        self.refresh()
        self.call_after_refresh(self._scroll_cursor_into_view)

    @property
    def current_version(self) -> int | None:
        if not self.rows or not len(self.rows) or not 0 <= self.cursor < len(self.rows):
            return None
        return self.rows.version[self.rows.visible[self.cursor]]

    def select_version(self, version: int) -> bool:
        r = self.rows.row_of_version(version) if self.rows else None
        if r is None:
            return False
        self.cursor = r
        return True

    # ---- moving ----------------------------------------------------------------------------------

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
            self.post_message(VersionHighlighted(self.current_version))

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
        if y is not None and y.y >= 1:
            self.focus()
            self._move(int(self.scroll_y) + y.y - 1)

    def on_resize(self) -> None:
        n = len(self.rows) if self.rows else 0
        self.virtual_size = Size(self.size.width, n + 1)

    def on_focus(self) -> None:
        self._refresh_line(self.cursor)

    def on_blur(self) -> None:
        self._refresh_line(self.cursor)

    # ---- jump, search, filter, winner, back ------------------------------------------------------

    def jump_to(self, version: int, remember: bool = True) -> bool:
        """Select `version` (clearing a filter that hides it); Esc comes back when `remember`."""
        rows = self.rows
        if rows is None:
            return False
        if rows.index_of(version) is None:
            self.notify(f"version {version} is not in the retained log", severity="warning")
            return False
        cur = self.current_version
        if rows.row_of_version(version) is None:
            self.set_filter(None, None)
            self.notify("filter cleared to show the version")
        if remember and cur is not None and cur != version:
            self.jump_stack.append(cur)
        self.select_version(version)
        self.focus()
        return True

    def action_jump(self) -> None:
        def done(value: str | None) -> None:
            if not value or self.rows is None:
                return
            word = value.strip().lower().lstrip(":")
            if word in VIEWS:
                self.post_message(ShowView(VIEWS[word]))
                return
            if word in ("conflicts", "windows"):
                self.set_filter(..., "anomaly" if word == "conflicts" else "window")
                return
            if word.startswith("txn "):
                value = value.strip()[4:]
            i = self.rows.resolve(value)
            if i is None:
                self.notify(f"no version or txnId matches {safe.inert(value, 60)!r}", severity="warning", markup=False)
                return
            self.jump_to(self.rows.version[i])

        self.app.push_screen(PromptScreen(":  version number, v123, txnId (prefix), or timeline / matrix / whatif / conflicts", placeholder="123"), done)

    def action_search(self) -> None:
        def done(value: str | None) -> None:
            if value is None:
                return
            self._set_search(value)
            if value:
                self._search(True, from_current=True)

        self.app.push_screen(PromptScreen("/  search version, operation, txnId, user, engine, parameters (n / N for next / previous)", self.search_term), done)

    def _set_search(self, term: str) -> None:
        self.search_term = term
        self.post_message(SearchChanged(term))

    def _search(self, forward: bool, from_current: bool = False) -> None:
        if not self.search_term or self.rows is None:
            return
        start = self.cursor - 1 if from_current and forward else self.cursor
        row = self.rows.search(self.search_term, start, forward)
        if row is None:
            self.notify(f"no match for {safe.inert(self.search_term, 40)!r}", severity="warning", markup=False)
            return
        self.cursor = row

    def action_search_next(self) -> None:
        self._search(True)

    def action_search_prev(self) -> None:
        self._search(False)

    def set_filter(self, operation: str | None = ..., verdict: str | None = ...) -> None:  # type: ignore[assignment]
        """Show only `operation` and/or `verdict` (`...` keeps that half of the filter as it is)."""
        if self.rows is None:
            return
        keep = self.current_version
        self.rows.set_filter(operation, verdict)
        self.refresh_rows(keep)
        self.post_message(ListFiltered(self.rows.filter_label(), len(self.rows), len(self.rows.version)))
        if verdict not in (None, ..., "window") and not self.replayed:
            self.notify("no replay verdicts yet: the verdict filter fills in when the replay finishes", severity="warning")

    def action_filter(self) -> None:
        def done(value: str | None) -> None:
            if value is None or self.rows is None:
                return
            v = value.strip()
            if not v:
                self.set_filter(None, None)
            elif v.lower() in VERDICTS:
                self.set_filter(..., v.lower())
            elif v.upper() in ops:
                self.set_filter(ops[v.upper()], ...)
            else:
                known = ", ".join(list(ops.values())[:12])
                self.notify(f"no operation {safe.inert(v, 40)!r}; known: {safe.inert(known, 300)}", severity="warning", markup=False)

        ops = {o.upper(): o for o in self.rows.operations()} if self.rows else {}
        shown = ", ".join(list(ops.values())[:8])
        self.app.push_screen(PromptScreen(f"filter: an operation ({safe.inert(shown, 120)}) or a verdict (clean, reordered, anomaly, skipped, window); empty clears"), done)

    def action_cycle_verdict(self) -> None:
        if self.rows is None:
            return
        cur = self.rows.verdict_filter
        self.set_filter(..., VERDICT_CYCLE[(VERDICT_CYCLE.index(cur) + 1) % len(VERDICT_CYCLE)] if cur in VERDICT_CYCLE else None)

    def winner_of(self, version: int) -> int | None:
        """The commit that beat (or was reordered around) `version`: the narrative's, else the replay's."""
        if version in self.winners:
            return self.winners[version]
        vi = self.rows.verdicts.get(version) if self.rows else None
        if vi is None:
            return None
        if vi.winning_version is not None:
            return vi.winning_version
        return vi.reordered_before[0] if vi.reordered_before else None

    def action_winner(self) -> None:
        v = self.current_version
        if v is None:
            return
        w = self.winner_of(v)
        if w is None:
            why = "replay still running" if self.replay_pending else "no winning commit recorded for this version"
            self.notify(f"version {v}: {why}", severity="warning")
        elif self.jump_to(w):
            self.notify(f"winner of version {v}: version {w} (Esc goes back)")

    @property
    def narrowed(self) -> bool:
        """Whether a search or a filter is on (Esc clears those before anything else)."""
        return bool(self.search_term) or (self.rows is not None and bool(self.rows.op_filter or self.rows.verdict_filter))

    def action_back(self) -> None:
        """Esc: clear the search, then the filter, then go back along jumps."""
        if self.search_term:
            self._set_search("")
        elif self.rows is not None and (self.rows.op_filter or self.rows.verdict_filter):
            self.set_filter(None, None)
        elif self.jump_stack:
            self.jump_to(self.jump_stack.pop(), remember=False)

    # ---- rendering -------------------------------------------------------------------------------

    def header_text(self, width: int) -> str:
        return header_text(width, self.utc)

    def cells(self, i: int) -> list[tuple[str, str]]:
        assert self.rows is not None
        return cells(self.rows, i, self.size.width or 200, utc=self.utc, replay_pending=self.replay_pending)

    def row_text(self, row: int) -> str:
        """The plain text of a display row (what tests read)."""
        assert self.rows is not None
        cols = columns_for(self.size.width or 200)
        return " ".join(fit(t, c.width, c.right) for (t, _), c in zip(self.cells(self.rows.visible[row]), cols))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        if y == 0:
            hs = self.get_component_rich_style("version-list--header")
            return Strip([Segment(fit(self.header_text(width), width), base + hs)])
        rows = self.rows
        row = int(self.scroll_y) + y - 1
        if rows is None or row >= len(rows):
            if rows is None and y == 2:
                return Strip([Segment(fit("  loading versions…", width), base + Style(dim=True))])
            if rows is not None and not len(rows) and y == 2:
                return Strip([Segment(fit("  no version matches the filter (Esc clears it)", width), base + Style(dim=True))])
            return Strip([Segment(" " * width, base)])
        line_style = base
        if row == self.cursor:
            line_style = base + self.get_component_rich_style("version-list--cursor" if self.has_focus else "version-list--cursor-blur")
        segs: list[Segment] = []
        used = 0
        for (text, style), col in zip(self.cells(rows.visible[row]), columns_for(width)):
            segs.append(Segment(fit(text, col.width, col.right), line_style + Style.parse(style) if style else line_style))
            segs.append(Segment(" ", line_style))
            used += col.width + 1
        if used < width:
            segs.append(Segment(" " * (width - used), line_style))
        return Strip(segs).crop(0, width)
