"""The root screen: header, version list, detail/explain panes, footer.

Its keys call the app's actions (`app.*`) so the command palette and the keys share one
implementation; pushed screens (timeline, matrix, what-if) have their own keys.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Static, TabbedContent, TabPane

from tui.widgets.detail import DetailPane
from tui.widgets.explain import ExplainPane
from tui.widgets.version_list import VersionList


class MainScreen(Screen[None]):
    BINDINGS = [
        Binding("q", "app.close", "quit"),
        Binding("escape", "app.back", "back", show=False),
        Binding("slash", "app.search", "search"),
        Binding("n", "app.search_next", "next match", show=False),
        Binding("N", "app.search_prev", "prev match", show=False),
        Binding("colon", "app.jump", "jump"),
        Binding("f", "app.filter", "filter"),
        Binding("v", "app.cycle_verdict", "verdict filter", show=False),
        Binding("w", "app.winner", "winner"),
        Binding("t", "app.timeline", "timeline"),
        Binding("m", "app.matrix", "matrix"),
        Binding("W", "app.whatif", "what-if"),
        Binding("e", "app.show_tab_explain", "explain", show=False),
        Binding("d", "app.show_tab_detail", "detail", show=False),
        Binding("u", "app.toggle_utc", "UTC"),
        Binding("1", "app.focus_pane('versions')", "list", show=False),
        Binding("2", "app.focus_pane('detail')", "detail", show=False),
        Binding("3", "app.focus_pane('explain')", "explain", show=False),
        Binding("z,f10", "app.zoom", "zoom pane", show=False),
        Binding("r", "app.reload", "reload", show=False),
    ]

    def __init__(self, utc: bool) -> None:
        super().__init__(id="main")
        self.utc = utc

    def compose(self) -> ComposeResult:
        yield Static("", id="header")
        with Horizontal(id="body"):
            yield VersionList(utc=self.utc, id="versions")
            with TabbedContent(id="side", initial="tab-detail"):
                with TabPane("Detail [d]", id="tab-detail"):
                    yield DetailPane(id="detail")
                with TabPane("Explain [e]", id="tab-explain"):
                    yield ExplainPane(id="explain")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(VersionList).focus()
        self.app.start()  # type: ignore[attr-defined]
