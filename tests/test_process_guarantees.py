"""docs/RELIABILITY.md's promises, shown with real processes.

Every answer is compared with a fresh `--no-cache` parse of the same log, in its own process or
(where a test says so, to save a JVM start) on the test's Spark session;
no run may print a traceback, and nothing may be written under the table. Bounded: a few
processes and seeded random kill points; heavier runs are marked `live` (`make test-live`).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import run_cli, tree_state



@pytest.fixture
def live_only(request):
    """`live` tests run under `make test-live` (pytest -m live) or DELTA_FORENSICS_LIVE=1 only."""
    if "live" not in (request.config.getoption("markexpr") or "") and os.environ.get("DELTA_FORENSICS_LIVE") != "1":
        pytest.skip("live: run with `make test-live`")


CLI = [sys.executable, "-m", "forensics"]
QUICK = "quickstart"  # delta-rs, 20 versions, a checkpoint at 18


def cli(argv: list[str], cache: Path, **env) -> subprocess.Popen:
    e = {**os.environ, "DELTA_FORENSICS_CACHE_DIR": str(cache), **env}
    return subprocess.Popen(CLI + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)


def finish(p: subprocess.Popen, timeout: float = 240) -> tuple[int, str, str]:
    out, err = p.communicate(timeout=timeout)
    assert "Traceback" not in err, err
    return p.returncode, out, err


def answer(t: Path, cache: Path, cmd: str, *extra: str) -> object:
    rc, out, err = finish(cli([cmd, str(t), "--json", *extra], cache))
    assert rc == 0, err
    doc = json.loads(out)
    if isinstance(doc, dict):
        doc.pop("findings", None)
    return doc


def fresh(t: Path, tmp: Path, cmd: str) -> object:
    return answer(t, tmp / f"nocache-{time.monotonic_ns()}", cmd, "--no-cache")


@pytest.fixture
def quick(sample_logs, tmp_path) -> Path:
    t = tmp_path / "t"
    shutil.copytree(sample_logs / QUICK / "table", t)
    return t


def test_writer_commits_while_history_reads(tmp_path):
    """delta-rs appends 12 commits while `history` runs 3 times: each answer is the no-cache
    answer of the versions it saw (a prefix of the final log), nothing torn, nothing extra."""
    import deltalake
    import pyarrow as pa

    t = tmp_path / "t"
    deltalake.write_deltalake(str(t), pa.table({"id": [0]}))
    cache = tmp_path / "cache"
    writer = subprocess.Popen([sys.executable, "-c", (
        "import sys, time, deltalake, pyarrow as pa\n"
        "for i in range(1, 13):\n"
        "    deltalake.write_deltalake(sys.argv[1], pa.table({'id': [i]}), mode='append'); time.sleep(0.3)\n"), str(t)])
    seen = []
    try:
        while writer.poll() is None or len(seen) < 3:
            seen.append(answer(t, cache, "history"))
            if len(seen) >= 3 and writer.poll() is not None:
                break
    finally:
        writer.wait(timeout=120)
    assert writer.returncode == 0
    final = fresh(t, tmp_path, "history")
    assert [r["version"] for r in final] == list(range(13))
    for got in seen:
        assert got == final[: len(got)], "an answer differs from the no-cache parse of the versions it saw"
    assert answer(t, cache, "history") == final  # the cache caught up


def test_processes_fill_one_empty_cache(quick, tmp_path, spark):
    """Four processes start on one empty cache at once: equal answers (the no-cache ones parsed on
    the test's Spark session), one published generation, nothing written under the table."""
    before = tree_state(quick)
    cache = tmp_path / "cache"
    cmds = ["history", "snapshot", "replay", "snapshot"]
    procs = [cli([c, str(quick), "--json"], cache) for c in cmds]
    outs = [finish(p) for p in procs]
    want = {c: _inproc(quick, c, "--no-cache") for c in set(cmds)}
    _each_equals(cmds, outs, want)
    tables = list((cache / "tables").iterdir())
    assert len(tables) == 1 and (tables[0] / "current").is_file()
    assert not list(tables[0].glob(".tmp-*")), "a writer left a half-built generation"
    assert answer(quick, cache, "history") == want["history"]  # read back from the cache
    assert tree_state(quick) == before


def _kill_loop(t: Path, tmp_path: Path, cache: Path, seed: int, runs: int, prepare=None) -> int:
    """SIGKILL `history` at seeded random points; after each, a run must give the no-cache answer
    (parsed on the test's Spark session)."""
    rng = random.Random(seed)
    killed = 0
    for i in range(runs):
        if prepare:
            prepare(i)
        p = cli(["history", str(t), "--json"], cache)
        time.sleep(rng.uniform(0.5, 6.0))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            killed += 1
        p.communicate(timeout=60)
        assert answer(t, cache, "history") == _inproc(t, "history", "--no-cache"), f"run {i}"
    return killed


@pytest.mark.parametrize("runs", [1, pytest.param(3, marks=pytest.mark.live)])
def test_sigkill_during_cache_write_and_refresh(sample_logs, tmp_path, spark, runs, request):
    """Killed while building the cache (empty cache) and while refreshing it (commits 10..19
    arrive two at a time): the next run answers as a no-cache parse does. Seeded: 1 + 1 kills
    (`make test`), 3 + 3 (`make test-live`)."""
    if runs > 1:
        request.getfixturevalue("live_only")
    t = tmp_path / "t"
    shutil.copytree(sample_logs / QUICK / "table", t)
    cache = tmp_path / "cache"
    _kill_loop(t, tmp_path, cache, seed=7, runs=runs, prepare=lambda i: shutil.rmtree(cache, ignore_errors=True))
    log = t / "_delta_log"
    later = sorted(p for p in log.iterdir() if p.name[:20].isdigit() and int(p.name[:20]) >= 10)
    held = tmp_path / "held"
    held.mkdir()
    for p in later:
        shutil.move(p, held / p.name)
    shutil.rmtree(cache, ignore_errors=True)
    answer(t, cache, "history")  # a cache of versions 0..9

    def arrive(i: int) -> None:
        for p in sorted(held.iterdir())[:2]:
            shutil.move(p, log / p.name)

    _kill_loop(t, tmp_path, cache, seed=11, runs=runs, prepare=arrive)


def _each_equals(cmds: list[str], outs: list[tuple[int, str, str]], want: dict) -> None:
    """Every concurrent CLI answer exited 0 and equals the `--no-cache` one (findings aside)."""
    for c, (rc, out, err) in zip(cmds, outs):
        assert rc == 0, err
        doc = json.loads(out)
        if isinstance(doc, dict):
            doc.pop("findings", None)
        assert doc == want[c], c


def _inproc(t: Path, cmd: str, *extra: str) -> object:
    rc, out, err = run_cli([cmd, str(t), "--json", *extra])
    assert rc == 0 and "Traceback" not in err, err
    doc = json.loads(out)
    if isinstance(doc, dict):
        doc.pop("findings", None)
    return doc


@pytest.mark.parametrize("damage", ["truncate", "empty", "garbage", "delete"])
def test_damaged_cache_files(quick, tmp_path, damage, spark):
    """Every file of a cache generation damaged in turn: the answer is still the no-cache one
    (in-process runs on the test's Spark session: the damage is to real files all the same)."""
    cache = Path(os.environ["DELTA_FORENSICS_CACHE_DIR"])
    want = {c: _inproc(quick, c, "--no-cache") for c in ("history", "snapshot")}
    _inproc(quick, "snapshot")  # fills the cache (commits, actions, checkpoint tables)
    files = sorted(p for p in (cache / "tables").rglob("*") if p.is_file() and not p.name.startswith("."))
    assert any(p.name == "current" for p in files) and any(p.name.startswith("checkpoint-") for p in files)
    pristine = {p: p.read_bytes() for p in files}
    for f in files:
        for p, data in pristine.items():
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        if damage == "truncate":
            f.write_bytes(pristine[f][: len(pristine[f]) // 2])
        elif damage == "empty":
            f.write_bytes(b"")
        elif damage == "garbage":
            f.write_bytes(pristine[f][:8] + os.urandom(max(8, len(pristine[f]) - 8)))
        else:
            f.unlink()
        for c in ("history", "snapshot"):
            assert _inproc(quick, c) == want[c], (f.name, c)


# --------------------------------------------------------------------------------------
# the TUI: refresh while a writer commits; two TUIs and the CLI on one empty cache
# --------------------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[1]

# A delta-rs writer that appends one version every ~0.2 s until `stop` exists (or 90 s pass).
PACED_WRITER = (
    "import sys, time, pathlib, deltalake, pyarrow as pa\n"
    "stop, t0 = pathlib.Path(sys.argv[2]), time.monotonic()\n"
    "for i in range(1, 1000):\n"
    "    deltalake.write_deltalake(sys.argv[1], pa.table({'id': [i]}), mode='append')\n"
    "    if stop.exists() or time.monotonic() - t0 > 90: break\n"
    "    time.sleep(0.2)\n")

# One TUI in its own process (Textual's headless Pilot, its own JVM on a cache miss): opens the
# table, waits for the list and the replay, prints what the list shows as JSON.
TUI_DRIVER = r"""
import asyncio, json, sys, time
from tui.app import ForensicsApp
from tui.widgets.header import TableHeader
from tui.widgets.version_list import VersionList

async def main(path):
    app = ForensicsApp(path, utc=True)
    async with app.run_test(size=(200, 50)) as pilot:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 200:
            await pilot.pause(0.1)
            h = app.screen.query_one(TableHeader)
            if h.load_state == "error":
                sys.exit("load failed: " + h.note)
            if h.replay_state != "done" or any(w.state.name in ("PENDING", "RUNNING") for w in app.workers):
                continue
            await pilot.pause(0.2)
            if any(w.state.name in ("PENDING", "RUNNING") for w in app.workers):
                continue
            rows = app.screen.query_one(VersionList).rows
            _, payload = app.screen.export_payload()
            print(json.dumps({"how": h.load_state, "versions": rows.version, "rows": payload["rows"]}))
            return
        sys.exit("the TUI did not settle in 200 s")

asyncio.run(main(sys.argv[1]))
"""


def tui_rows(payload_rows: list[dict]) -> tuple[list[dict], dict[int, str | None]]:
    """A TUI export's rows as `history --json` rows, and its verdict column."""
    rows = [{k: v for k, v in r.items() if k not in ("verdict", "windowSize")} for r in payload_rows]
    return rows, {r["version"]: r["verdict"] for r in payload_rows}


def bare(history: list[dict]) -> list[dict]:
    """`history --json` rows without the per-row `schema_version` the JSON contract adds."""
    return [{k: v for k, v in r.items() if k != "schema_version"} for r in history]


def delta_rs_files(t: Path) -> set[str]:
    """The files delta-rs's commits account for: each commit file and every file it added."""
    out = set()
    for f in (t / "_delta_log").glob("*.json"):
        out.add(f"_delta_log/{f.name}")
        for line in f.read_text().splitlines():
            if '"add"' in line and "add" in (a := json.loads(line)):
                out.add(a["add"]["path"])
    return out


async def _reloaded(pilot, timeout: float = 120) -> None:
    """Wait until the open, the rows and the replay of the last (re)load are done."""
    from tui.widgets.header import TableHeader

    app = pilot.app
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        await pilot.pause(0.05)
        h = app.screen.query_one(TableHeader)
        assert h.load_state != "error", h.note
        if h.replay_state == "done" and not any(w.state.name in ("PENDING", "RUNNING") for w in app.workers):
            await pilot.pause(0.1)
            if not any(w.state.name in ("PENDING", "RUNNING") for w in app.workers):
                return
        assert not h.replay_state.startswith("replay failed"), h.replay_state
    raise AssertionError("the TUI did not finish reloading")


async def test_tui_reloads_while_a_writer_commits(tmp_path, spark):
    """delta-rs appends a version every ~0.2 s while the TUI reloads (`r`) 4 times, then once
    more after the last commit: each list is the no-cache answer of the versions it saw (a prefix
    of the final log), the last one is all of it, and the TUI wrote nothing under the table."""
    import deltalake
    import pyarrow as pa

    from tui.app import ForensicsApp
    from tui.screens.main import MainScreen
    from tui.widgets.version_list import VersionList

    t = tmp_path / "t"
    deltalake.write_deltalake(str(t), pa.table({"id": [0]}))
    stop = tmp_path / "stop"
    app = ForensicsApp(str(t), utc=True, spark_factory=lambda: spark)
    seen: list[tuple[list[int], list[dict]]] = []
    overlapped = 0
    writer = subprocess.Popen([sys.executable, "-c", PACED_WRITER, str(t), str(stop)])
    try:
        async with app.run_test(size=(200, 50)) as pilot:
            await _reloaded(pilot)
            main = app.screen
            assert isinstance(main, MainScreen)

            def shown() -> None:
                _, payload = main.export_payload()
                seen.append((list(main.query_one(VersionList).rows.version), payload["rows"]))

            shown()
            for _ in range(4):
                alive = writer.poll() is None
                before = main.table
                await pilot.press("r")
                await _reloaded(pilot)
                assert main.table is not before  # the key did reload (a quick one may end within the press)
                overlapped += alive and writer.poll() is None
                shown()
            stop.touch()
            assert writer.wait(timeout=120) == 0
            after_writer = tree_state(t)
            await pilot.press("r")
            await _reloaded(pilot)
            shown()
            assert tree_state(t) == after_writer  # a reload writes nothing
    finally:
        stop.touch()
        writer.wait(timeout=120)
    print(f"versions per list: {[len(v) for v, _ in seen]}; reloads during commits: {overlapped}")
    assert overlapped >= 2, "the writer was not committing during the reloads"
    final = _inproc(t, "history", "--no-cache")  # on the test's Spark session: quicker than a process
    n = len(final)
    assert [r["version"] for r in final] == list(range(n)) and n >= 5
    for versions, rows in seen:
        got, _ = tui_rows(rows)
        assert versions == list(range(len(versions))) and got == bare(final[: len(versions)]), \
            "a reload's list differs from the no-cache parse of the versions it saw"
    lengths = [len(v) for v, _ in seen]
    assert lengths == sorted(lengths), "a reload showed fewer versions than the one before"
    # Commits landed between reloads (not necessarily before the first: a reload from the cache
    # can end before the writer's next commit, as in one CI run: [1, 1, 3, 7, 10, 16]).
    assert len(set(lengths[:-1])) >= 3, "the reloads during the writer's commits did not see new versions"
    assert seen[-1][0] == list(range(n)), "the last reload missed a commit"
    files = {str(p.relative_to(t)) for p in t.rglob("*") if p.is_file()}
    assert files == delta_rs_files(t), "something other than delta-rs's commits is under the table"
    assert {str(p.relative_to(t)) for p in t.rglob("*") if p.is_dir()} == {"_delta_log"}


@pytest.mark.parametrize("cmds", [["history"], pytest.param(["history", "replay", "stats"], marks=pytest.mark.live)],
                         ids=["history", "history-replay-stats"])
def test_two_tuis_and_the_cli_on_one_empty_cache(quick, tmp_path, monkeypatch, spark, cmds, request):
    """Two TUIs (each its own process and JVM) and CLI runs start at once on one empty cache:
    every answer is the no-cache one (parsed on the test's Spark session), the cache is then read
    without Spark, and nothing is written under the table. `make test`: 2 TUIs + `history`
    (3 processes); `make test-live`: + `replay` and `stats` (5)."""
    if len(cmds) > 1:
        request.getfixturevalue("live_only")
    before = tree_state(quick)
    cache = tmp_path / "cache"
    env = {**os.environ, "DELTA_FORENSICS_CACHE_DIR": str(cache), "TEXTUAL_ANIMATIONS": "none"}
    t0 = time.monotonic()
    tuis = [subprocess.Popen([sys.executable, "-c", TUI_DRIVER, str(quick)], cwd=REPO, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    procs = [cli([c, str(quick), "--json"], cache) for c in cmds]
    outs = [finish(p) for p in procs]
    shown = [finish(p) for p in tuis]
    print(f"{len(cmds) + 2} at once: {time.monotonic() - t0:.0f} s; TUIs: {[json.loads(o).get('how') for _, o, _ in shown if o]}")
    want = {c: _inproc(quick, c, "--no-cache") for c in {*cmds, "replay"}}  # on the test's Spark session: quicker
    print(f"no-cache answers: {time.monotonic() - t0:.0f} s")
    _each_equals(cmds, outs, want)
    verdicts = {r["version"]: r["verdict"] for r in want["replay"]["commits"]}
    for rc, out, err in shown:
        assert rc == 0, err
        doc = json.loads(out)
        rows, shown_verdicts = tui_rows(doc["rows"])
        assert doc["versions"] == [r["version"] for r in want["history"]] and rows == bare(want["history"])
        assert {v: x for v, x in shown_verdicts.items() if x is not None} == verdicts
    tables = list((cache / "tables").iterdir())
    assert len(tables) == 1 and (tables[0] / "current").is_file()
    assert not list(tables[0].glob(".tmp-*")), "a writer left a half-built generation"
    from forensics import Table

    monkeypatch.setenv("DELTA_FORENSICS_CACHE_DIR", str(cache))
    again = Table.from_cache(quick)  # no JVM: the cache as the five left it
    assert again is not None and again.read_from_cache
    assert again.history_rows() == bare(want["history"])
    assert tree_state(quick) == before


# --------------------------------------------------------------------------------------
# sizes beyond the heap
# --------------------------------------------------------------------------------------


def big_line_table(t: Path, entries: int) -> Path:
    """Version 1 is one add whose tags map has `entries` keys: one long, valid JSON line."""
    log = t / "_delta_log"
    log.mkdir(parents=True)
    schema = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
    head = [{"commitInfo": {"timestamp": 1718870000000, "operation": "WRITE", "engineInfo": "Apache-Spark/3.5.1 Delta-Lake/3.2.0"}},
            {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
            {"metaData": {"id": "m", "format": {"provider": "parquet", "options": {}}, "schemaString": schema,
                          "partitionColumns": [], "configuration": {}, "createdTime": 1}}]
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(h) for h in head) + "\n")
    with open(log / f"{1:020d}.json", "w") as fh:
        fh.write(json.dumps({"commitInfo": {"timestamp": 1718870001000, "operation": "WRITE", "readVersion": 0}}) + "\n")
        fh.write('{"add":{"path":"a.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"tags":{'
                 + ",".join('"k%09d":"v%020d"' % (i, i) for i in range(entries)) + "}}}\n")
    return t


def test_commit_too_big_for_the_set_heap_is_named_in_one_line(tmp_path):
    """A 20 MB line with the heap pinned at 512m: refused before the JVM starts, naming the
    version and the file's size (not a JVM killed by OutOfMemoryError)."""
    from forensics.log.listing import list_log
    from forensics.log.sizes import longest_line

    t = big_line_table(tmp_path / "t", 550_000)
    f = list_log(str(t)).commits[1]
    assert longest_line(f) == max(len(x) for x in (t / "_delta_log" / f.name).read_bytes().split(b"\n"))
    t0 = time.monotonic()
    rc, out, err = finish(cli(["history", str(t), "--json"], tmp_path / "c", DELTA_FORENSICS_DRIVER_MEMORY="512m"))
    assert rc == 6 and not out.strip()
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and "version 1" in lines[0] and f"{f.size / (1 << 20):.0f} MB" in lines[0], err
    assert "DELTA_FORENSICS_DRIVER_MEMORY" in lines[0]
    assert time.monotonic() - t0 < 30  # no JVM was started for it


@pytest.mark.live
def test_commit_beyond_the_default_heap_gets_a_sized_heap(tmp_path, live_only):
    """A 37 MB line killed the 1 GB heap's JVM; sized from the listing (about 2.1 GB) it is read."""
    t = big_line_table(tmp_path / "t", 1_000_000)
    env = {k: v for k, v in os.environ.items() if k != "DELTA_FORENSICS_DRIVER_MEMORY"}
    p = subprocess.run(CLI + ["history", str(t), "--json"], capture_output=True, text=True, timeout=600,
                       env={**env, "DELTA_FORENSICS_CACHE_DIR": str(tmp_path / "c")})
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert [r["version"] for r in json.loads(p.stdout)] == [0, 1]
