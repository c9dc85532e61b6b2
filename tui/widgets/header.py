"""The header line: which table, which versions, how it was read, the replay's tally, filter, search, clock.

A plain widget with reactive fields: the main screen sets them as facts arrive and the line
repaints itself. Everything from the log or the user goes through forensics.safe.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from forensics import safe
from forensics.times import local_offset

LOAD_STYLE = {"from cache": "green", "read with Spark": "green", "spark": "yellow", "opening": "yellow", "error": "bold red"}
LOAD_LABEL = {"spark": "reading with Spark…", "opening": "opening…"}


class TableHeader(Widget):
    """One line above the version list."""

    DEFAULT_CSS = """
    TableHeader { height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    load_state: reactive[str] = reactive("opening")  # opening | spark | from cache | read with Spark | error
    note: reactive[str] = reactive("")  # Spark's progress, or why opening failed
    span: reactive[tuple[int, int, int] | None] = reactive(None)  # first, last version, how many
    shown: reactive[int | None] = reactive(None)  # rows left by the filter
    replay_state: reactive[str] = reactive("waiting")  # off | waiting | replaying… | done | replay failed: …
    report: reactive[Any] = reactive(None)  # the ReplayReport, once replayed
    filter_label: reactive[str] = reactive("")
    search: reactive[str] = reactive("")
    utc: reactive[bool] = reactive(False)

    def __init__(self, name: str, *, utc: bool, replay: bool, id: str | None = None) -> None:
        super().__init__(id=id)
        self.table_name = name
        self.set_reactive(TableHeader.utc, utc)
        self.set_reactive(TableHeader.replay_state, "waiting" if replay else "off")

    def render(self) -> Text:
        return self.text()

    def text(self) -> Text:
        t = Text()
        t.append("delta-forensics ", style="bold")
        t.append(safe.inert(self.table_name, 120), style="bold cyan")
        if self.span is not None:
            first, last, n = self.span
            t.append(f"  v{first}–v{last} · {n:,} versions")
            if self.shown is not None and self.shown != n:
                t.append(f" ({self.shown:,} shown)", style="yellow")
        t.append("  ● " + LOAD_LABEL.get(self.load_state, self.load_state), style=LOAD_STYLE.get(self.load_state, ""))
        if self.note:
            t.append(f" ({safe.inert(self.note, 80)})", style="dim")
        if self.report is not None:
            c = self.report.counts
            t.append(f"  replay: {len(self.report.verdicts)} windows")
            if c.get("anomaly"):
                t.append(f" · {c['anomaly']} anomaly", style="bold red")
            if c.get("reordered"):  # commits, as `stats` and `replay` count them; the pairs said apart
                t.append(f" · {self.report.reorders.phrase()}", style="yellow")
        elif self.replay_state != "done":
            t.append(f"  replay: {safe.inert(self.replay_state, 200)}", style="dim")
        if self.filter_label:
            t.append("  filter: " + self.filter_label, style="bold magenta")
        if self.search:
            t.append("  /" + safe.inert(self.search, 40), style="magenta")
        t.append("  UTC" if self.utc else f"  local {local_offset()}", style="bold reverse" if self.utc else "dim")
        return t
