"""Pilot-driven tests of the Textual app, on sample_logs/ tables and real delta-rs tables.

The sample tables' caches are warmed once per session with the real Spark reader; each test
then points DELTA_FORENSICS_CACHE_DIR at that cache, so opening is the no-JVM path (a
spark_factory that raises proves Spark never started). The last tests read the TUI's source:
a thin App, and nothing imported from below `forensics.Table`.
"""

from __future__ import annotations

import ast
import datetime as dt
import json
import re
import threading
import time
from pathlib import Path

import polars as pl
import pytest
from textual.command import CommandPalette

from forensics import Table
from forensics.times import fmt_time
from tui.app import ForensicsApp
from tui.prompt import PromptScreen
from tui.screens.help import HelpScreen
from tui.screens.main import MainScreen
from tui.screens.matrix import MatrixScreen, build_matrix
from tui.screens.timeline import TimelineScreen
from tui.screens.whatif import WhatIfScreen
from tui.widgets.detail import DetailPane
from tui.widgets.explain import ExplainPane
from tui.widgets.header import TableHeader
from tui.widgets.timeline_view import TimelineView
from tui.widgets.version_list import VersionList

TUI = Path(__file__).resolve().parents[1] / "tui"

SIZE = (200, 50)
SAMPLES = ("quickstart", "busy", "a-merge-partitions", "b-writeserializable-reorder", "f-delta-rs-aborted")


class NoSpark:
    """A spark_factory that fails the test if the app ever asks for a JVM."""

    calls = 0

    def __call__(self):
        NoSpark.calls += 1
        raise AssertionError("Spark was started although the cache is warm")


@pytest.fixture(scope="session")
def warm_cache(tmp_path_factory, sample_logs, spark):
    cache = tmp_path_factory.mktemp("tui-cache")
    import os

    old = os.environ.get("DELTA_FORENSICS_CACHE_DIR")
    os.environ["DELTA_FORENSICS_CACHE_DIR"] = str(cache)
    try:
        for name in SAMPLES:
            Table(sample_logs / name / "table", spark=spark)
    finally:
        if old is None:
            os.environ.pop("DELTA_FORENSICS_CACHE_DIR", None)
        else:
            os.environ["DELTA_FORENSICS_CACHE_DIR"] = old
    return cache


@pytest.fixture
def cached(warm_cache, monkeypatch, repo_root):
    monkeypatch.setenv("DELTA_FORENSICS_CACHE_DIR", str(warm_cache))
    monkeypatch.chdir(repo_root)
    return warm_cache


def table(name: str) -> str:
    return f"sample_logs/{name}/table"


def app_for(name: str, **kw) -> ForensicsApp:
    kw.setdefault("utc", True)
    kw.setdefault("spark_factory", NoSpark())
    return ForensicsApp(table(name), **kw)


def main_screen(app: ForensicsApp) -> MainScreen:
    return next(s for s in app.screen_stack if isinstance(s, MainScreen))


def versions(app: ForensicsApp) -> VersionList:
    return main_screen(app).query_one(VersionList)


def header(app: ForensicsApp) -> TableHeader:
    return main_screen(app).query_one(TableHeader)


async def settle(pilot, until=None, timeout: float = 60.0) -> None:
    """Wait for the open/replay/detail workers and the debounce timer."""
    app = pilot.app
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        await pilot.pause(0.05)
        busy = any(w.state.name in ("PENDING", "RUNNING") for w in app.workers)
        loaded = versions(app).rows is not None or header(app).load_state == "error"
        replayed = not app.replay or header(app).replay_state not in ("waiting", "replaying…")
        if loaded and replayed and not busy and (until is None or until()):
            await pilot.pause(0.1)  # the detail debounce timer
            if not any(w.state.name in ("PENDING", "RUNNING") for w in app.workers):
                return
    raise AssertionError("the app did not settle")


def plain(widget) -> str:
    """The text a Static/pane currently shows."""
    from rich.console import Console

    console = Console(width=200, record=True, color_system=None)
    for st in widget.query("Static"):
        console.print(st.content)
    return console.export_text()


