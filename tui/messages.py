"""What the TUI's parts tell each other: small dataclass messages that bubble up the DOM.

Widgets never call into the App. A worker posts its result to the widget that started it
(which shows it, then lets it bubble); the screen that holds two widgets hands facts from one
to the other. The App's one worker posts the opened table to the main screen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message

from forensics import Table

# ---- opening the table (App worker -> main screen; main screen -> App) --------------------


@dataclass
class LoadState(Message):
    """Opening moved on: `opening`, `spark` (a cache miss: the JVM reads the log), a progress note."""

    state: str
    note: str = ""


@dataclass
class TableLoaded(Message):
    """The table is open; `how` is `from cache` or `read with Spark`."""

    table: Table
    how: str


@dataclass
class ListingReady(Message):
    """The log is listed: the versions its commit files name, at their files' times, shown while
    Spark reads what each did (a table the cache does not cover)."""

    rows: Any  # tui.data.Rows, provisional


@dataclass
class TableFailed(Message):
    """The table could not be opened (one line, already rendered with `error_line`)."""

    error: str


@dataclass
class Reload(Message):
    """Open the table again to pick up new commits (`r`)."""


# ---- the version list -----------------------------------------------------------------------


@dataclass
class RowsReady(Message):
    """The version list holds the table's versions (the header shows their span)."""

    first: int | None
    last: int | None
    total: int


@dataclass
class ReplayStarted(Message):
    """The replay of the concurrency windows is running (the verdict column fills in after)."""


@dataclass
class ReplayDone(Message):
    """Every concurrency window went through the rules (`report` is None when the replay failed)."""

    report: Any
    state: str


@dataclass
class VersionHighlighted(Message):
    """The cursor of the version list rests on another version."""

    version: int | None


@dataclass
class ListFiltered(Message):
    """The version list's filter changed: its label (empty: none) and how many rows show."""

    label: str
    shown: int
    total: int


@dataclass
class SearchChanged(Message):
    """The `/` search term changed (empty: cleared)."""

    term: str


@dataclass
class ShowView(Message):
    """Open a view of the table: `timeline`, `matrix` or `whatif` (from `:` or the palette)."""

    view: str


@dataclass
class JumpTo(Message):
    """Select this version in the version list (a timeline bar, the palette); None selects nothing
    (an aborted attempt's bar: it never reached the log)."""

    version: int | None


# ---- workers' results (posted to the widget that started the work, then bubbling) -------------


@dataclass
class SetsDone(Message):
    """Read and write sets of `version` (or why there are none)."""

    version: int
    sets: Any = None
    error: str = ""


@dataclass
class ExplainDone(Message):
    """The `explain` narrative of `version` (or why it failed)."""

    version: int
    explanation: Any = None
    error: str = ""

    @property
    def winning_version(self) -> int | None:
        return getattr(self.explanation, "winning_version", None)


@dataclass
class EvidenceDone(Message):
    """Aborted attempts found from orphan files and stray commits (None when unavailable)."""

    attempts: list[Any] | None
    note: str


@dataclass
class WhatIfDone(Message):
    """The what-if check's result (or why it failed)."""

    result: Any = None
    error: str = ""
