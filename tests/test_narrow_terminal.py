"""history, replay and stats at 80 and 200 columns, through the real CLI: stored text snapshots
(tests/text_snapshots/, DELTA_FORENSICS_UPDATE_SNAPSHOTS=1 rewrites them), and what an 80-column
terminal must still show whole, checked against values read here straight from the commit files.
Plus: the reorder count means one thing in `stats`, `replay` and the TUI header."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from helpers import assert_text_snapshot, run_cli
from rich.cells import cell_len
from test_stats import actions as commits
from test_stats import ci_of as ci
from test_stats import partitions

SAMPLES = {"busy": "busy", "b": "b-writeserializable-reorder"}
EXTRA = {("history", "busy"): ["--to", "40"]}  # 405 versions: the first 41 hold three stale windows


def utc_text(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S") + "Z"


def key(d: dict, snake: str):
    """A JSON field by its snake_case name or its camelCase successor."""
    if snake in d:
        return d[snake]
    head, *rest = snake.split("_")
    return d[head + "".join(w.title() for w in rest)]


@pytest.fixture(scope="module")
def tables():
    """Copies of the samples at a path of fixed length (/tmp/tmpXXXXXXXX/<name>/table), so a title
    line wraps the same on every machine, with the samples' recorded file times (evidence reads them)."""
    from forensics.synth.mtimes import restore_in_place

    repo = Path(__file__).resolve().parent.parent
    if not Path("/tmp").is_dir():
        pytest.skip("needs /tmp for a machine-independent table path")
    root = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        for short, name in SAMPLES.items():
            shutil.copytree(repo / "sample_logs" / name, root / short, symlinks=True)
            restore_in_place(root / short)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(monkeypatch, width: int, *argv: str) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setenv("DELTA_FORENSICS_UTC", "1")  # restored after the test (--utc sets it for the process)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    rc, out, err = run_cli([*argv, "--utc", "-q"])
    assert rc == 0, err
    return out


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize("short", list(SAMPLES))
@pytest.mark.parametrize("command", ["history", "replay", "stats"])
def test_snapshot(command, short, width, tables, monkeypatch, spark):
    out = run(monkeypatch, width, command, str(tables / short / "table"), *EXTRA.get((command, short), []))
    too_wide = [line for line in out.splitlines() if cell_len(line) > width]
    assert not too_wide, too_wide
    assert_text_snapshot(f"{command}_{short}_{width}", out.replace(str(tables), "/tmp/<tables>"))


def table_rows(out: str) -> tuple[str, dict[int, str]]:
    """(header line, rows by version) of the first table in `out` (the line above the rule)."""
    lines = out.splitlines()
    rule = next(i for i, line in enumerate(lines) if set(line.strip()) == {"─"})
    rows: dict[int, str] = {}
    last = None
    for line in lines[rule + 1:]:
        m = re.match(r"\s{0,12}(\d+)\s", line)  # the version column (a wrapped cell further right is not one)
        if m:
            last = int(m.group(1))
            rows[last] = line
        elif last is not None and line[:12].strip() == "" and line.strip():
            rows[last] += "\n" + line
        elif re.match(r"\s*attempt \d+\s", line) or (last is None and line[:12].strip() == "" and line.strip()):
            last = None  # an aborted attempt's row (and its wrapped lines): not a version
        else:
            break
    return lines[rule - 1], rows


def test_history_at_80_columns_keeps_the_priority_columns_whole(tables, monkeypatch, spark):
    path = tables / "busy" / "table"
    out = run(monkeypatch, 80, "history", str(path), "--to", "40")
    head, rows = table_rows(out)
    assert head.split() == ["version", "time", "operation", "blind", "+add", "-rm", "partitions"]
    assert "…" not in out
    assert "engine, user hidden" in out and "--json" in out  # said once, in one line
    acts = commits(path)
    assert sorted(rows) == [v for v in sorted(acts) if v <= 40]
    for v, row in rows.items():
        info = ci(acts[v])
        assert utc_text(info["timestamp"]) in row, (v, row)
        assert re.search(rf"\b{re.escape(info['operation'])}\b", row), (v, row)
        adds = sum(1 for a in acts[v] if "add" in a)
        removes = sum(1 for a in acts[v] if "remove" in a)
        assert re.search(rf"\s{adds}\s+{removes}\s", row), (v, row)
        parts = partitions(acts[v]) - {"(table)"}
        if len(parts) <= 3:
            assert set(re.findall(r"\w+=[\w-]+", row)) == parts, (v, row)