def history(name: str, repo_root: Path) -> list[dict]:
    """The commitInfo of every commit file, read with json (independent of the app)."""
    out = []
    for f in sorted((repo_root / table(name) / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            if '"commitInfo"' in line:
                ci = json.loads(line)["commitInfo"]
                ci["version"] = int(f.stem)
                out.append(ci)
                break
    return out


# --------------------------------------------------------------------------------------
# 1. opens fast from the cache; background work with a visible loading state
# --------------------------------------------------------------------------------------


async def test_opens_from_cache_before_any_jvm(cached, repo_root):
    NoSpark.calls = 0
    app = app_for("busy")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        vl = app.query_one(VersionList)
        assert NoSpark.calls == 0
        assert header(app).load_state == "from cache"
        assert "from cache" in header(app).text().plain
        n = len(list((repo_root / table("busy") / "_delta_log").glob("*.json")))
        assert len(vl.rows) == n
        assert vl.current_version == n - 1  # opens at the newest version
        assert vl.row_text(0).split()[0] == "0"


async def test_a_cached_open_lists_the_log_once_and_paints_its_times_first(cached, repo_root, monkeypatch):
    """Names, then the times from the listing that judges the cache (no timed listing of its own:
    at 100k commits that was 0.4 s more before the cached rows), then the cached rows."""
    import forensics.log.listing as listing_mod

    calls: list[str] = []
    real_list_log, real_listed = listing_mod.list_log, Table.listed_commits
    monkeypatch.setattr(listing_mod, "list_log", lambda *a, **k: calls.append("list_log") or real_list_log(*a, **k))
    monkeypatch.setattr(Table, "listed_commits",
                        staticmethod(lambda uri, *, times=True: calls.append(f"listed times={times}") or real_listed(uri, times=times)))
    shown: list = []
    real_show = VersionList.show_listing
    monkeypatch.setattr(VersionList, "show_listing", lambda self, rows: shown.append(list(rows.timestamp)) or real_show(self, rows))
    app = app_for("busy")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert calls == ["listed times=False", "list_log"]
        log_dir = repo_root / table("busy") / "_delta_log"
        times = [int(f.stat().st_mtime * 1000) for f in sorted(log_dir.glob("[0-9]*.json"))]
        assert shown == [[None] * len(times), times]
        assert header(app).load_state == "from cache" and not versions(app).rows.provisional


@pytest.fixture
def evil_table(tmp_path):
    """A real delta-rs table whose commitInfo carries markup and terminal escapes."""
    import pyarrow as pa
    from deltalake import CommitProperties, write_deltalake

    p = tmp_path / "evil"
    t = pa.table({"id": [1, 2], "date": ["2024-01-01", "2024-01-02"]})
    write_deltalake(str(p), t, partition_by=["date"])
    write_deltalake(
        str(p), t, mode="append",
        commit_properties=CommitProperties(custom_metadata={"userName": "[bold red]pwn[/] \x1b]52;c;ZXZpbA==\x07 end", "userMetadata": "[link=http://x]click[/link]"}),
    )
    return p


async def test_cache_miss_reads_with_spark_in_background(evil_table, spark):
    gate = threading.Event()
    started = threading.Event()

    def slow_spark():
        started.set()
        assert gate.wait(60)
        return spark

    app = ForensicsApp(str(evil_table), utc=True, spark_factory=slow_spark)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if started.is_set():
                break
        assert started.is_set()
        await pilot.pause(0.1)
        assert "reading with Spark" in header(app).text().plain
        # the listed versions paint at once, before Spark has read a commit: number and file time only
        vl = versions(app)
        assert vl.rows is not None and vl.rows.provisional and vl.rows.version == [0, 1]
        assert vl.current_version == 1  # at the newest, as when opened from the cache
        mtime = (evil_table / "_delta_log" / "00000000000000000001.json").stat().st_mtime
        assert vl.row_text(1).split()[:2] == ["1", fmt_time(int(mtime * 1000), True, offset=False).split()[0]]
        assert "…" in vl.row_text(1) and "WRITE" not in vl.row_text(1)
        await pilot.press("question_mark")  # the UI answers while Spark is pending
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("q")
        gate.set()
        await settle(pilot)
        assert header(app).load_state == "read with Spark"
        assert versions(app).rows is not None and versions(app).rows.version == [0, 1]
        assert not versions(app).rows.provisional and "WRITE" in versions(app).row_text(1)
        assert versions(app).current_version == 1


def test_the_listing_gives_names_first_then_times_as_list_log_does(tmp_path, repo_root):
    """The first paint reads names only (no stat per commit); the timed listing that follows names
    exactly the commits `list_log` classifies: not a link, a directory or another file named like one."""
    import shutil

    from forensics.log.listing import list_log

    table = tmp_path / "t"
    shutil.copytree(repo_root / "sample_logs" / "quickstart" / "table", table)
    log = table / "_delta_log"
    (log / "00000000000000000090.json").symlink_to(log / "00000000000000000001.json")
    (log / "00000000000000000091.json").mkdir()
    (log / "00000000000000000002.json.tmp").write_text("{}")
    (log / "00000000000000000002.checkpoint.parquet").write_bytes(b"")
    classified = list_log(str(table))
    names = Table.listed_commits(table, times=False)
    timed = Table.listed_commits(table)
    assert [v for v, _ in timed] == classified.versions == list(range(20))
    assert [v for v, _ in names] == [*range(20), 90, 91]  # names alone cannot tell a link or a directory
    assert all(t is None for _, t in names)
    assert [t for _, t in timed] == [classified.commits[v].mtime_ms for v in classified.versions]
    assert Table.listed_commits(tmp_path / "absent") is None


async def test_the_second_listing_keeps_the_cursor_where_the_user_put_it(repo_root):
    from tui.data import Rows

    gate = threading.Event()

    def no_spark():  # held until the test ends: only the listings show
        gate.wait(60)
        raise RuntimeError("no Spark in this test")

    app = ForensicsApp(str(repo_root / "sample_logs" / "quickstart" / "table"), utc=True, spark_factory=no_spark)
    async with app.run_test(size=SIZE) as pilot:
        vl = versions(app)
        for _ in range(100):
            if vl.rows is not None and vl.rows.timestamp[-1] is not None:
                break
            await pilot.pause(0.05)
        assert vl.rows.provisional and vl.current_version == 19
        await pilot.press("k", "k")
        assert vl.current_version == 17
        vl.show_listing(Rows.from_listing(Table.listed_commits(repo_root / "sample_logs" / "quickstart" / "table", times=False)))
        await pilot.pause()
        assert vl.current_version == 17 and "…" in vl.row_text(17)
        gate.set()


# --------------------------------------------------------------------------------------
# 2. version list: virtualized, columns, UTC toggle
# --------------------------------------------------------------------------------------


async def test_columns_time_and_utc_toggle(cached, repo_root):
    his = history("quickstart", repo_root)
    app = app_for("quickstart")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        vl = app.query_one(VersionList)
        head = vl.header_text(vl.size.width)
        for col in ("version", "time (UTC)", "operation", "readVer", "isolation", "blind", "+add", "-rm", "verdict"):
            assert col in head
        first = vl.row_text(0)
        ts = dt.datetime.fromtimestamp(his[0]["timestamp"] / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S") + "Z"
        assert ts in first and his[0]["operation"] in first
        assert "UTC" in header(app).text().plain
        await pilot.press("u")
        assert "time (local" in vl.header_text(vl.size.width)
        local = dt.datetime.fromtimestamp(his[0]["timestamp"] / 1000).strftime("%Y-%m-%d %H:%M:%S")
        assert local in vl.row_text(0) and not vl.row_text(0).split()[2].endswith("Z")
        assert "local" in header(app).text().plain


def synthetic_table(n: int, tmp_path: Path) -> Table:
    """A Table of n commits whose log is built with polars in the COMMIT_SCHEMA shape (no JVM)."""
    from forensics.log.delta_log import DeltaLog
    from forensics.log.index import COMMIT_SCHEMA
    from forensics.log.listing import LogListing
    from forensics.log.reader import ACTION_COLUMNS, OTHER_COLUMNS, arrow_schema

    v = pl.Series(range(n), dtype=pl.Int64)
    ops = pl.Series(["WRITE", "MERGE", "OPTIMIZE", "DELETE"] * (n // 4 + 1))[:n]
    cols = {k: pl.Series([None] * n, dtype=t) for k, t in COMMIT_SCHEMA.items()}
    cols.update(
        version=v, source=pl.Series(["commit"] * n), timestamp=v * 1000 + 1_700_000_000_000, operation=ops,
        operation_parameters=pl.Series(["{}"] * n), read_version=(v - 1 - (v % 3)).clip(lower_bound=0) if n else v,
        isolation_level=pl.Series(["WriteSerializable"] * n), is_blind_append=(ops == "WRITE"),
        num_add=pl.Series([1] * n, dtype=pl.Int64), num_remove=pl.Series([0] * n, dtype=pl.Int64), num_cdc=pl.Series([0] * n, dtype=pl.Int64),
        partitions_touched=pl.Series(["[]"] * n), txn_app_ids=pl.Series(["{}"] * n), domains=pl.Series(["[]"] * n),
        has_commit_info=pl.Series([True] * n), has_metadata=pl.Series([False] * n), has_protocol=pl.Series([False] * n),
        has_txn=pl.Series([False] * n), has_domain_metadata=pl.Series([False] * n), txn_id=pl.Series([f"txn-{i:08d}" for i in range(n)]),
    )
    commits = pl.DataFrame(cols, schema=COMMIT_SCHEMA)
    empty_a = pl.from_arrow(arrow_schema(ACTION_COLUMNS).empty_table())
    empty_o = pl.from_arrow(arrow_schema(OTHER_COLUMNS).empty_table())
    loc = str(tmp_path / "synthetic")
    log = DeltaLog(location=loc, listing=LogListing(table_uri=loc, log_uri=loc + "/_delta_log"), commits=commits, actions=empty_a, others=empty_o, from_cache=True)
    return Table(loc, _log=log)


async def test_version_list_is_virtual_at_100k(tmp_path):
    n = 100_000
    t = synthetic_table(n, tmp_path)
    app = ForensicsApp(t.location, table=t, utc=True, replay=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        vl = app.query_one(VersionList)
        assert vl.virtual_size.height == n + 1
        assert vl.current_version == n - 1
        await pilot.press("g")
        assert vl.current_version == 0 and vl.scroll_y == 0
        await pilot.press("j", "j", "k")
        assert vl.current_version == 1
        await pilot.press("pagedown")
        assert vl.current_version == 1 + vl.size.height - 1
        t0 = time.perf_counter()
        await pilot.press("G")
        await pilot.pause()
        assert time.perf_counter() - t0 < 2.0
        assert vl.current_version == n - 1
        last_line = vl.render_line(vl.size.height - 1).text
        assert last_line.split()[0] == str(n - 1)
        await pilot.press("colon", *"50000", "enter")
        assert vl.current_version == 50_000
        await pilot.press("colon", *"txn-00012345", "enter")
        assert vl.current_version == 12_345


# --------------------------------------------------------------------------------------
# 3-4. detail and explain panes, winner a keypress away
# --------------------------------------------------------------------------------------


async def test_detail_pane(cached, repo_root):
    merge = next(c for c in history("a-merge-partitions", repo_root) if c["operation"] == "MERGE")
    v = merge["version"]
    lines = (repo_root / table("a-merge-partitions") / "_delta_log" / f"{v:020d}.json").read_text().splitlines()
    n_files = sum(1 for ln in lines if ln.startswith(('{"add"', '{"remove"', '{"cdc"')))
    app = app_for("a-merge-partitions")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("colon", *str(v), "enter")
        await settle(pilot, until=lambda: "read set" in plain(app.query_one(DetailPane)))
        text = plain(app.query_one(DetailPane))
        assert f"version {v}" in text and "MERGE" in text
        assert str(merge["readVersion"]) in text and merge["isolationLevel"] in text
        pred = json.loads(merge["operationParameters"]["predicate"])[0]  # Spark writes a JSON-encoded list
        assert pred in text and '\\"' not in text  # shown decoded, not as escaped JSON text
        assert f"actions ({n_files} add/remove/cdc)" in text
        assert "read set" in text and "write set" in text
        assert re.search(r"\[(exact|superset|subset|unknown)\]", text)


async def test_explain_pane_and_winner(cached):
    name = "b-writeserializable-reorder"
    t = Table.from_cache(table(name))
    report = t.replay_report()
    v, cv = next((k, c) for k, c in sorted(report.verdicts.items()) if c.winning_version is not None or c.reordered_before)
    ex = t.explain(v)
    app = app_for(name)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g", "colon", *str(v), "enter", "e")
        await settle(pilot, until=lambda: "explaining" not in plain(app.query_one(ExplainPane)))
        text = plain(app.query_one(ExplainPane))
        first = next(line for _, line in ex.lines() if line.strip())
        assert first.strip()[:40] in text
        expected_winner = ex.winning_version
        if expected_winner is None:
            expected_winner = cv.winning_version if cv.winning_version is not None else cv.reordered_before[0]
        vl = versions(app)
        await pilot.press("w")
        assert vl.current_version == expected_winner
        await pilot.press("escape")  # back along the jump
        assert vl.current_version == v
        # the list's keys work while the explain pane has focus: w there too, Esc from the pane
        await pilot.press("3")
        assert app.focused is app.query_one(ExplainPane)
        await pilot.press("w")
        assert vl.current_version == expected_winner
        await pilot.press("2", "escape")  # Esc in a side pane with nothing to clear focuses the list
        assert app.focused is vl


# --------------------------------------------------------------------------------------
# 5-7. timeline, conflict matrix, what-if form
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["busy", "b-writeserializable-reorder"])
async def test_timeline(cached, name):
    his = Table.from_cache(table(name)).history()
    windows = his.filter(pl.col("readVersion").is_not_null() & (pl.col("readVersion") < pl.col("version") - 1))
    app = app_for(name)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)  # the attempts arrive with the evidence, after the commits' bars
        assert isinstance(app.screen, TimelineScreen)
        view = app.screen.query_one(TimelineView)
        commits = [b for b in view.bars if b.kind == "commit"]
        assert sorted(b.version for b in commits) == sorted(windows["version"].to_list())
        for b in commits:
            assert b.lo == windows.filter(pl.col("version") == b.version)["readVersion"][0]
            vi = versions(app).rows.verdicts.get(b.version)
            if vi is not None and vi.verdict == "reordered":
                assert "↺" in view.bar_text(view.bars.index(b))
            if vi is not None and vi.verdict == "anomaly" and vi.winning_version is not None:
                assert "✗" in view.bar_text(view.bars.index(b))
        await pilot.press("G")
        chosen = view.selected
        assert chosen is view.bars[-1]
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, TimelineScreen)
        assert versions(app).current_version == chosen.target  # an attempt opens its most likely winner


async def test_conflict_matrix(cached):
    app = app_for("b-writeserializable-reorder")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("m")
        assert isinstance(app.screen, MatrixScreen)
        m = app.screen.matrix
        assert m.classes[:3] == ["INSERT", "UPDATE/DELETE/MERGE", "OPTIMIZE"]
        # the sample's DELETE (v3, read v1) ran against a blind INSERT (v2) and was reordered before it
        assert m.cells[("UPDATE/DELETE/MERGE", "INSERT")] == {"reordered": 1}, header(app).replay_state
        total = sum(sum(c.values()) for c in m.cells.values())
        rows = versions(app).rows
        assert total == sum(rows.window_size(i) for i in range(len(rows.version)))
        shown = plain(app.screen)
        assert "reordered 1" in shown and "docs: cannot conflict" in shown
        await pilot.press("q")
        assert not isinstance(app.screen, MatrixScreen)


async def test_the_replay_worker_hands_later_windows_to_a_second_process(cached, monkeypatch, caplog):
    """The TUI's replay worker replays as the CLI does: past `MIN_WINDOWS` windows (here one) the
    later ones go to the replay's child process, and the verdict column is the one-process one."""
    import forensics.replay.second as second
    from forensics.runtime.halves import cores
    from forensics.runtime.logs import logger

    if cores() < 2:
        pytest.skip("one core: replay never starts a second process")
    name = "busy"
    want = {v: (cv.verdict, cv.winning_version, cv.reordered_before) for v, cv in Table.from_cache(table(name)).replay_report().verdicts.items()}
    assert len(want) >= 2
    monkeypatch.setattr(second, "MIN_WINDOWS", 1)
    caplog.set_level("INFO", logger=logger.name)
    app = app_for(name)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, timeout=120)
        assert header(app).replay_state == "done"
        got = {v: (cv.verdict, cv.winning_version, cv.reordered_before) for v, cv in header(app).report.verdicts.items()}
        shown = {v: info.verdict for v, info in versions(app).rows.verdicts.items()}
    assert got == want
    assert shown == {v: w[0] for v, w in want.items()}
    assert any("replay in two processes" in r.getMessage() for r in caplog.records)


async def test_conflict_matrix_counts_aborted_attempts(cached, repo_root):
    """Sample (f): three stale delta-rs handles (a DELETE, two UPDATEs; attempts.json) aborted and left
    only files. Their pairs join the matrix as `aborted`, on the UPDATE/DELETE/MERGE row, each against
    a commit of the log; the windows' pairs stay as they were."""
    truth = json.loads((repo_root / "sample_logs" / "f-delta-rs-aborted" / "attempts.json").read_text())
    assert {t["operation"] for t in truth} <= {"DELETE", "UPDATE"}
    app = app_for("f-delta-rs-aborted")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, timeout=120)  # the replay attributes the attempts (cached for the matrix after)
        await pilot.press("m")
        assert isinstance(app.screen, MatrixScreen)
        before = build_matrix(versions(app).rows).cells  # the windows' pairs alone
        await settle(pilot, until=lambda: not app.screen.evidence_note.endswith("looking…"))
        assert app.screen.evidence_note.startswith(f"aborted attempts: {len(truth)},"), app.screen.evidence_note
        cells = app.screen.matrix.cells
        aborted = {k: v["aborted"] for k, v in cells.items() if v.get("aborted")}
        assert sum(aborted.values()) == len(truth)
        assert {txn for txn, _ in aborted} == {"UPDATE/DELETE/MERGE"}
        assert {k: {o: n for o, n in v.items() if o != "aborted"} for k, v in cells.items() if set(v) - {"aborted"}} == before
        assert "aborted " in plain(app.screen)


async def test_whatif_form(cached, repo_root):
    error = (repo_root / "sample_logs" / "a-merge-partitions" / "error.txt").read_text()
    expected = re.search(r"(Concurrent\w+Exception|MetadataChangedException|ProtocolChangedException)", error).group(1)
    app = app_for("a-merge-partitions")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("W")
        scr = app.screen
        assert isinstance(scr, WhatIfScreen)
        scr.query_one("#wi-read").value = "2"
        scr.query_one("#wi-pred").value = "t.id = s.id"
        scr.query_one("#wi-parts").value = "date=2024-06-18"
        scr.query_one("#wi-until").value = "3"
        assert scr.query_one("#wi-op").value == "MERGE"
        await pilot.press("ctrl+r")
        await settle(pilot, until=lambda: "running…" not in plain(scr))
        text = plain(scr)
        assert expected in text, text
        assert "winner v3" in text
        await pilot.press("escape")  # Esc backs out of the form even from an input
        assert not isinstance(app.screen, WhatIfScreen)


# --------------------------------------------------------------------------------------
# 8. keys
# --------------------------------------------------------------------------------------


async def test_keys_search_filter_jump_quit(cached, repo_root):
    his = history("quickstart", repo_root)
    ops = [c["operation"] for c in his]
    app = app_for("quickstart")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        vl = app.query_one(VersionList)
        # footer hints and focused-widget help
        footer_keys = {b.binding.key for b in app.screen.active_bindings.values() if b.binding.show}
        assert {"slash", "colon", "f", "t"} <= footer_keys
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen) and "Help: VersionList" in plain(app.screen)
        await pilot.press("escape")
        # g / G / j / k
        await pilot.press("g", "j", "j")
        assert vl.current_version == his[2]["version"]
        await pilot.press("G")
        assert vl.current_version == his[-1]["version"]
        # / search with n / N
        target = "OPTIMIZE" if "OPTIMIZE" in ops else ops[-1]
        hits = [c["version"] for c in his if target.lower() in json.dumps(c).lower() or target in c["operation"]]
        await pilot.press("g", "slash", *target.lower(), "enter")
        assert vl.current_version in hits and "/" + target.lower() in header(app).text().plain
        first = vl.current_version
        await pilot.press("n")
        assert vl.current_version in hits
        if len(hits) > 1:
            assert vl.current_version != first
            await pilot.press("N")
            assert vl.current_version == first
        await pilot.press("escape")
        assert vl.search_term == "" and "/" + target.lower() not in header(app).text().plain
        # filter by operation; Esc clears it
        await pilot.press("f", *"delete", "enter")
        assert [vl.rows.operation[i] for i in vl.rows.visible] == [o for o in ops if o == "DELETE"]
        assert "op=DELETE" in header(app).text().plain
        await pilot.press("escape")
        assert len(vl.rows) == len(his)
        # verdict filter cycles through window → anomaly → …
        await pilot.press("v")
        assert vl.rows.verdict_filter == "window"
        assert all(vl.rows.window_size(i) > 0 for i in vl.rows.visible)
        await pilot.press("escape")
        # tab moves between panes
        await pilot.press("tab")
        assert app.focused is not vl
        # the list's search works from a side pane too
        await pilot.press("2", "slash")
        assert isinstance(app.screen, PromptScreen)
        await pilot.press("escape")
        await pilot.press("1")
        assert app.focused is vl
        # ctrl+p palette with our provider
        await pilot.press("ctrl+p")
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"timeline")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert isinstance(app.screen, TimelineScreen)
        await pilot.press("q")  # q closes a screen
        assert not isinstance(app.screen, TimelineScreen)
        await pilot.press("m", "ctrl+q")  # ctrl+q quits from anywhere
    assert app.return_code == 0


