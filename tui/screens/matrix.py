"""Conflict matrix: operation class pairs against outcome, for this table.

Shaped like the isolation-level tables in Delta's documentation (rows and columns INSERT,
UPDATE/DELETE/MERGE, OPTIMIZE; spec §11 "classic matrix"): each cell counts the concurrent
pairs observed in this table's windows (row = the committing transaction, column = a commit
that landed inside its window) by replay outcome, under the documented expectation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.table import Table as RichTable
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual import work
from textual.widgets import Footer, Static
from textual.worker import get_current_worker

from forensics.model import OPERATION_CLASSES, operation_class
from forensics import Table, error_line, safe
from tui.data import Rows
from tui.messages import EvidenceDone
from tui.screens.view import ViewScreen

# Delta docs "Write conflicts" without row-level concurrency (spec §11, [doc]).
DOCS: dict[frozenset[str], str] = {
    frozenset({"INSERT"}): "cannot conflict",
    frozenset({"INSERT", "UPDATE/DELETE/MERGE"}): "can conflict in Serializable; not in WriteSerializable",
    frozenset({"UPDATE/DELETE/MERGE"}): "can conflict in Serializable and WriteSerializable",
    frozenset({"OPTIMIZE", "INSERT"}): "cannot conflict",
    frozenset({"OPTIMIZE", "UPDATE/DELETE/MERGE"}): "can conflict in Serializable and WriteSerializable",
    frozenset({"OPTIMIZE"}): "can conflict in Serializable and WriteSerializable",
}
OUTCOMES = ("clean", "reordered", "anomaly", "aborted", "skipped", "unreplayed")
#: The classes of the docs' table (INSERT, UPDATE/DELETE/MERGE, OPTIMIZE) always show; others when observed.
DOC_CLASSES = tuple(c for c in OPERATION_CLASSES if any(c in pair for pair in DOCS))


@dataclass
class Matrix:
    classes: list[str]
    cells: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    examples: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "view": "matrix",
            "rows_are": "committing transaction (loser side)",
            "columns_are": "commit inside its window (winner side)",
            "classes": self.classes,
            "cells": [
                {"txn": a, "winner": b, "counts": self.cells.get((a, b), {}), "docs": DOCS.get(frozenset({a, b})), "examples": self.examples.get((a, b), [])[:5]}
                for a in self.classes
                for b in self.classes
            ],
        }


def build_matrix(rows: Rows, attempts: list[Any] | None = None) -> Matrix:
    """Count (txn class, winner class) pairs per outcome over every window, and each aborted attempt
    the evidence found against its most likely winner (`aborted`; classed by the operation its
    evidence shows, UNKNOWN when it shows none)."""
    classes = {i: rows.op_class(i) for i in range(len(rows.version)) if rows.window_size(i)}
    m = Matrix(list(DOC_CLASSES))
    cls_cache: dict[int, str] = {}

    def cls_of(v: int) -> str:
        if v not in cls_cache:
            j = rows.index_of(v)
            cls_cache[v] = rows.op_class(j) if j is not None else "UNKNOWN"
        return cls_cache[v]

    for i, a in classes.items():
        v = rows.version[i]
        vi = rows.verdicts.get(v)
        reordered = set(vi.reordered_before) if vi is not None else set()
        for w in rows.window(i):
            b = cls_of(w)
            if vi is None:
                outcome = "unreplayed"
            elif vi.verdict == "anomaly":
                outcome = "anomaly" if vi.winning_version in (None, w) else "clean"
            elif vi.verdict == "reordered":
                outcome = "reordered" if (not reordered or w in reordered) else "clean"
            else:
                outcome = vi.verdict
            cell = m.cells.setdefault((a, b), {})
            cell[outcome] = cell.get(outcome, 0) + 1
            m.examples.setdefault((a, b), []).append(v)
    for a in attempts or []:
        w = a.winning_version
        if w is None:
            continue
        op = a.operation_shown
        pair = (operation_class(op) if op else "UNKNOWN", cls_of(w))
        cell = m.cells.setdefault(pair, {})
        cell["aborted"] = cell.get("aborted", 0) + 1
    seen = {c for pair in m.cells for c in pair}
    m.classes = [c for c in OPERATION_CLASSES if c in DOC_CLASSES or c in seen]
    return m


def matrix_table(m: Matrix, isolation_note: str) -> RichTable:
    t = RichTable(title=f"Concurrent pairs by outcome  (row: the committing transaction; column: a commit inside its window){isolation_note}",
              title_justify="left", show_lines=True, header_style="bold", expand=True)
    t.add_column("txn ↓ / winner →", style="bold", no_wrap=True)
    for c in m.classes:
        t.add_column(c, overflow="fold")
    style = {"clean": "green", "reordered": "yellow", "anomaly": "bold red", "aborted": "bold magenta", "skipped": "dim", "unreplayed": "cyan"}
    for a in m.classes:
        cells: list[Any] = [a]
        for b in m.classes:
            counts = m.cells.get((a, b), {})
            cell = Text()
            if counts:
                for k in OUTCOMES:
                    if counts.get(k):
                        cell.append(f"{k} {counts[k]}  ", style=style[k])
            else:
                cell.append("none observed", style="dim")
            doc = DOCS.get(frozenset({a, b}))
            cell.append("\ndocs: " + (doc or "not in the docs table (metadata/other changes fail every writer)"), style="dim italic")
            cells.append(cell)
        t.add_row(*cells)
    return t


class MatrixScreen(ViewScreen):
    BINDINGS = [Binding("escape,q", "back", "back")]

    def __init__(self, location: str, rows: Rows, isolation_note: str = "", table: Table | None = None) -> None:
        super().__init__(location, id="matrix")
        self.rows = rows
        self.table = table
        self.matrix = build_matrix(rows)
        self.isolation_note = isolation_note
        self.evidence_note = "aborted attempts: looking…" if table is not None else ""

    def compose(self) -> ComposeResult:
        yield Static(Text("Conflict matrix", style="bold"), classes="screen-title")
        with VerticalScroll(id="matrix-scroll"):
            yield Static(matrix_table(self.matrix, self.isolation_note), id="matrix-table")
            yield Static(Text(self.evidence_note, style="dim"), id="matrix-evidence")
            if not self.matrix.cells:
                yield Static(Text("No concurrency windows in this table: every commit read the version just before it.", style="dim"))
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#matrix-scroll").focus()
        if self.table is not None:
            self.find_attempts()

    @work(thread=True, exclusive=True, group="evidence")
    def find_attempts(self) -> None:
        """The aborted attempts (`Table.evidence`, cached on the table): their pairs join as `aborted`."""
        assert self.table is not None
        try:
            attempts = list(self.table.evidence().attempts)
            done = EvidenceDone(attempts, f"aborted attempts: {len(attempts)}, each counted against its most likely winner")
        except Exception as e:  # noqa: BLE001 - the windows' pairs stand alone
            done = EvidenceDone(None, f"aborted attempts: {error_line(e)}")
        if not get_current_worker().is_cancelled:
            self.post_message(done)

    def on_evidence_done(self, event: EvidenceDone) -> None:
        self.evidence_note = event.note
        if event.attempts:
            self.matrix = build_matrix(self.rows, event.attempts)
            self.query_one("#matrix-table", Static).update(matrix_table(self.matrix, self.isolation_note))
        self.query_one("#matrix-evidence", Static).update(Text(safe.inert(self.evidence_note, 200), style="dim"))

    def action_back(self) -> None:
        self.dismiss(None)

    def export_payload(self) -> tuple[str, dict[str, Any]]:
        return "matrix", self.matrix.to_dict()
