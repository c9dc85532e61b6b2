"""Blame when the log is silent (issue 22, items 6-7): delta-rs records no readVersion for plain
writes, so replay alone reads "no conflicts". `replay` says why in its first lines and lists the
aborted attempts the evidence found as rows, each with its attribution; `stats` counts them.

The table is written here by the real delta-rs writer (deltalake 1.6.6): two stale handles lose
with CommitFailedError. Expected facts come from the writer (the versions each step produced, the
error texts) and the commit files, never from the code under test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import run_cli
from rich.cells import cell_len

deltalake = pytest.importorskip("deltalake")


def _batch(ids: list[int], date: str):
    import pyarrow as pa

    return pa.table({"id": pa.array(ids, pa.int64()), "date": pa.array([date] * len(ids)),
                     "status": pa.array(["ok" if i % 3 else "cancelled" for i in ids])})


@pytest.fixture(scope="module")
def silent(tmp_path_factory):
    """The incident: (table path, facts recorded while writing it)."""
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
    from deltalake.exceptions import CommitFailedError

    p = str(tmp_path_factory.mktemp("silent") / "t")
    for k in range(4):
        write_deltalake(p, _batch(list(range(k * 10, k * 10 + 10)), "2024-06-19"), mode="append", partition_by=["date"])
    a, b = DeltaTable(p), DeltaTable(p)
    read1 = b.version()
    a.delete("date = '2024-06-19' AND status = 'cancelled'")
    delete_v = DeltaTable(p).version()
    with pytest.raises(CommitFailedError) as e1:
        b.update(predicate="date = '2024-06-19'", updates={"status": "'x'"})
    write_deltalake(p, _batch([100, 101], "2024-06-19"), mode="append",
                    commit_properties=CommitProperties(app_transactions=[Transaction("nightly-etl", 42)]))
    write_deltalake(p, _batch([200, 201, 202], "2024-06-20"), mode="append")
    write_deltalake(p, _batch([203, 204, 205], "2024-06-20"), mode="append")
    a, b = DeltaTable(p), DeltaTable(p)
    read2 = b.version()
    a.optimize.compact(partition_filters=[("date", "=", "2024-06-20")])
    optimize_v = DeltaTable(p).version()
    with pytest.raises(CommitFailedError) as e2:
        b.delete("date = '2024-06-20' AND status = 'cancelled'")
    for e in (e1, e2):  # delta-rs's words for Delta's ConcurrentAppendException
        assert "concurrent transactions added new data" in str(e.value)
    infos = {}
    for f in sorted((Path(p) / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            if '"commitInfo"' in line:
                infos[int(f.stem)] = json.loads(line)["commitInfo"]
    return Path(p), dict(read1=read1, delete_v=delete_v, read2=read2, optimize_v=optimize_v, infos=infos)


def _cli(monkeypatch, width: int, *argv: str) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    rc, out, err = run_cli([*argv, "-q"])
    assert rc == 0, err
    assert "Traceback" not in err
    return out


def _no_read_version(infos: dict[int, dict]) -> list[int]:
    """Versions whose commit records no readVersion and so had a window to check (v0 has none)."""
    return [v for v, ci in infos.items() if v > 0 and ci.get("readVersion") is None]


def test_replay_says_first_why_the_log_shows_no_conflict(silent, monkeypatch, spark):
    path, f = silent
    silent_vs = _no_read_version(f["infos"])
    assert len(silent_vs) == 6  # the six plain appends
    engines = {f["infos"][v]["engineInfo"] for v in silent_vs}
    out = _cli(monkeypatch, 80, "replay", str(path))
    head = " ".join(" ".join(out.splitlines()[1:6]).split())  # the paragraph, as wrapped at 80 columns
    assert f"{len(silent_vs)} of {len(f['infos'])} commits record no readVersion" in head, head
    for eng in engines:
        assert eng in head, (eng, head)
    assert "delta-rs writes none for plain writes" in head and "no conflict" in head
    assert "2 aborted attempts" in head and "`evidence`" in head and "`explain-error`" in head
    assert all(cell_len(line) <= 80 for line in out.splitlines()), out


def _attempt_rows(out: str) -> dict[int, str]:
    rows, last = {}, None
    for line in out.splitlines():
        m = re.match(r"attempt (\d+)\s", line)
        if m:
            last = int(m.group(1))
            rows[last] = line
        elif last is not None and line.startswith(" " * 12) and line.strip():
            rows[last] += " " + line.strip()
        else:
            last = None
    return rows


@pytest.mark.parametrize("width", [80, 200])
def test_replay_lists_the_aborted_attempts_with_their_winner(silent, monkeypatch, spark, width):
    path, f = silent
    out = _cli(monkeypatch, width, "replay", str(path))
    rows = _attempt_rows(out)
    assert sorted(rows) == [1, 2], out
    expect = {1: (f["read1"], "UPDATE", f["delete_v"]), 2: (f["read2"], "DELETE", f["optimize_v"])}
    for n, (read, op, winner) in expect.items():
        row = " ".join(rows[n].split())
        assert re.match(rf"attempt {n} {read} {op} (\S+ )?aborted lost to v{winner} \(ConcurrentAppendException\)", row), row
        assert "…" not in rows[n]  # nothing that matters cut at 80 columns
    assert all(cell_len(line) <= width for line in out.splitlines())
    words = " ".join(out.split())
    assert "`evidence TABLE`" in words and "`explain-error TABLE --error-file FILE`" in words

    quiet = _cli(monkeypatch, 80, "replay", str(path), "--no-evidence")
    assert not _attempt_rows(quiet) and "not looked for (--no-evidence)" in quiet


def test_replay_json_carries_the_attempts_and_validates(silent, monkeypatch, spark):
    import jsonschema

    from forensics import load_schema

    path, f = silent
    doc = json.loads(_cli(monkeypatch, 200, "replay", str(path), "--json"))
    v = jsonschema.Draft202012Validator(load_schema("replay"), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in v.iter_errors(doc)]
    assert not errors, errors
    nrv = doc["noReadVersion"]
    assert nrv["commits"] == len(_no_read_version(f["infos"]))
    assert nrv["writers"] == [{"engineInfo": "delta-rs:py-1.6.6", "commits": nrv["commits"]}]
    got = [(a["operation"], a["operationFrom"], a["readVersions"], a["winningVersion"], a["exception"], a["ambiguous"])
           for a in doc["attempts"]]
    assert got == [("UPDATE", "content", [f["read1"]] * 2, f["delete_v"], "ConcurrentAppendException", False),
                   ("DELETE", "content", [f["read2"]] * 2, f["optimize_v"], "ConcurrentAppendException", False)]
    assert doc["attemptsWhy"] is None


def test_table_replay_adds_attempt_rows_when_asked(silent, spark):
    import forensics

    path, f = silent
    t = forensics.Table(str(path), spark=spark)
    assert t.replay().filter(t.replay()["verdict"] != "skipped").height == 0  # the log alone: nothing to see
    df = t.replay(with_evidence=True)
    aborted = df.filter(df["verdict"] == "aborted").sort("winningVersion")
    assert aborted["winningVersion"].to_list() == [f["delete_v"], f["optimize_v"]]
    assert aborted["operation"].to_list() == ["UPDATE", "DELETE"]


def test_stats_counts_conflicts_from_aborted_attempts(silent, monkeypatch, spark):
    import jsonschema

    from forensics import load_schema

    path, f = silent
    doc = json.loads(_cli(monkeypatch, 200, "stats", str(path), "--json"))
    errors = [e.message[:200] for e in jsonschema.Draft202012Validator(load_schema("stats")).iter_errors(doc)]
    assert not errors, errors
    tot = doc["totals"]
    assert (tot["conflicts"], tot["abortedConflicts"], tot["abortedKnownWinner"], tot["abortedAmbiguous"]) == (0, 2, 2, 0)
    ops = {f["infos"][v]["operation"] for v in (f["delete_v"], f["optimize_v"])}
    assert ops == {"DELETE", "OPTIMIZE"}
    cells = {(c["current"], c["winner"]): c["aborted"] for c in doc["operationMatrix"]["cells"]}
    # the losers' classes (an UPDATE, a DELETE: rewrites) against the winners' (a DELETE, an OPTIMIZE)
    assert cells == {("UPDATE/DELETE/MERGE", "UPDATE/DELETE/MERGE"): 1, ("UPDATE/DELETE/MERGE", "OPTIMIZE"): 1}
    atts = sorted(doc["retries"]["attempts"], key=lambda a: a["winningVersion"])
    assert [(a["operation"], a["operationFrom"], a["winningVersion"]) for a in atts] == [
        ("UPDATE", "content", f["delete_v"]), ("DELETE", "content", f["optimize_v"])]

    out = _cli(monkeypatch, 80, "stats", str(path))
    assert "conflicts from aborted attempts: 2 (2 known winner, 0 ambiguous; inferred)" in " ".join(out.split())
    assert "UNKNOWN" not in out
    assert f"attempt-1 UPDATE in date=2024-06-19 lost to v{f['delete_v']} (ConcurrentAppendException)" in out
    assert all(cell_len(line) <= 80 for line in out.splitlines())


def test_a_story_on_a_damaged_commit_says_so_first(silent, tmp_path, monkeypatch, spark):
    """Item 7: the winner's commit file gets a line no reader accepts; explain and explain-error say,
    right after their first line, that the answer stands on that damaged commit (and on what it assumes)."""
    import shutil

    path, f = silent
    copy = tmp_path / "t"
    shutil.copytree(path, copy)
    winner = copy / "_delta_log" / f"{f['delete_v']:020d}.json"
    with winner.open("a") as fh:
        fh.write("\n#!garbage {not json\n")
    err = tmp_path / "err.txt"
    err.write_text("CommitFailedError: Failed to commit transaction: Commit failed: a concurrent transactions added new data.\n")
    for argv in (["explain-error", str(copy), "--error-file", str(err)], ["explain", str(copy), str(f["delete_v"])]):
        out = _cli(monkeypatch, 1000, *argv)
        lines = out.splitlines()
        assert f"v{f['delete_v']}" in lines[0], lines[0]
        assert lines[1].startswith(f"Stands on a damaged commit: v{f['delete_v']}, whose commit file has a line the reader rejected"), lines[1]
        assert "not valid JSON" in lines[1] and "assumptions: what" in lines[1] and "most likely" in lines[1], lines[1]
    clean = _cli(monkeypatch, 1000, "explain-error", str(path), "--error-file", str(err))
    assert "Stands on" not in clean  # the undamaged table: no such line
