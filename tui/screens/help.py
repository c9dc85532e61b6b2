"""`?` / F1: help for the focused widget, then every key active here (footer shows the main ones)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import Static


def active_keys(app: App, screen: Screen) -> list[tuple[str, str, str]]:
    """(key, what it does, which widget owns it) for every described binding active on `screen`."""
    seen: set[tuple[str, str]] = set()
    keys: list[tuple[str, str, str]] = []
    for ab in screen.active_bindings.values():
        b = ab.binding
        if not b.description or (b.action, b.description) in seen:
            continue
        seen.add((b.action, b.description))
        keys.append((app.get_key_display(b), b.description, type(ab.node).__name__))
    return keys


def help_renderable(bindings: list[tuple[str, str, str]]) -> Table:
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold cyan", no_wrap=True)
    t.add_column()
    t.add_column(style="dim")
    for key, desc, where in bindings:
        t.add_row(key, desc, where)
    return t


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss_help", "close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; background: $background 50%; }
    HelpScreen > VerticalScroll { width: 90; max-height: 80%; height: auto; background: $panel; border: round $accent; padding: 1 2; }
    """

    def __init__(self, focused: Widget | None, bindings: list[tuple[str, str, str]]) -> None:
        super().__init__(id="help")
        self.focused_widget = focused
        self.bindings = bindings

    def compose(self) -> ComposeResult:
        name = type(self.focused_widget).__name__ if self.focused_widget is not None else "app"
        doc = getattr(self.focused_widget, "HELP", None) or "The delta-forensics table browser."
        with VerticalScroll():
            yield Static(Text(f"Help: {name}", style="bold"), id="help-title")
            yield Static(Text(doc + "\n"), id="help-doc")
            yield Static(help_renderable(self.bindings), id="help-keys")
            yield Static(Text("\nq / Esc closes this help", style="dim"))

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