async def test_q_at_root_quits(cached):
    app = app_for("quickstart")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("q")
    assert app.return_code == 0


async def test_export_and_copy(cached, tmp_path, repo_root):
    app = app_for("quickstart")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f", *"write", "enter")
        out = tmp_path / "versions.json"
        await pilot.press("ctrl+e")
        inp = app.screen.query_one("Input")
        assert inp.value.startswith("delta-forensics-versions-quickstart-")  # default: current directory
        inp.value = str(out)
        await pilot.press("enter")
        await pilot.pause(0.1)
        data = json.loads(out.read_text())
        writes = [c["version"] for c in history("quickstart", repo_root) if c["operation"] == "WRITE"]
        assert [r["version"] for r in data["rows"]] == writes
        # never inside the table path
        inside = repo_root / table("quickstart") / "x.json"
        await pilot.press("ctrl+e")
        app.screen.query_one("Input").value = str(inside)
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert not inside.exists()
        # y copies the selection as JSON
        await pilot.press("y")
        copied = json.loads(app.clipboard)
        assert copied["version"] == versions(app).current_version and copied["operation"] == "WRITE"
        # export of a pushed view (matrix) as JSON
        await pilot.press("escape", "m", "ctrl+e")
        out2 = tmp_path / "matrix.json"
        app.screen.query_one("Input").value = str(out2)
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert json.loads(out2.read_text())["view"] == "matrix"


