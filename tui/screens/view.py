"""A view of the table that can leave the terminal: `ctrl+e` writes it to a file (redacted, to share outside
the team: "Export current view, redacted" in the command palette), `y` copies the selection.

Every full screen (versions, timeline, matrix, what-if) is one. The file goes through
`forensics.write_view`, the one write guard: never inside the table's directory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textual.binding import Binding
from textual.screen import Screen

from forensics import ForensicsError, error_line, safe
from tui.prompt import PromptScreen


class ViewScreen(Screen[Any]):
    """Subclasses say what they show (`export_payload`) and what is selected (`selection`)."""

    BINDINGS = [
        Binding("ctrl+e", "export", "export"),
        Binding("y", "copy", "copy JSON"),
    ]

    def __init__(self, location: str, id: str | None = None) -> None:
        super().__init__(id=id)
        self.location = location  # the table, as the user named it: written into every export

    def export_payload(self) -> tuple[str, dict[str, Any]]:
        """(view name, JSON-ready object) of everything this screen shows."""
        raise NotImplementedError

    def selection(self) -> dict[str, Any] | None:
        """The selected item as JSON-ready object (default: the whole view)."""
        return self.export_payload()[1]

    def action_copy(self) -> None:
        obj = self.selection()
        if obj is None:
            self.notify("nothing selected", severity="warning")
            return
        text = json.dumps(obj, ensure_ascii=False, default=str)
        self.app.copy_to_clipboard(text)
        what = f"version {obj['version']}" if obj.get("version") is not None else "selection"
        self.notify(f"copied {what} as JSON ({len(text):,} chars)")

    def action_export(self, redact: bool = False) -> None:
        from forensics import default_export_name, write_view  # the export stack loads when used, not at launch

        view, payload = self.export_payload()
        payload = {"table": self.location, **payload}
        suggestion = default_export_name(view, self.location)
        try:
            shown = str(suggestion.relative_to(Path.cwd()))
        except ValueError:
            shown = str(suggestion)

        def done(value: str | None) -> None:
            if value is None:
                return
            try:
                written = write_view(value.strip() or shown, payload, self.location, redact=redact)
            except (ForensicsError, OSError) as e:
                self.notify(safe.inert(error_line(e), 300), title="export refused", severity="error", markup=False)
                return
            self.notify(safe.inert(f"exported {view}{' redacted' if redact else ''} to {written}", 400), title="export", markup=False)

        how = " redacted (users, clusters, buckets, hosts as placeholders)" if redact else ""
        self.app.push_screen(PromptScreen(f"export {view}{how} to (.json, or .csv for tables; never inside the table):", shown), done)
