"""The explain pane: the `explain` command's narrative for the selected version.

forensics.analysis.explain may not exist yet in a given build; then the pane says so and tells what the
replay verdict alone shows. The winning commit is one keypress away (`w`).
"""

from __future__ import annotations

from typing import Any

from rich.style import Style
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from forensics import safe


def explain_available() -> bool:
    try:
        from forensics.analysis.explain import explain_version  # noqa: F401
    except ImportError:
        return False
    return True


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


def fallback_lines(version: int, read_version: int | None, window: list[int], verdict: Any | None) -> list[tuple[str, str]]:
    """What the replay verdict alone says, when forensics.analysis.explain is missing."""
    lines: list[tuple[str, str]] = [("dim italic", "explain not available yet (forensics.analysis.explain is missing): replay verdict only"), ("", "")]
    if read_version is None:
        lines.append(("", f"version {version} recorded no readVersion: its concurrency window is unknown."))
    elif not window:
        lines.append(("", f"version {version} read version {read_version}: no commit landed in between, nothing to check."))
    else:
        lines.append(("", f"version {version} read version {read_version}; {len(window)} commit(s) landed in between: v{window[0]}–v{window[-1]}."))
    if verdict is not None:
        j = verdict.to_dict()
        lines.append(("bold", f"verdict: {verdict.verdict}"))
        for k in ("exception", "rule", "winning_version", "partition", "file", "why", "likely_reason"):
            if j.get(k) not in (None, "", []):
                lines.append(("", f"{k}: {j[k]}"))
    return lines


class ExplainPane(VerticalScroll, can_focus=True):
    """Narrative for the selected version; `w` jumps to the winning commit."""

    HELP = "Explain pane: why this version committed (or what it raced against), as the `explain` command says it.\nw jumps to the winning commit."
    DEFAULT_CSS = """
    ExplainPane { padding: 0 1; }
    """

    def compose(self):
        yield Static(Text("select a version", style="dim"), id="explain-body")

    def set_lines(self, lines: list[tuple[str, str]]) -> None:
        self.query_one("#explain-body", Static).update(narrative_text(lines))

    def set_message(self, msg: str) -> None:
        self.query_one("#explain-body", Static).update(Text(msg, style="dim italic"))