# --------------------------------------------------------------------------------------
# 9. untrusted text stays inert
# --------------------------------------------------------------------------------------


async def test_untrusted_text_is_inert(evil_table, spark):
    app = ForensicsApp(str(evil_table), utc=True, spark_factory=lambda: spark)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("G")
        await settle(pilot, until=lambda: "userName" in plain(app.query_one(DetailPane)))
        text = plain(app.query_one(DetailPane))
        assert "[bold red]pwn[/]" in text  # shown literally, not as markup
        assert "\\x1b]52;c;ZXZpbA==\\x07 end" in text  # the escape is visible, not sent
        assert "[link=http://x]click[/link]" in text
        svg = app.export_screenshot()
        assert "\x1b" not in svg and "\x07" not in svg


# --------------------------------------------------------------------------------------
# SVG snapshots (pytest-textual-snapshot): UTC on, animations off, cursor blink off
# --------------------------------------------------------------------------------------


@pytest.fixture
def snap_env(cached, monkeypatch):
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    return cached


def _snap(snap_compare, app, press=()):
    async def before(pilot):
        await settle(pilot)
        for k in press:
            await pilot.press(k)
            await settle(pilot)

    return snap_compare(app, terminal_size=SIZE, run_before=before)


def test_snapshot_main(snap_env, snap_compare):
    assert _snap(snap_compare, app_for("quickstart"))


