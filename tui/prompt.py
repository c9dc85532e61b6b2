"""A one-line prompt (`:` jump, `/` search, export path): Enter submits, Esc cancels."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class PromptScreen(ModalScreen[str | None]):
    """Returns the text entered, or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]
    DEFAULT_CSS = """
    PromptScreen { align: center bottom; background: $background 40%; }
    PromptScreen > Vertical { height: auto; width: 100%; background: $panel; padding: 0 1; border-top: tall $accent; }
    PromptScreen Label { color: $text-muted; }
    """

    def __init__(self, label: str, value: str = "", placeholder: str = "", id: str | None = None) -> None:
        super().__init__(id=id)
        self.label = label
        self.value = value
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.label)
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")

    def on_mount(self) -> None:
        inp = self.query_one(Input)
        if self.app.is_headless:
            inp.cursor_blink = False
        inp.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
