"""What-if form: the `whatif` command as a form, the result shown inline.

"What if a transaction had read version R and tried to commit now?" The check runs in the
screen's worker (it may need the table state at R); the form stays usable meanwhile.
"""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Footer, Input, Label, Select, Static
from textual.worker import get_current_worker

from forensics import (
    ISOLATION_LEVELS,
    OPERATIONS,
    PROFILES,
    Table,
    WhatIfRequest,
    error_line,
    safe,
)
from tui.messages import WhatIfDone
from tui.screens.view import ViewScreen


def parse_partitions(text: str) -> list[dict[str, str]]:
    """`date=2024-06-18, region=eu; date=2024-06-19` -> one dict per `;`-separated partition."""
    out: list[dict[str, str]] = []
    for part in text.split(";"):
        d: dict[str, str] = {}
        for kv in part.split(","):
            if "=" in kv:
                k, v = kv.split("=", 1)
                if k.strip():
                    d[k.strip()] = v.strip()
        if d:
            out.append(d)
    return out


def result_text(res: Any) -> Text:
    j = res.to_dict()
    style = {"commit": "bold green", "clean": "bold green", "abort": "bold red", "reordered": "bold yellow"}.get(str(j.get("verdict")), "bold")
    t = Text()
    t.append(f"verdict: {safe.inert(j.get('verdict'), 40)}", style=style)
    if j.get("exception"):
        t.append(f"  {safe.inert(j['exception'], 80)}", style="red")
    if j.get("winningVersion") is not None:
        t.append(f"  winner v{j['winningVersion']}", style="bold")
    t.append("\n")
    for label, k in (("rule", "rule"), ("partition", "partition"), ("file", "file"), ("reordered_before", "reorderedBefore"),
                     ("profile", "profile"), ("profile_why", "profileWhy"), ("isolation_level", "isolationLevel"),
                     ("certainty", "certainty"), ("why", "why"), ("read", "read"), ("write", "write"),
                     ("winning_commits_checked", "winningCommitsChecked"), ("notes", "notes"), ("message", "message")):
        v = j.get(k)
        if v in (None, "", [], {}):
            continue
        t.append(f"{label}: ", style="bold cyan")
        t.append(safe.inert(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False), 3000) + "\n")
    return t


class WhatIfScreen(ViewScreen):
    """Fill the form, ctrl+r (or the Run button) runs it; q/Esc goes back."""

    BINDINGS = [Binding("escape,q", "back", "back"), Binding("ctrl+r", "run", "run", priority=True)]

    def __init__(self, location: str, table: Table, read_version: int | None) -> None:
        super().__init__(location, id="whatif")
        self.table = table
        self.read_version = read_version
        self.last_result: Any = None

    def compose(self) -> ComposeResult:
        yield Static(Text("What if a transaction had read version R and committed now?", style="bold"), classes="screen-title")
        with VerticalScroll(id="whatif-form"):
            with Horizontal(classes="form-row"):
                with Vertical():
                    yield Label("read version")
                    yield Input(str(self.read_version if self.read_version is not None else ""), id="wi-read", type="integer")
                with Vertical():
                    yield Label("operation")
                    yield Select([(o, o) for o in OPERATIONS], value="MERGE", allow_blank=False, id="wi-op")
                with Vertical():
                    yield Label("mode (WRITE)")
                    yield Select([("Append", "Append"), ("Overwrite", "Overwrite")], prompt="(none)", id="wi-mode")
            with Horizontal(classes="form-row"):
                with Vertical():
                    yield Label("predicate (SQL, Spark dialect; parsed, never executed)")
                    yield Input(placeholder="date = '2024-06-18' AND id > 10", id="wi-pred")
                with Vertical():
                    yield Label("partitions written (k=v,k2=v2; next partition after ;)")
                    yield Input(placeholder="date=2024-06-18", id="wi-parts")
            with Horizontal(classes="form-row"):
                with Vertical():
                    yield Label("isolation level")
                    yield Select([(i, i) for i in ISOLATION_LEVELS], prompt="(table's)", id="wi-iso")
                with Vertical():
                    yield Label("rules")
                    yield Select([(p, p) for p in PROFILES], prompt="(from engineInfo)", id="wi-rules")
                with Vertical():
                    yield Label("until version")
                    yield Input(placeholder="latest", id="wi-until", type="integer")
            yield Button("Run  (ctrl+r)", id="wi-run", variant="primary")
            yield Static(Text("fill the form and run", style="dim"), id="wi-result")
        yield Footer()

    def on_mount(self) -> None:
        for inp in self.query(Input):
            if self.app.is_headless:
                inp.cursor_blink = False
        self.query_one("#wi-read", Input).focus()

    def request(self) -> WhatIfRequest:
        def val(sel_id: str) -> str | None:
            v = self.query_one(sel_id, Select).value
            return v if isinstance(v, str) else None  # Select.NULL / BLANK: nothing chosen

        rv = self.query_one("#wi-read", Input).value.strip()
        until = self.query_one("#wi-until", Input).value.strip()
        return WhatIfRequest(
            read_version=int(rv),
            operation=val("#wi-op") or "MERGE",
            predicate=self.query_one("#wi-pred", Input).value.strip() or None,
            mode=val("#wi-mode"),
            partitions=parse_partitions(self.query_one("#wi-parts", Input).value),
            isolation_level=val("#wi-iso"),
            rules=val("#wi-rules"),
            until=int(until) if until else None,
        )

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "wi-run":
            self.action_run()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_run()

    def action_run(self) -> None:
        out = self.query_one("#wi-result", Static)
        try:
            req = self.request()
        except ValueError:
            out.update(Text("read version must be a whole number", style="red"))
            return
        out.update(Text("running…", style="dim italic"))
        self.run_whatif(req)

    @work(thread=True, exclusive=True, group="whatif")
    def run_whatif(self, req: WhatIfRequest) -> None:
        try:
            done = WhatIfDone(result=self.table.whatif(req))
        except Exception as e:  # noqa: BLE001 - a ForensicsError as documented, anything else with its type; shown in the form
            done = WhatIfDone(error=error_line(e))
        if not get_current_worker().is_cancelled:
            self.post_message(done)

    def on_what_if_done(self, event: WhatIfDone) -> None:
        out = self.query_one("#wi-result", Static)
        if event.result is not None:
            self.last_result = event.result
            out.update(result_text(event.result))
        else:
            out.update(Text(safe.inert(event.error, 1000), style="red"))

    def action_back(self) -> None:
        self.dismiss(None)

    def export_payload(self) -> tuple[str, dict[str, Any]]:
        return "whatif", {"view": "whatif", "result": self.last_result.to_dict() if self.last_result is not None else None}
