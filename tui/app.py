"""`delta-forensics tui TABLE`: browse a Delta table's versions, concurrency windows and conflicts.

Opening never blocks the screen: a worker lists `_delta_log` and reads the Parquet cache (no
JVM); only a cache miss starts Spark, with "reading with Spark…" in the header meanwhile. The
replay of every window runs in a second worker and fills in the verdict column when done.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

from rich.text import Text
from textual import work
from textual.app import App
from textual.binding import Binding
from textual.widgets import Static, TabbedContent

from forensics import safe
from tui.commands import ForensicsCommands
from tui.data import Rows, VerdictInfo, local_offset
from tui.export import ExportRefused, default_path, write_export
from tui.screens.help import HelpScreen
from tui.screens.main import MainScreen
from tui.screens.prompt import PromptScreen
from tui.widgets.detail import DetailPane
from tui.widgets.explain import ExplainPane, explain_available, fallback_lines
from tui.widgets.version_list import VersionList

VERDICT_CYCLE = (None, "window", "anomaly", "reordered", "clean", "skipped")
DETAIL_DEBOUNCE = 0.05


def env_utc() -> bool:
    return os.environ.get("DELTA_FORENSICS_UTC", "").strip().lower() in ("1", "true", "yes", "on")


class ForensicsApp(App[int]):
    """The table browser. `log` may be given already opened (tests, bench); else it is opened
    from `location` in a worker."""

    TITLE = "delta-forensics"
    CSS_PATH = "app.tcss"
    COMMANDS = App.COMMANDS | {ForensicsCommands}
    BINDINGS = [
        Binding("ctrl+q", "quit", "quit", priority=True, show=False),
        Binding("question_mark,f1", "help", "help"),
        Binding("ctrl+e", "export", "export"),
        Binding("y", "copy", "copy JSON"),
    ]

    def __init__(
        self,
        location: str,
        *,
        utc: bool = False,
        use_cache: bool = True,
        replay: bool = True,
        log: Any = None,
        spark_factory: Callable[[], Any] | None = None,
        display_name: str | None = None,
    ) -> None:
        super().__init__()
        self.location = location
        self.display_name = display_name or location
        self.utc = utc or env_utc()
        self.use_cache = use_cache
        self.replay_enabled = replay
        self.spark_factory = spark_factory
        self.table_log: Any = log
        self._preloaded = log
        self.rows: Rows | None = None
        self.report: Any = None
        self.load_state = "opening"  # opening | spark | from cache | read with Spark | error
        self.replay_state = "off" if not replay else "waiting"
        self.progress_note = ""
        self.search_term = ""
        self.jump_stack: list[int] = []
        self.attempts: list[Any] | None = None
        self.evidence_note = ""
        self.explanations: dict[int, Any] = {}
        self._detail_timer: Any = None
        self._state_index: Any = None

    # ---- lifecycle ---------------------------------------------------------------------

    def get_default_screen(self) -> MainScreen:
        return MainScreen(self.utc)

    def start(self) -> None:
        """Called by the main screen once mounted: show the loading state, open in a worker."""
        self.version_list.loading = True
        self.update_header()
        self.open_log()

    @property
    def version_list(self) -> VersionList:
        return self._main_screen().query_one(VersionList)

    def _main_screen(self) -> MainScreen:
        for s in self.screen_stack:
            if isinstance(s, MainScreen):
                return s
        raise LookupError("main screen not mounted")

    @work(thread=True, exclusive=True, group="open")
    def open_log(self) -> None:
        """List the log and read the cache; start Spark only on a cache miss (never on this thread's caller)."""
        from forensics.log.delta_log import DeltaLog

        try:
            log = self._preloaded
            state = "from cache"
            if log is None:
                if self.use_cache:
                    log = DeltaLog.open_cached(self.location)
                if log is None:
                    self.call_from_thread(self._set_load_state, "spark")
                    log = DeltaLog.open(
                        self.location,
                        use_cache=self.use_cache,
                        spark_factory=self.spark_factory,
                        progress=lambda m: self.call_from_thread(self._set_progress, m),
                    )
                    state = "read with Spark"
            elif not getattr(log, "from_cache", True) or getattr(log, "spark_started", False):
                state = "read with Spark"
            rows = Rows.from_commits(log.commits)
        except Exception as e:  # noqa: BLE001 - shown in the header, the app stays usable
            msg = e.one_line() if hasattr(e, "one_line") else f"{type(e).__name__}: {e}"
            self.call_from_thread(self._open_failed, msg)
            return
        self.call_from_thread(self._log_ready, log, rows, state)

    def _set_load_state(self, state: str) -> None:
        self.load_state = state
        self.update_header()

    def _set_progress(self, msg: str) -> None:
        self.progress_note = msg
        self.update_header()

    def _open_failed(self, msg: str) -> None:
        self.load_state = "error"
        self.progress_note = msg
        vl = self.version_list
        vl.loading = False
        self.update_header()
        self.notify(safe.inert(msg, 500), title="cannot open the table", severity="error", markup=False, timeout=10)

    def _log_ready(self, log: Any, rows: Rows, state: str) -> None:
        self.table_log = log
        self.rows = rows
        self.load_state = state
        self.progress_note = ""
        vl = self.version_list
        vl.loading = False
        vl.replay_pending = self.replay_enabled
        last = rows.version[-1] if rows.version else None
        vl.set_rows(rows, keep_version=last)
        self.update_header()
        if self.replay_enabled:
            self.run_replay()
        self.load_evidence()

    @work(thread=True, exclusive=True, group="replay")
    def run_replay(self) -> None:
        try:
            from forensics.replay.windows import replay_table
        except ImportError:
            self.call_from_thread(self._replay_done, None, "replay not available yet")
            return
        self.call_from_thread(self._set_replay_state, "replaying…")
        try:
            report = replay_table(self.table_log)
        except Exception as e:  # noqa: BLE001 - the list works without verdicts
            msg = e.one_line() if hasattr(e, "one_line") else f"{type(e).__name__}: {e}"
            self.call_from_thread(self._replay_done, None, f"replay failed: {msg}")
            return
        self.call_from_thread(self._replay_done, report, "done")

    def _set_replay_state(self, s: str) -> None:
        self.replay_state = s
        self.update_header()

    def _replay_done(self, report: Any, state: str) -> None:
        self.report = report
        self.replay_state = state
        vl = self.version_list
        vl.replay_pending = False
        if report is not None and self.rows is not None:
            self.rows.verdicts = {v: VerdictInfo.of(cv) for v, cv in report.verdicts.items()}
            if self.rows.verdict_filter:
                self.rows.set_filter()
                vl.refresh_rows(vl.current_version)
        vl.refresh()
        self.update_header()
        self.schedule_detail()

    @work(thread=True, exclusive=True, group="evidence")
    def load_evidence(self) -> None:
        """Aborted attempts (orphan files, stray commits), when forensics.evidence exists."""
        try:
            from forensics.evidence import collect_evidence
        except ImportError:
            self.call_from_thread(self._evidence_done, None, "evidence: not available yet")
            return
        try:
            ev = collect_evidence(self.table_log)
            attempts = list(getattr(ev, "attempts", []) or [])
        except Exception as e:  # noqa: BLE001
            self.call_from_thread(self._evidence_done, None, f"evidence failed: {type(e).__name__}")
            return
        self.call_from_thread(self._evidence_done, attempts, f"evidence: {len(attempts)} aborted attempt(s)")

    def _evidence_done(self, attempts: list[Any] | None, note: str) -> None:
        self.attempts = attempts
        self.evidence_note = note

    # ---- header ------------------------------------------------------------------------

    def header_text(self) -> Text:
        t = Text()
        t.append("delta-forensics ", style="bold")
        t.append(safe.inert(self.display_name, 120), style="bold cyan")
        rows = self.rows
        if rows is not None and rows.version:
            t.append(f"  v{rows.version[0]}–v{rows.version[-1]} · {len(rows.version):,} versions", style="")
            if len(rows) != len(rows.version):
                t.append(f" ({len(rows):,} shown)", style="yellow")
        state_style = {"from cache": "green", "read with Spark": "green", "spark": "yellow", "opening": "yellow", "error": "bold red"}
        label = {"spark": "reading with Spark…", "opening": "opening…"}.get(self.load_state, self.load_state)
        t.append("  ● " + label, style=state_style.get(self.load_state, ""))
        if self.progress_note:
            t.append(f" ({safe.inert(self.progress_note, 80)})", style="dim")
        if self.report is not None:
            c = self.report.counts
            t.append(f"  replay: {len(self.report.verdicts)} windows", style="")
            if c.get("anomaly"):
                t.append(f" · {c['anomaly']} anomaly", style="bold red")
            if c.get("reordered"):
                t.append(f" · {c['reordered']} reordered", style="yellow")
        elif self.replay_state not in ("done",):
            t.append(f"  replay: {self.replay_state}", style="dim" if self.replay_state != "replay not available yet" else "yellow")
        if rows is not None and rows.filter_label():
            t.append("  filter: " + rows.filter_label(), style="bold magenta")
        if self.search_term:
            t.append("  /" + safe.inert(self.search_term, 40), style="magenta")
        t.append("  UTC" if self.utc else f"  local {local_offset()}", style="bold reverse" if self.utc else "dim")
        return t

    def update_header(self) -> None:
        try:
            self._main_screen().query_one("#header", Static).update(self.header_text())
        except LookupError:
            pass
        except Exception:  # noqa: BLE001 - before compose finished
            pass

    # ---- selection → panes -------------------------------------------------------------

    def on_version_list_highlighted(self, event: VersionList.Highlighted) -> None:
        self.schedule_detail()

    def schedule_detail(self) -> None:
        """Debounced: holding j through 100k rows repaints the list, not the detail pane."""
        if self._detail_timer is not None:
            self._detail_timer.stop()
        self._detail_timer = self.set_timer(DETAIL_DEBOUNCE, self.refresh_panes)

    def current_version(self) -> int | None:
        try:
            return self.version_list.current_version
        except LookupError:
            return None

    def refresh_panes(self) -> None:
        v = self.current_version()
        if v is None or self.table_log is None or self.rows is None:
            return
        i = self.rows.index_of(v)
        if i is None:
            return
        main = self._main_screen()
        detail = main.query_one(DetailPane)
        detail.show(self.table_log, v, utc=self.utc, window=self.rows.window(i), verdict=self.rows.verdicts.get(v), findings=self.table_log.findings)
        self.compute_sets(v)
        if main.query_one(TabbedContent).active == "tab-explain":
            self.refresh_explain(v)

    @work(thread=True, exclusive=True, group="sets")
    def compute_sets(self, version: int) -> None:
        try:
            from forensics.sets.commit_sets import StateIndex, commit_sets
        except ImportError:
            self.call_from_thread(self._sets_done, version, None, "read/write sets: not available yet")
            return
        try:
            if self._state_index is None:
                self._state_index = StateIndex(self.table_log)
            sets = commit_sets(self.table_log, version, self._state_index)
        except Exception as e:  # noqa: BLE001 - the rest of the pane is still useful
            msg = e.one_line() if hasattr(e, "one_line") else f"{type(e).__name__}: {e}"
            self.call_from_thread(self._sets_done, version, None, f"read/write sets: {msg}")
            return
        self.call_from_thread(self._sets_done, version, sets, "")

    def _sets_done(self, version: int, sets: Any, msg: str) -> None:
        if version != self.current_version():
            return
        detail = self._main_screen().query_one(DetailPane)
        if sets is None:
            detail.set_sets_state(Text(safe.inert(msg, 500), style="dim"))
        else:
            detail.show_sets(sets)

    def refresh_explain(self, v: int) -> None:
        pane = self._main_screen().query_one(ExplainPane)
        if v in self.explanations:
            pane.set_lines(self.explanations[v].lines())
            return
        if not explain_available():
            i = self.rows.index_of(v) if self.rows else None
            if i is not None and self.rows is not None:
                pane.set_lines(fallback_lines(v, self.rows.read_version[i], self.rows.window(i), self.rows.verdicts.get(v)))
            return
        pane.set_message(f"explaining version {v}…")
        self.compute_explain(v)

    @work(thread=True, exclusive=True, group="explain")
    def compute_explain(self, version: int) -> None:
        from forensics.analysis.explain import explain_version

        try:
            ex = explain_version(self.table_log, version)
        except Exception as e:  # noqa: BLE001
            msg = e.one_line() if hasattr(e, "one_line") else f"{type(e).__name__}: {e}"
            self.call_from_thread(self._explain_failed, version, msg)
            return
        self.call_from_thread(self._explain_done, version, ex)

    def _explain_done(self, version: int, ex: Any) -> None:
        self.explanations[version] = ex
        if version == self.current_version():
            self._main_screen().query_one(ExplainPane).set_lines(ex.lines())

    def _explain_failed(self, version: int, msg: str) -> None:
        if version == self.current_version():
            self._main_screen().query_one(ExplainPane).set_message(safe.inert(f"explain failed: {msg}", 500))

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        v = self.current_version()
        if event.pane.id == "tab-explain" and v is not None:
            self.refresh_explain(v)

    # ---- navigation actions ------------------------------------------------------------

    def jump_to_version(self, version: int, remember: bool = True) -> bool:
        rows = self.rows
        if rows is None:
            return False
        if rows.index_of(version) is None:
            self.notify(f"version {version} is not in the retained log", severity="warning")
            return False
        vl = self.version_list
        cur = vl.current_version
        if rows.row_of_version(version) is None:
            rows.set_filter(None, None)
            vl.refresh_rows()
            self.update_header()
            self.notify("filter cleared to show the version")
        if remember and cur is not None and cur != version:
            self.jump_stack.append(cur)
        vl.select_version(version)
        vl.focus()
        return True

    def action_jump(self) -> None:
        def done(value: str | None) -> None:
            if not value or self.rows is None:
                return
            word = value.strip().lower().lstrip(":")
            views = {"timeline": self.action_timeline, "matrix": self.action_matrix, "whatif": self.action_whatif, "what-if": self.action_whatif,
                     "conflicts": lambda: self.set_filter(..., "anomaly"), "windows": lambda: self.set_filter(..., "window")}
            if word in views:
                views[word]()
                return
            if word.startswith("txn "):
                value = value.strip()[4:]
            i = self.rows.resolve(value)
            if i is None:
                self.notify(f"no version or txnId matches {safe.inert(value, 60)!r}", severity="warning", markup=False)
                return
            self.jump_to_version(self.rows.version[i])

        self.push_screen(PromptScreen(":  version number, v123, txnId (prefix), or timeline / matrix / whatif / conflicts", placeholder="123"), done)

    def action_search(self) -> None:
        def done(value: str | None) -> None:
            if value is None:
                return
            self.search_term = value
            self.update_header()
            if value:
                self._search(True, from_current=True)

        self.push_screen(PromptScreen("/  search version, operation, txnId, user, engine, parameters (n / N for next / previous)", self.search_term), done)

    def _search(self, forward: bool, from_current: bool = False) -> None:
        if not self.search_term or self.rows is None:
            return
        vl = self.version_list
        start = vl.cursor - (1 if from_current and forward else 0) if from_current else vl.cursor
        row = self.rows.search(self.search_term, start, forward)
        if row is None:
            self.notify(f"no match for {safe.inert(self.search_term, 40)!r}", severity="warning", markup=False)
            return
        vl.cursor = row

    def action_search_next(self) -> None:
        self._search(True)

    def action_search_prev(self) -> None:
        self._search(False)

    def set_filter(self, operation: Any = ..., verdict: Any = ...) -> None:
        if self.rows is None:
            return
        vl = self.version_list
        keep = vl.current_version
        self.rows.set_filter(operation, verdict)
        vl.refresh_rows(keep)
        self.update_header()
        if (verdict not in (None, ...) and verdict != "window") and self.report is None:
            self.notify("no replay verdicts yet: the verdict filter fills in when the replay finishes", severity="warning")

    def action_filter(self) -> None:
        def done(value: str | None) -> None:
            if value is None or self.rows is None:
                return
            v = value.strip()
            if not v:
                self.set_filter(None, None)
                return
            if v.lower() in ("clean", "reordered", "anomaly", "skipped", "window"):
                self.set_filter(..., v.lower())
                return
            ops = {o.upper(): o for o in self.rows.operations()}
            if v.upper() not in ops:
                self.notify(f"no operation {safe.inert(v, 40)!r}; known: {safe.inert(', '.join(list(ops.values())[:12]), 300)}", severity="warning", markup=False)
                return
            self.set_filter(ops[v.upper()], ...)

        ops = ", ".join(self.rows.operations()[:8]) if self.rows else ""
        self.push_screen(PromptScreen(f"filter: an operation ({safe.inert(ops, 120)}) or a verdict (clean, reordered, anomaly, skipped, window); empty clears"), done)

    def action_cycle_verdict(self) -> None:
        if self.rows is None:
            return
        cur = self.rows.verdict_filter
        nxt = VERDICT_CYCLE[(VERDICT_CYCLE.index(cur) + 1) % len(VERDICT_CYCLE)] if cur in VERDICT_CYCLE else None
        self.set_filter(..., nxt)

    def action_back(self) -> None:
        """Esc: clear the search, then the filter, then un-zoom, then go back along jumps."""
        if self.screen.maximized is not None:
            self.screen.minimize()
            return
        if self.search_term:
            self.search_term = ""
            self.update_header()
            return
        if self.rows is not None and (self.rows.op_filter or self.rows.verdict_filter):
            self.set_filter(None, None)
            return
        vl = self.version_list
        if not vl.has_focus:
            vl.focus()
            return
        if self.jump_stack:
            self.jump_to_version(self.jump_stack.pop(), remember=False)

    def action_close(self) -> None:
        """q: close the current screen; at the root, quit (exit code 0)."""
        if isinstance(self.screen, MainScreen):
            self.exit(0)
        else:
            self.pop_screen()

    def action_winner(self) -> None:
        v = self.current_version()
        if v is None or self.rows is None:
            return
        w = None
        ex = self.explanations.get(v)
        if ex is not None:
            w = getattr(ex, "winning_version", None)
        vi = self.rows.verdicts.get(v)
        if w is None and vi is not None:
            w = vi.winning_version
            if w is None:
                rb = getattr(vi.raw, "reordered_before", None) or []
                w = rb[0] if rb else None
        if w is None:
            why = "replay still running" if self.replay_enabled and self.report is None and self.replay_state != "replay not available yet" else "no winning commit recorded for this version"
            self.notify(f"version {v}: {why}", severity="warning")
            return
        if self.jump_to_version(w):
            self.notify(f"winner of version {v}: version {w} (Esc goes back)")

    def action_show_tab_explain(self) -> None:
        self._main_screen().query_one(TabbedContent).active = "tab-explain"
        v = self.current_version()
        if v is not None:
            self.refresh_explain(v)

    def action_show_tab_detail(self) -> None:
        self._main_screen().query_one(TabbedContent).active = "tab-detail"

    def action_focus_pane(self, which: str) -> None:
        main = self._main_screen()
        if which == "versions":
            main.query_one(VersionList).focus()
        elif which == "detail":
            self.action_show_tab_detail()
            main.query_one(DetailPane).focus()
        else:
            self.action_show_tab_explain()
            main.query_one(ExplainPane).focus()

    def action_zoom(self) -> None:
        scr = self.screen
        if scr.maximized is not None:
            scr.minimize()
        elif scr.focused is not None:
            scr.maximize(scr.focused)

    def action_toggle_utc(self) -> None:
        self.utc = not self.utc
        self.version_list.utc = self.utc
        self.update_header()
        self.refresh_panes()

    def action_reload(self) -> None:
        self._preloaded = None
        self.report = None
        self.explanations.clear()
        self._state_index = None
        self.replay_state = "waiting" if self.replay_enabled else "off"
        self.load_state = "opening"
        self.update_header()
        self.open_log()

    # ---- views -------------------------------------------------------------------------

    def action_timeline(self) -> None:
        if self.rows is None:
            self.notify("still opening the table", severity="warning")
            return
        from tui.screens.timeline import TimelineScreen

        def done(version: int | None) -> None:
            if version is not None:
                self.jump_to_version(version)

        self.push_screen(TimelineScreen(self.rows, self.attempts, self.evidence_note), done)

    def action_matrix(self) -> None:
        if self.rows is None:
            self.notify("still opening the table", severity="warning")
            return
        from tui.screens.matrix import MatrixScreen

        note = "" if self.report is not None else "  — replay verdicts not available: pairs counted as 'unreplayed'"
        self.push_screen(MatrixScreen(self.rows, note))

    def action_whatif(self) -> None:
        if self.table_log is None:
            self.notify("still opening the table", severity="warning")
            return
        from tui.screens.whatif import WhatIfScreen

        v = self.current_version()
        self.push_screen(WhatIfScreen(self.table_log, v))

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        focused = self.screen.focused
        seen: set[str] = set()
        keys: list[tuple[str, str, str]] = []
        for key, ab in self.screen.active_bindings.items():
            b = ab.binding
            if not b.description or (b.action, b.description) in seen:
                continue
            seen.add((b.action, b.description))
            where = type(ab.node).__name__
            keys.append((self.get_key_display(b), b.description, where))
        self.push_screen(HelpScreen(focused, keys))

    # ---- export and copy ---------------------------------------------------------------

    def current_view_payload(self) -> tuple[str, dict[str, Any]]:
        scr = self.screen
        if hasattr(scr, "export_json"):
            payload = scr.export_json()
            return str(payload.get("view", "view")), {"table": self.location, **payload}
        return "versions", self.versions_payload()

    def versions_payload(self) -> dict[str, Any]:
        from forensics.log.history import history_rows

        rows = self.rows
        if rows is None or self.table_log is None:
            return {"view": "versions", "table": self.location, "rows": []}
        import polars as pl

        wanted = [rows.version[i] for i in rows.visible]
        df = self.table_log.commits if len(wanted) == len(rows.version) else self.table_log.commits.filter(pl.col("version").is_in(wanted))
        out = history_rows(df)
        for r in out:
            vi = rows.verdicts.get(r["version"])
            r["verdict"] = vi.verdict if vi else None
            i = rows.index_of(r["version"])
            r["windowSize"] = rows.window_size(i) if i is not None else 0
        return {"view": "versions", "table": self.location, "filter": rows.filter_label() or None, "utc": self.utc, "rows": out}

    def selection_json(self) -> dict[str, Any] | None:
        scr = self.screen
        if isinstance(scr, MainScreen):
            v = self.current_version()
            if v is None or self.table_log is None or self.rows is None:
                return None
            import polars as pl

            from forensics.log.history import history_rows

            row = history_rows(self.table_log.commits.filter(pl.col("version") == v))[0]
            vi = self.rows.verdicts.get(v)
            row["verdict"] = vi.to_dict() if vi else None
            return row
        sel = _selected(scr)
        if sel is not None:
            return sel.to_dict()
        if hasattr(scr, "export_json"):
            return scr.export_json()
        return None

    def action_copy(self) -> None:
        obj = self.selection_json()
        if obj is None:
            self.notify("nothing selected", severity="warning")
            return
        text = json.dumps(obj, ensure_ascii=False, default=str)
        self.copy_to_clipboard(text)
        what = f"version {obj['version']}" if isinstance(obj, dict) and "version" in obj and obj.get("version") is not None else "selection"
        self.notify(f"copied {what} as JSON ({len(text):,} chars)")

    def action_export(self) -> None:
        if isinstance(self.screen, (PromptScreen, HelpScreen)):
            return
        view, payload = self.current_view_payload()
        suggestion = default_path(view, self.location)
        try:
            shown = str(suggestion.relative_to(Path.cwd()))
        except ValueError:
            shown = str(suggestion)

        def done(value: str | None) -> None:
            if value is None:
                return
            target = Path(value.strip() or shown)
            try:
                written = write_export(target, payload, self.location)
            except (ExportRefused, OSError) as e:
                self.notify(safe.inert(str(e), 300), title="export refused", severity="error", markup=False)
                return
            self.notify(safe.inert(f"exported {view} to {written}", 400), title="export", markup=False)

        self.push_screen(PromptScreen(f"export {view} to (.json, or .csv for tables; never inside the table):", shown), done)


def _selected(scr: Any) -> Any:
    """The selected item of a screen's main view, if it has one (timeline bars)."""
    from tui.screens.timeline import TimelineView

    try:
        return scr.query_one(TimelineView).selected
    except Exception:  # noqa: BLE001
        return None
