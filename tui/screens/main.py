"""The root screen: header, version list, detail/explain panes, footer.

It holds the widgets and hands facts from one to another (the toolong way: children post
messages up, the screen that holds them tells the others). Its own keys open the views of the
table (timeline, matrix, what-if), switch and zoom panes, and toggle UTC.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widgets import Footer, TabbedContent, TabPane

from forensics import Table, safe
from tui.messages import (
    ExplainDone,
    JumpTo,
    ListFiltered,
    ListingReady,
    LoadState,
    Reload,
    ReplayDone,
    ReplayStarted,
    RowsReady,
    SearchChanged,
    ShowView,
    TableFailed,
    TableLoaded,
    VersionHighlighted,
)
from tui.screens.view import ViewScreen
from tui.widgets.detail import DetailPane
from tui.widgets.explain import ExplainPane
from tui.widgets.header import TableHeader
from tui.widgets.version_list import VersionList

DETAIL_DEBOUNCE = 0.05


class MainScreen(ViewScreen):
    """Every version of one table, and the selected one in detail or explained."""

    BINDINGS = [
        Binding("q", "app.quit", "quit"),
        Binding("t", "timeline", "timeline"),
        Binding("m", "matrix", "matrix"),
        Binding("W", "whatif", "what-if"),
        Binding("e", "show_tab('explain')", "explain", show=False),
        Binding("d", "show_tab('detail')", "detail", show=False),
        Binding("u", "toggle_utc", "UTC"),
        Binding("1", "focus_pane('versions')", "list", show=False),
        Binding("2", "focus_pane('detail')", "detail", show=False),
        Binding("3", "focus_pane('explain')", "explain", show=False),
        Binding("z,f10", "zoom", "zoom pane", show=False),
        Binding("r", "reload", "reload", show=False),
    ]

    utc: reactive[bool] = reactive(False)

    def __init__(self, location: str, name: str, *, utc: bool, replay: bool) -> None:
        super().__init__(location, id="main")
        self.table_name = name
        self.replay = replay
        self.table: Table | None = None
        self._detail_timer: Any = None
        self.set_reactive(MainScreen.utc, utc)

    def compose(self) -> ComposeResult:
        yield TableHeader(self.table_name, utc=self.utc, replay=self.replay, id="header")
        with Horizontal(id="body"):
            yield VersionList(utc=self.utc, replay=self.replay, id="versions")
            with TabbedContent(id="side", initial="tab-detail"):
                with TabPane("Detail [d]", id="tab-detail"):
                    yield DetailPane(id="detail")
                with TabPane("Explain [e]", id="tab-explain"):
                    yield ExplainPane(id="explain")
        yield Footer()

    def on_mount(self) -> None:
        self.versions.focus()
        self.versions.loading = True  # until the App's worker has opened the table

    @property
    def versions(self) -> VersionList:
        return self.query_one(VersionList)

    @property
    def header(self) -> TableHeader:
        return self.query_one(TableHeader)

    # ---- opening (from the App's worker) ------------------------------------------------------

    def on_load_state(self, event: LoadState) -> None:
        self.header.load_state, self.header.note = event.state, event.note

    def on_table_failed(self, event: TableFailed) -> None:
        self.header.load_state, self.header.note = "error", event.error
        self._loaded()
        self.notify(safe.inert(event.error, 500), title="cannot open the table", severity="error", markup=False, timeout=10)

    def on_listing_ready(self, event: ListingReady) -> None:
        if self.table is None:  # the parse may have won the race
            self._loaded()
            self.versions.show_listing(event.rows)

    def on_table_loaded(self, event: TableLoaded) -> None:
        self.table = event.table
        self.header.load_state, self.header.note = event.how, ""
        self._loaded()
        self.versions.load(event.table)

    def _loaded(self) -> None:
        self.versions.loading = False
        self.refresh_bindings()  # a loading widget's keys are off: the footer shows them again

    # ---- facts from the version list and the panes -------------------------------------------

    def on_rows_ready(self, event: RowsReady) -> None:
        self.header.span = (event.first, event.last, event.total) if event.total else None
        self.header.shown = event.total

    def on_replay_started(self, _: ReplayStarted) -> None:
        self.header.replay_state = "replaying…"

    def on_replay_done(self, event: ReplayDone) -> None:
        self.header.report, self.header.replay_state = event.report, event.state
        self.schedule_panes()

    def on_list_filtered(self, event: ListFiltered) -> None:
        self.header.filter_label, self.header.shown = event.label, event.shown

    def on_search_changed(self, event: SearchChanged) -> None:
        self.header.search = event.term

    def on_explain_done(self, event: ExplainDone) -> None:
        self.versions.note_winner(event.version, event.winning_version)

    async def on_show_view(self, event: ShowView) -> None:
        await self.run_action(event.view)

    def on_jump_to(self, event: JumpTo) -> None:
        self._opened(event.version)

    # ---- selection -> panes ------------------------------------------------------------------

    def on_version_highlighted(self, _: VersionHighlighted) -> None:
        self.schedule_panes()

    def schedule_panes(self) -> None:
        """Debounced: holding j through 100k rows repaints the list, not the detail pane."""
        if self._detail_timer is not None:
            self._detail_timer.stop()
        self._detail_timer = self.set_timer(DETAIL_DEBOUNCE, self.refresh_panes)

    def refresh_panes(self) -> None:
        vl = self.versions
        v, rows, table = vl.current_version, vl.rows, self.table
        i = rows.index_of(v) if rows is not None and v is not None else None
        if table is None or rows is None or v is None or i is None:
            return
        self.query_one(DetailPane).show(table, v, utc=self.utc, window=rows.window(i), verdict=rows.verdicts.get(v))
        if self.query_one(TabbedContent).active == "tab-explain":
            self.query_one(ExplainPane).show(table, v)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        v = self.versions.current_version
        if event.pane.id == "tab-explain" and v is not None and self.table is not None:
            self.query_one(ExplainPane).show(self.table, v)

    async def on_key(self, event: events.Key) -> None:
        """The version list's search, jump, filter, winner and Esc work while a side pane has focus."""
        vl = self.versions
        action = vl.reach_action(event.key)
        if action is None or self.focused is vl:
            return
        event.stop()
        if action == "back" and not vl.narrowed:
            vl.focus()  # nothing to clear: Esc goes back to the list
        else:
            await vl.run_action(action)

    # ---- keys ----------------------------------------------------------------------------------

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = f"tab-{tab}"

    def action_focus_pane(self, which: str) -> None:
        if which != "versions":
            self.action_show_tab(which)
        self.query_one(f"#{which}").focus()

    def action_zoom(self) -> None:
        if self.maximized is not None:
            self.minimize()
        elif self.focused is not None:
            self.maximize(self.focused)

    def action_toggle_utc(self) -> None:
        self.utc = not self.utc

    def watch_utc(self, utc: bool) -> None:
        self.versions.utc = self.header.utc = utc
        self.refresh_panes()

    def action_reload(self) -> None:
        self.header.load_state, self.header.report = "opening", None
        self.header.replay_state = "waiting" if self.replay else "off"
        self.post_message(Reload())

    def action_timeline(self) -> None:
        if self.versions.rows is None or self.table is None:
            self.notify("still opening the table", severity="warning")
            return
        from tui.screens.timeline import TimelineScreen  # loads on first use: the list paints first

        self.app.push_screen(TimelineScreen(self.location, self.table, self.versions.rows), self._opened)

    def _opened(self, version: int | None) -> None:
        if version is not None:
            self.versions.jump_to(version)

    def action_matrix(self) -> None:
        if self.versions.rows is None:
            self.notify("still opening the table", severity="warning")
            return
        note = "" if self.versions.replayed else "  — replay verdicts not available: pairs counted as 'unreplayed'"
        from tui.screens.matrix import MatrixScreen

        self.app.push_screen(MatrixScreen(self.location, self.versions.rows, note, self.table))

    def action_whatif(self) -> None:
        if self.table is None:
            self.notify("still opening the table", severity="warning")
            return
        from tui.screens.whatif import WhatIfScreen

        self.app.push_screen(WhatIfScreen(self.location, self.table, self.versions.current_version))

    # ---- export and copy (ViewScreen) ------------------------------------------------------------

    def export_payload(self) -> tuple[str, dict[str, Any]]:
        """The versions the list shows (under its filter), as `history --json` rows plus verdicts."""
        rows, table = self.versions.rows, self.table
        if rows is None or table is None:
            return "versions", {"view": "versions", "rows": []}
        shown = {rows.version[i] for i in rows.visible}
        out = [r for r in table.history_rows() if r["version"] in shown]
        for r in out:
            vi = rows.verdicts.get(r["version"])
            r["verdict"] = vi.verdict if vi else None
            i = rows.index_of(r["version"])
            r["windowSize"] = rows.window_size(i) if i is not None else 0
        return "versions", {"view": "versions", "filter": rows.filter_label() or None, "utc": self.utc, "rows": out}

    def selection(self) -> dict[str, Any] | None:
        v, rows = self.versions.current_version, self.versions.rows
        if v is None or rows is None or self.table is None:
            return None
        row = self.table.history_rows(v, v)[0]
        vi = rows.verdicts.get(v)
        row["verdict"] = vi.to_dict() if vi else None
        return row