def test_replay_at_80_columns_keeps_the_verdict_whole(tables, monkeypatch, spark):
    b = tables / "b" / "table"
    acts = commits(b)
    delete = next(v for v, a in acts.items() if ci(a).get("operation") == "DELETE")
    rv = ci(acts[delete])["readVersion"]
    blind = [w for w in range(rv + 1, delete) if ci(acts[w]).get("isBlindAppend")]
    out = run(monkeypatch, 80, "replay", str(b))
    head, rows = table_rows(out)
    for h in ("version", "readVersion", "verdict", "winner / exception"):
        assert h in head
    row = rows[delete]
    assert re.search(rf"^\s*{delete}\s+{rv}\s", row)
    assert " reordered " in row + " " and "reordere…" not in out
    assert "forgiven: " + ", ".join(f"v{w}" for w in blind) in row

    busy = tables / "busy" / "table"
    acts = commits(busy)
    stale = {v: ci(a)["readVersion"] for v, a in acts.items()
             if ci(a).get("readVersion") is not None and ci(a)["readVersion"] < v - 1}
    out = run(monkeypatch, 80, "replay", str(busy))
    _, rows = table_rows(out)
    assert sorted(rows) == sorted(stale)
    for v, row in rows.items():
        assert re.match(rf"\s*{v}\s+{stale[v]}\s.*\b(clean|reordered|anomaly)\b", row), row
    note = next(line for line in out.splitlines() if "hidden at 80 columns" in line)
    assert "detail" in note and "--json" in note


def test_replay_says_the_profile_once(tables, monkeypatch, spark):
    out = run(monkeypatch, 200, "replay", str(tables / "busy" / "table"))
    _, rows = table_rows(out)
    assert len(rows) > 10
    assert out.count("(read from its source)") == 1  # the profile, in words, above the table
    assert not any("delta-rs [" in r for r in rows.values())


def test_stats_at_80_columns_labels_and_numbers(tables, monkeypatch, spark):
    path = tables / "busy" / "table"
    acts = commits(path)
    stale = [v for v, a in acts.items() if ci(a).get("readVersion") is not None and ci(a)["readVersion"] < v - 1]
    out = run(monkeypatch, 80, "stats", str(path))
    assert f"commits: {len(acts)}" in out and f"stale windows: {len(stale)}" in out
    assert re.search(r"reordered commits: \d+ \(\d+ forgiven pairs?\)", out)
    assert "…" not in out
    # the partitions table: each partition whole, with its commit count (computed here)
    per: dict[str, int] = {}
    for a in acts.values():
        for p in partitions(a):
            per[p] = per.get(p, 0) + 1
    section = out.split("Most contended partitions", 1)[1]
    for p, n in per.items():
        assert re.search(rf"^{re.escape(p)}\s+{n}\s", section, re.MULTILINE), p
    # the longest window, read→commit, from the commit files' timestamps
    ts = {v: ci(a)["timestamp"] for v, a in acts.items()}
    longest = max(ts[v] - ts[ci(acts[v])["readVersion"]] for v in stale)
    from forensics.times import fmt_duration

    assert f"longest window: {fmt_duration(longest)}" in out


# ---- counts that mean one thing --------------------------------------------------------


@pytest.fixture(scope="module")
def reordered_table(tmp_path_factory):
    """A WriteSerializable log whose reordered commits were forgiven more than one winner each."""
    path = tmp_path_factory.mktemp("reorders") / "t"
    rc, _, err = run_cli(["synth", str(path), "--commits", "300", "--stale", "0.6", "--partitions", "2",
                          "--engine-info", "Databricks-Runtime/15.4.x-scala2.12", "--checkpoint-interval", "0"])
    assert rc == 0, err
    return path


@pytest.mark.parametrize("which", ["busy", "synth"])
def test_reorder_counts_agree(which, tables, reordered_table, monkeypatch, spark):
    path = tables / "busy" / "table" if which == "busy" else reordered_table
    replay = json.loads(run(monkeypatch, 200, "replay", str(path), "--json"))
    rows = [c for c in replay["commits"] if c["verdict"] == "reordered"]
    n, pairs = len(rows), sum(len(key(c, "reordered_before")) for c in rows)
    if which == "synth":
        assert n > 5 and pairs > n  # commits and pairs differ here: the test can tell them apart
    assert (key(replay, "reordered_commits"), key(replay, "forgiven_pairs")) == (n, pairs)
    stats = json.loads(run(monkeypatch, 200, "stats", str(path), "--json"))
    totals = stats["totals"]
    assert totals["reorders"] == key(totals, "reordered_commits") == n
    assert key(totals, "forgiven_pairs") == pairs
    assert sum(c["reordered"] for c in key(stats, "operation_matrix")["cells"]) == pairs
    # per partition: a reordered commit counts once where its forgiven winners wrote (from the commit files)
    acts = commits(path)
    per: dict[str, int] = {}
    for c in rows:
        for p in set().union(*(partitions(acts[w]) for w in key(c, "reordered_before"))):
            per[p] = per.get(p, 0) + 1
    assert {p["partition"]: p["reorders"] for p in stats["partitions"] if p["reorders"]} == per
    # the terminal says both, labelled
    plural = "" if pairs == 1 else "s"
    assert f"reordered commits: {n} ({pairs} forgiven pair{plural})" in run(monkeypatch, 200, "stats", str(path))
    assert f"{n} reordered ({pairs} forgiven pair{plural})" in run(monkeypatch, 200, "replay", str(path))
    # the TUI header counts commits too, and says the pairs apart
    from forensics import Table
    from tui.widgets.header import TableHeader

    header = TableHeader("t", utc=True, replay=True)
    header.set_reactive(TableHeader.report, Table(str(path)).replay_report())
    shown = header.text().plain
    if n:
        assert f"reordered commits: {n} ({pairs} forgiven pair{plural})" in shown
    else:
        assert "reordered" not in shown
