"""The explain pane: the `explain` command's incident report for the selected version.

The same lines as the terminal, from the library (`Explanation.lines()`): the story first (who
beat whom, by which rule, how sure, what to change), then the evidence with passed checks folded.
Explaining replays the version's window and looks for defeated attempts (evidence), which can
take a moment, so the pane computes it in its own worker and keeps every one it has built for
this table. The winning commit is one keypress away (`w`).
"""

from __future__ import annotations

from typing import Any

from rich.style import Style
from rich.text import Text
from textual import work
from textual.containers import VerticalScroll
from textual.widgets import Static
from textual.worker import get_current_worker

from forensics import Table, error_line, safe
from tui.messages import ExplainDone


def narrative_text(lines: list[tuple[str, str]]) -> Text:
    """(style, text) lines as one Text; the text is made inert, a bad style is ignored."""
    out = Text()
    for style, line in lines:
        try:
            st = Style.parse(style) if style else Style()
        except Exception:  # noqa: BLE001 - a style name we do not know: plain text
            st = Style()
        out.append(safe.inert(line, 4000) + "\n", style=st)
    return out


class ExplainPane(VerticalScroll, can_focus=True):
    """Narrative for the selected version; `w` jumps to the winning commit."""

    HELP = ("Explain pane: the incident report of this version, as the `explain` command says it: the story first, "
            "then the evidence.\nw jumps to the winning commit.")
    DEFAULT_CSS = """
    ExplainPane { padding: 0 1; }
    """

    def __init__(self, id: str | None = None) -> None:
        super().__init__(id=id)
        self.table: Table | None = None
        self.version: int | None = None
        self.explanations: dict[int, Any] = {}
        self.pending: int | None = None  # the version the worker is explaining

    def compose(self):
        yield Static(Text("select a version", style="dim"), id="explain-body")

    def show(self, table: Table, version: int) -> None:
        """The narrative of `version`: at once when built before, else from the worker."""
        if table is not self.table:
            self.table, self.explanations, self.pending = table, {}, None
        self.version = version
        if version in self.explanations:
            self._set_lines(self.explanations[version].lines(utc=self._utc()))
        elif version != self.pending:
            self._set_message(f"explaining version {version}…")
            self.pending = version
            self.compute(table, version)

    @work(thread=True, exclusive=True, group="explain")
    def compute(self, table: Table, version: int) -> None:
        try:
            done = ExplainDone(version, explanation=table.explain(version))
        except Exception as e:  # noqa: BLE001 - a ForensicsError as documented, anything else with its type
            done = ExplainDone(version, error=error_line(e))
        if not get_current_worker().is_cancelled:  # a newer request (another version, a reloaded table) took over
            self.post_message(done)

    def on_explain_done(self, event: ExplainDone) -> None:
        """Show it if still wanted; the message goes on up (the version list learns the winner)."""
        self.pending = None
        if event.explanation is not None:
            self.explanations[event.version] = event.explanation
        if event.version != self.version:
            return
        if event.explanation is not None:
            self._set_lines(event.explanation.lines(utc=self._utc()))
        else:
            self._set_message(safe.inert(f"explain failed: {event.error}", 500))

    def _utc(self) -> bool | None:
        """The screen's UTC toggle (`u`), so the story's times follow the version list's."""
        return getattr(self.screen, "utc", None)

    def _set_lines(self, lines: list[tuple[str, str]]) -> None:
        self.query_one("#explain-body", Static).update(narrative_text(lines))

    def _set_message(self, msg: str) -> None:
        self.query_one("#explain-body", Static).update(Text(msg, style="dim italic"))