def test_snapshot_explain(snap_env, snap_compare):
    assert _snap(snap_compare, app_for("b-writeserializable-reorder"), press=("e",))


def test_snapshot_timeline(snap_env, snap_compare):
    assert _snap(snap_compare, app_for("busy"), press=("t",))


def test_snapshot_matrix(snap_env, snap_compare):
    assert _snap(snap_compare, app_for("b-writeserializable-reorder"), press=("m",))


def test_snapshot_whatif(snap_env, snap_compare):
    assert _snap(snap_compare, app_for("a-merge-partitions"), press=("W",))


def test_snapshot_help(snap_env, snap_compare):
    assert _snap(snap_compare, app_for("quickstart"), press=("question_mark",))


# --------------------------------------------------------------------------------------
# the TUI's shape: a thin App, no import cycles, nothing from below forensics.Table
# --------------------------------------------------------------------------------------

GLOBAL_ACTIONS = {"quit", "help"}  # the command palette is Textual's own
FRONT = {"forensics", "forensics.table", "forensics.model", "forensics.errors", "forensics.safe", "forensics.times"}


def _modules(root: Path) -> dict[str, Path]:
    out = {}
    for p in root.rglob("*.py"):
        parts = p.relative_to(root.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _imported(source: str, module: str, is_package: bool = False) -> list[str]:
    """Dotted names a module imports, wherever the statement sits (functions, TYPE_CHECKING)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join(parent + ([node.module] if node.module else []))
            names += [f"{base}.{a.name}" for a in node.names]
    return names


def test_import_walker_sees_deferred_and_type_checking_imports():
    src = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from forensics.log import DeltaLog\ndef f():\n    import forensics.replay.windows\n"
    assert {"forensics.log.DeltaLog", "forensics.replay.windows"} <= set(_imported(src, "tui.x"))


def _resolve(name: str, known: set[str]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def test_app_holds_only_global_actions():
    """The acceptance of the restructuring: no action that belongs to one widget or screen stays on the App."""
    tree = ast.parse((TUI / "app.py").read_text())
    actions = {n.name.removeprefix("action_") for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("action_")}
    assert actions <= GLOBAL_ACTIONS, actions
    assert {b.action for b in ForensicsApp.BINDINGS} <= GLOBAL_ACTIONS
    # and no widget or screen binds a key to an App action other than quit
    for path in TUI.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Binding" and len(node.args) > 1:
                action = node.args[1].value
                assert not action.startswith("app.") or action == "app.quit", f"{path.name}: {action}"


def test_no_import_cycles_within_tui():
    mods = _modules(TUI)
    graph = {m: {r for n in _imported(p.read_text(), m, p.name == "__init__.py") if (r := _resolve(n, set(mods))) and r != m} for m, p in mods.items()}
    assert "tui.app" not in graph["tui.commands"]

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), list(graph[start])
        while todo:
            m = todo.pop()
            if m == goal:
                return True
            if m not in seen:
                seen.add(m)
                todo += graph[m]
        return False

    assert [m for m in graph if reaches(m, m)] == []


def test_tui_imports_nothing_below_the_front_object():
    import forensics

    forensics_dir = Path(forensics.__file__).parent
    bad = []
    for mod, path in _modules(TUI).items():
        for name in _imported(path.read_text(), mod, path.name == "__init__.py"):
            if name != "forensics" and not name.startswith("forensics."):
                continue
            head, _, rest = name.partition(".")[2].partition(".")
            if not rest and head in forensics.__all__:
                continue  # `from forensics import Table`: the package's public surface
            target = f"forensics.{head}" if (forensics_dir / head).is_dir() or (forensics_dir / f"{head}.py").exists() else "forensics"
            if target not in FRONT:
                bad.append(f"{path.relative_to(TUI.parent)}: {name}")
    assert bad == []
