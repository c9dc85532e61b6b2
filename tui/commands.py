"""Our commands in Textual's palette (ctrl+p): jump, filter, views, export, copy, UTC.

Each command runs the action of the screen or widget that owns it, exactly as its key does:
the views, panes and UTC are the main screen's, search/jump/filter the version list's, export
and copy the current view's. Typing a version number or a txnId offers a jump to it.
"""

from __future__ import annotations

from functools import partial
from typing import Awaitable, Callable

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.dom import DOMNode

from forensics import safe
from tui.screens.main import MainScreen
from tui.screens.view import ViewScreen
from tui.widgets.version_list import VersionList

Command = tuple[str, Callable[[], Awaitable[object] | object], str]


class ForensicsCommands(Provider):
    """Static commands plus `jump to version N` / `jump to txnId …` built from what is typed."""

    def _main(self) -> MainScreen | None:
        return next((s for s in self.app.screen_stack if isinstance(s, MainScreen)), None)

    def _commands(self) -> list[Command]:
        main = self._main()
        if main is None:
            return []
        vl = main.versions

        def run(node: DOMNode, action: str) -> Callable[[], Awaitable[object]]:
            return partial(node.run_action, action)

        cmds: list[Command] = [
            ("View: timeline", run(main, "timeline"), "concurrency windows as bars (t)"),
            ("View: conflict matrix", run(main, "matrix"), "operation pairs against outcome (m)"),
            ("View: what-if form", run(main, "whatif"), "what if a transaction read version R (W)"),
            ("View: explain pane", run(main, "show_tab('explain')"), "the explain narrative for the selected version (e)"),
            ("View: detail pane", run(main, "show_tab('detail')"), "commitInfo, parameters, actions, read/write sets (d)"),
        ]
        if isinstance(self.screen, ViewScreen):
            cmds += [
                ("Export current view", run(self.screen, "export"), "write the current view to a JSON/CSV file (ctrl+e)"),
                ("Export current view, redacted", run(self.screen, "export(True)"),
                 "the same with users, clusters, buckets and hosts as placeholders, to share outside the team"),
                ("Copy selection as JSON", run(self.screen, "copy"), "the selected version as JSON (y)"),
            ]
        cmds += [
            ("Toggle UTC / local time", run(main, "toggle_utc"), "(u)"),
            ("Search versions", run(vl, "search"), "text search with n / N (/)"),
            ("Jump to version or txnId", run(vl, "jump"), "(:)"),
            ("Filter: clear", partial(vl.set_filter, None, None), "show every version (Esc)"),
            ("Filter: verdict anomaly", partial(vl.set_filter, ..., "anomaly"), "versions the rules say should have aborted"),
            ("Filter: verdict reordered", partial(vl.set_filter, ..., "reordered"), "WriteSerializable reorders"),
            ("Filter: verdict clean", partial(vl.set_filter, ..., "clean"), "replayed windows that passed every check"),
            ("Filter: verdict skipped", partial(vl.set_filter, ..., "skipped"), "windows the replay could not check"),
            ("Filter: concurrency windows", partial(vl.set_filter, ..., "window"), "every commit with readVersion < version-1"),
            ("Reload the log", run(main, "reload"), "pick up new commits (r)"),
        ]
        if vl.rows is not None:
            for op in vl.rows.operations()[:200]:
                cmds.append((f"Filter: operation {safe.inert(op, 60)}", partial(vl.set_filter, op, ...), "only this operation"))
        return cmds

    async def discover(self) -> Hits:
        for name, cb, help_ in self._commands():
            if not name.startswith("Filter: operation"):
                yield DiscoveryHit(name, cb, help=help_)

    async def search(self, query: str) -> Hits:
        main = self._main()
        vl: VersionList | None = main.versions if main is not None else None
        q = query.strip()
        if q and vl is not None and vl.rows is not None:
            i = vl.rows.resolve(q)
            if i is not None:
                v = vl.rows.version[i]
                label = f"Jump to version {v}" + ("" if q.lstrip("vV").isdigit() else f" (txnId {safe.inert(vl.rows.txn_id[i], 40)})")
                yield Hit(1.0, label, partial(vl.jump_to, v), help="go to this version")
        matcher = self.matcher(query)
        for name, cb, help_ in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), cb, help=help_)
