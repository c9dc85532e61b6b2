"""Timeline screen: the concurrency windows as bars, and the aborted attempts evidence reveals.

Finding aborted attempts walks the table's data files, so the screen looks for them in its own
worker: the windows show at once and the attempts' bars join when found. Enter on a bar
closes the screen with its version selected in the list.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Static
from textual.worker import get_current_worker

from forensics import Table, error_line, safe
from tui.data import Rows
from tui.messages import EvidenceDone, JumpTo
from tui.screens.view import ViewScreen
from tui.widgets.timeline_view import TimelineView, build_bars


class TimelineScreen(ViewScreen):
    """Concurrency windows over versions; dismisses with the version to open (or None)."""

    BINDINGS = [Binding("escape,q", "back", "back"), Binding("a", "toggle_all", "all commits")]

    def __init__(self, location: str, table: Table, rows: Rows) -> None:
        super().__init__(location, id="timeline")
        self.table = table
        self.rows = rows
        self.attempts: list[Any] | None = None
        self.file_times_trusted = False  # whether the attempts' file times can be compared with commit times
        self.evidence_note = "evidence: looking for aborted attempts…"
        self.all_commits = False

    def compose(self) -> ComposeResult:
        yield Static(self._title(), id="timeline-title", classes="screen-title")
        yield TimelineView(build_bars(self.rows), id="timeline-view")
        yield Footer()

    def _title(self) -> Text:
        t = Text("Timeline  ", style="bold")
        t.append("├─● window   ", style="cyan")
        t.append("✗ conflict winner   ", style="bold red")
        t.append("↺ reordered before   ", style="bold yellow")
        t.append("├┄✗ aborted attempt   ", style="red")
        t.append(safe.inert(self.evidence_note, 200), style="dim")
        return t

    def on_mount(self) -> None:
        self.query_one(TimelineView).focus()
        self.find_attempts()

    @work(thread=True, exclusive=True, group="evidence")
    def find_attempts(self) -> None:
        """Orphan data files and stray commit files, grouped into aborted attempts (`Table.evidence`)."""
        try:
            ev = self.table.evidence()
            attempts = list(ev.attempts)
            self.file_times_trusted = bool(ev.clock.trusted)  # read once the message arrives
            done = EvidenceDone(attempts, f"evidence: {len(attempts)} aborted attempt(s)")
        except Exception as e:  # noqa: BLE001 - a ForensicsError as documented, anything else with its type; the windows stand alone
            done = EvidenceDone(None, f"evidence: {error_line(e)}")
        if not get_current_worker().is_cancelled:
            self.post_message(done)

    def on_evidence_done(self, event: EvidenceDone) -> None:
        self.attempts, self.evidence_note = event.attempts, event.note
        self.query_one("#timeline-title", Static).update(self._title())
        if event.attempts:
            self._show_bars()

    def action_toggle_all(self) -> None:
        self.all_commits = not self.all_commits
        self._show_bars()

    def _show_bars(self) -> None:
        self.query_one(TimelineView).set_bars(build_bars(self.rows, self.attempts, self.all_commits, self.file_times_trusted))

    def on_jump_to(self, event: JumpTo) -> None:
        event.stop()
        self.dismiss(event.version)

    def action_back(self) -> None:
        self.dismiss(None)

    def export_payload(self) -> tuple[str, dict[str, Any]]:
        return "timeline", {"view": "timeline", "bars": [b.to_dict() for b in self.query_one(TimelineView).bars]}

    def selection(self) -> dict[str, Any] | None:
        bar = self.query_one(TimelineView).selected
        return bar.to_dict() if bar is not None else None
