"""Our commands in Textual's palette (ctrl+p): jump, filter, views, export, copy, UTC."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Callable

from textual.command import DiscoveryHit, Hit, Hits, Provider

from forensics import safe

if TYPE_CHECKING:
    from tui.app import ForensicsApp


class ForensicsCommands(Provider):
    """Static commands plus `jump to version N` / `jump to txnId …` built from what is typed."""

    def _commands(self) -> list[tuple[str, Callable[[], object], str]]:
        app: ForensicsApp = self.app  # type: ignore[assignment]
        cmds: list[tuple[str, Callable[[], object], str]] = [
            ("View: timeline", app.action_timeline, "concurrency windows as bars (t)"),
            ("View: conflict matrix", app.action_matrix, "operation pairs against outcome (m)"),
            ("View: what-if form", app.action_whatif, "what if a transaction read version R (W)"),
            ("View: explain pane", app.action_show_tab_explain, "the explain narrative for the selected version (e)"),
            ("View: detail pane", app.action_show_tab_detail, "commitInfo, parameters, actions, read/write sets (d)"),
            ("Export current view", app.action_export, "write the current view to a JSON/CSV file (ctrl+e)"),
            ("Copy selection as JSON", app.action_copy, "the selected version as JSON (y)"),
            ("Toggle UTC / local time", app.action_toggle_utc, "(u)"),
            ("Search versions", app.action_search, "text search with n / N (/)"),
            ("Jump to version or txnId", app.action_jump, "(:)"),
            ("Filter: clear", partial(app.set_filter, None, None), "show every version (Esc)"),
            ("Filter: verdict anomaly", partial(app.set_filter, ..., "anomaly"), "versions the rules say should have aborted"),
            ("Filter: verdict reordered", partial(app.set_filter, ..., "reordered"), "WriteSerializable reorders"),
            ("Filter: verdict clean", partial(app.set_filter, ..., "clean"), "replayed windows that passed every check"),
            ("Filter: verdict skipped", partial(app.set_filter, ..., "skipped"), "windows the replay could not check"),
            ("Filter: concurrency windows", partial(app.set_filter, ..., "window"), "every commit with readVersion < version-1"),
            ("Reload the log", app.action_reload, "pick up new commits (r)"),
        ]
        if app.rows is not None:
            for op in app.rows.operations()[:200]:
                cmds.append((f"Filter: operation {safe.inert(op, 60)}", partial(app.set_filter, op, ...), "only this operation"))
        return cmds

    async def discover(self) -> Hits:
        for name, cb, help_ in self._commands():
            if not name.startswith("Filter: operation"):
                yield DiscoveryHit(name, cb, help=help_)

    async def search(self, query: str) -> Hits:
        app: ForensicsApp = self.app  # type: ignore[assignment]
        q = query.strip()
        if q and app.rows is not None:
            i = app.rows.resolve(q)
            if i is not None:
                v = app.rows.version[i]
                label = f"Jump to version {v}" + ("" if q.lstrip("vV").isdigit() else f" (txnId {safe.inert(app.rows.txn_id[i], 40)})")
                yield Hit(1.0, label, partial(app.jump_to_version, v), help="go to this version")
        matcher = self.matcher(query)
        for name, cb, help_ in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), cb, help=help_)
