"""The incident report (issue 16, "Answers a person can act on"): `explain V` and `explain-error`
lead with the story in plain words, then the evidence, passed checks folded.

Expected facts come from the incidents' own records (sample_logs/README.md, error.txt,
attempts.json and the commit files), never from the code under test. Every run is the real CLI
on the real sample tables.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers import assert_text_snapshot, run_cli

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"

# Per incident, what sample_logs/README.md says (the version it discusses, what each side did,
# where, which exception) and what the fix must contain.
INCIDENTS = {
    # "the 2024-06-19 MERGE won at v3, the 2024-06-18 MERGE aborted with ConcurrentAppendException
    # [date=2024-06-19] ... its retry landed at v4"
    "a-merge-partitions": dict(version=3, loser_op="MERGE", partition="date=2024-06-19", loser_partition="date=2024-06-18",
                               rule=("append",), fix="date = '2024-06-18'"),
    # "DELETE WHERE status = 'cancelled' read v1, a blind INSERT of cancelled rows landed at v2, the
    # DELETE landed at v3 (readVersion 1) without removing v2's file"
    "b-writeserializable-reorder": dict(version=3, loser_op="DELETE", partition="date=2024-06-25", loser_partition=None,
                                        rule=("append", "forgiven", "WriteSerializable"), fix="Serializable"),
    # "OPTIMIZE of date=2024-07-01 read f1..f4 at v4; a DELETE rewrote f2 at v5; OPTIMIZE aborted with
    # ConcurrentDeleteReadException"
    "c-optimize-vs-delete": dict(version=5, loser_op="OPTIMIZE", partition="date=2024-07-01", loser_partition="date=2024-07-01",
                                 rule=("delete", "read"), fix="OPTIMIZE"),
    # "a MERGE into date=2024-07-08 read v1; ALTER TABLE ADD COLUMNS landed at v2; the MERGE aborted
    # with MetadataChangedException"
    "d-alter-table": dict(version=2, loser_op=None, partition="date=2024-07-08", loser_partition="date=2024-07-08",
                          rule=("metadata",), fix="ALTER TABLE"),
    # "two instances of streaming query ... both ran epoch 3 on v3; one committed v4 with its txn, the
    # other aborted with ConcurrentTransactionException"
    "e-streaming-shared-checkpoint": dict(version=4, loser_op="STREAMING UPDATE", partition="date=2024-07-16",
                                          loser_partition="date=2024-07-16", rule=("streaming",), fix="checkpoint"),
    # "three stale delta-rs handles pinned at v2 lost against fresh-handle winners (DELETE on
    # date=2024-08-02, ...)"; error.txt is the first text: "a concurrent transactions added new data"
    "f-delta-rs-aborted": dict(version=3, loser_op="DELETE", partition="date=2024-08-02", loser_partition="date=2024-08-02",
                               rule=("append",), fix="date"),
}
EXCEPTIONS = re.compile(r"\w+Exception")
JARGON = ("§", "conflict-rules", "[superset]", "[subset]", "[exact]", "[unknown]", "[inferred]", "[doc]")
LABEL_PREFIX = re.compile(r"\b(exact|inferred): ")


def _op_in_log(table: Path, version: int) -> str:
    for line in (table / "_delta_log" / f"{version:020d}.json").read_text().splitlines():
        if '"commitInfo"' in line:
            return json.loads(line)["commitInfo"]["operation"]
    raise AssertionError(f"no commitInfo in version {version}")


def _cli(*argv: str) -> str:
    rc, out, err = run_cli([*argv, "-q"])
    assert rc == 0, (argv, err)
    assert "Traceback" not in err
    return out


def _check_story(first: list[str], expect: dict, ops: list[str], winner: int, partitions: list[str]) -> None:
    """Lines 1-5: the winner, each side's operation and partition, the rule in words, how sure with a reason, a fix."""
    text = "\n".join(first)
    assert f"v{winner}" in text, text
    for op in ops:
        assert op in text, (op, text)
    for p in partitions:
        assert p in text, (p, text)
    rule = next(ln for ln in first if ln.startswith("Rule"))
    words = EXCEPTIONS.sub("", rule)  # the rule is named in words, not only by the engine's class name
    for w in expect["rule"]:
        assert w.lower() in words.lower(), (w, rule)
    sure = next(ln for ln in first if ln.startswith("How sure:"))
    assert re.search(r"\b(exact|inferred)\b", sure) and ("because" in sure or "(" in sure), sure
    assert len(sure) > 40, sure  # the one reason, in words
    fix = next(ln for ln in first if ln.startswith("What to change:"))
    assert expect["fix"] in fix, fix


@pytest.mark.parametrize("name", sorted(INCIDENTS))
def test_first_five_lines_tell_the_incident(spark, monkeypatch, tmp_path, name):
    """On a copy with the sample's recorded file times (a checkout resets them; the evidence reads them)."""
    from forensics.synth.mtimes import restored_copy

    monkeypatch.setenv("COLUMNS", "1000")  # one story line per terminal line
    monkeypatch.setenv("DELTA_FORENSICS_UTC", "1")
    expect, inc = INCIDENTS[name], SAMPLES / name
    table, v = restored_copy(inc, tmp_path / "table"), INCIDENTS[name]["version"]
    out = _cli("explain", str(table), str(v))
    first = out.splitlines()[:5]
    ops = [_op_in_log(table, v)] + ([expect["loser_op"]] if expect["loser_op"] else [])
    _check_story(first, expect, ops, v, [p for p in (expect["partition"], expect["loser_partition"]) if p])
    assert re.search(r"\d\d:\d\d:\d\dZ", first[0]), first[0]  # when, in UTC as asked

    err = inc / "error.txt"
    if not err.exists():
        return
    out = _cli("explain-error", str(table), "--error-file", str(err))
    first = out.splitlines()[:5]
    ops = [_op_in_log(table, v)]  # the winner's; what the loser did is only inferred from an error text
    parts = [p for p in (expect["loser_partition"],) if p]
    _check_story(first, expect, ops, v, parts)
    assert first[0].startswith("Your transaction failed with"), first[0]


def test_times_are_local_with_offset_and_utc(spark, monkeypatch):
    import os
    import time

    monkeypatch.delenv("DELTA_FORENSICS_UTC", raising=False)
    monkeypatch.setenv("COLUMNS", "1000")
    old = os.environ.get("TZ")
    os.environ["TZ"] = "Europe/Berlin"
    time.tzset()
    try:
        out = _cli("explain", str(SAMPLES / "a-merge-partitions" / "table"), "3")
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
        time.tzset()
    first = out.splitlines()[0]
    # v3's commitInfo.timestamp, in Berlin with its offset, then in UTC (its date only where it differs)
    from datetime import datetime, timezone
    from zoneinfo import ZoneInfo

    at = json.loads(next(ln for ln in (SAMPLES / "a-merge-partitions" / "table" / "_delta_log" / f"{3:020d}.json")
                         .read_text().splitlines() if '"commitInfo"' in ln))["commitInfo"]["timestamp"] / 1000
    local, utc = datetime.fromtimestamp(at, ZoneInfo("Europe/Berlin")), datetime.fromtimestamp(at, timezone.utc)
    want_utc = f"{utc:%H:%M:%S}Z" if utc.date() == local.date() else f"{utc:%Y-%m-%d %H:%M:%S}Z"
    assert f"{local:%Y-%m-%d %H:%M:%S%z} ({want_utc})" in first, first
    assert re.search(r"\d+(\.\d)? s after v2", first), first  # how long after the version it read


def test_checks_fold_unless_verbose(spark, monkeypatch):
    import forensics

    monkeypatch.setenv("COLUMNS", "1000")
    table = SAMPLES / "b-writeserializable-reorder" / "table"
    checks = forensics.Table(str(table), spark=spark).explain(3).verdict.result.checks
    assert len(checks) > 3
    folded = _cli("explain", str(table), "3")
    winner_lines = [ln for ln in folded.splitlines() if re.match(r"\s+v2: \d+ check\(s\) passed", ln)]
    assert len(winner_lines) == 1, folded
    assert f"{len(checks) - 1} check(s) passed" in winner_lines[0]  # all but the one that forgave
    assert "forgiven (blind append, WriteSerializable)" in winner_lines[0]
    assert "rebase only" not in folded  # the no-op checks are counted, not listed
    # the check that decided is shown in full
    assert re.search(r"concurrent append: winner v2 is a blind append; forgiven under WriteSerializable", folded)
    verbose = _cli("explain", str(table), "3", "--verbose")
    assert sum(1 for ln in verbose.splitlines() if re.match(r"\s+v2 .+: (passed|failed|skipped): ", ln)) == len(checks)
    assert "rebase only" in verbose


def test_advice_keeps_the_users_aliases(spark, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")
    inc = SAMPLES / "a-merge-partitions"
    out = _cli("explain-error", str(inc / "table"), "--error-file", str(inc / "error.txt"),
               "--sql", "MERGE INTO sales t USING updates s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    fix = next(ln for ln in out.splitlines() if ln.startswith("What to change:"))
    assert "t.id = s.id AND t.date = '2024-06-18'" in fix, fix
    # Without the statement, the log's condition `(id#941L = id#936L)` has no aliases: no tautology is shown
    out = _cli("explain-error", str(inc / "table"), "--error-file", str(inc / "error.txt"))
    assert "id = id" not in out
    fix = next(ln for ln in out.splitlines() if ln.startswith("What to change:"))
    assert "target.date = '2024-06-18'" in fix, fix


def _explainable(table: Path) -> list[int]:
    """Versions whose commitInfo records a readVersion (a window to explain), first and last."""
    vs = []
    for f in sorted((table / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            if '"commitInfo"' in line and "readVersion" in json.loads(line)["commitInfo"]:
                vs.append(int(f.stem))
    return sorted({vs[0], vs[-1]}) if vs else [0]


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.iterdir() if (p / "table").is_dir()))
def test_no_jargon_in_human_output(spark, monkeypatch, name):
    monkeypatch.setenv("COLUMNS", "160")
    inc = SAMPLES / name
    t = str(inc / "table")
    versions = sorted({*_explainable(inc / "table"), *([INCIDENTS[name]["version"]] if name in INCIDENTS else [])})
    runs = [["replay", t, "--all"],
            ["whatif", t, "--read-version", "0", "--operation", "MERGE"],
            ["whatif", t, "--read-version", "0", "--operation", "WRITE", "--partition", "date=2024-06-18"],
            ["whatif", t, "--read-version", "0", "--operation", "DELETE", "--predicate", "id = 1"]]
    runs += [["explain", t, str(v), *extra] for v in versions for extra in ([], ["--verbose"])]
    if (inc / "error.txt").exists():
        runs += [["explain-error", t, "--error-file", str(inc / "error.txt"), "--verbose"],
                 ["explain-error", "--error-file", str(inc / "error.txt")]]
    for argv in runs:
        out = _cli(*argv)
        for j in JARGON:
            assert j not in out, (argv, j, out[max(0, out.find(j) - 200): out.find(j) + 100])
        m = LABEL_PREFIX.search(out)
        assert m is None, (argv, out[max(0, m.start() - 200): m.end() + 100])


def _tokens(text: str) -> list[str]:
    return text.split()


@pytest.mark.parametrize("name,version", [("b-writeserializable-reorder", 3), ("a-merge-partitions", 3)])
def test_explain_text_snapshots(spark, monkeypatch, tmp_path, name, version):
    """80 and 200 columns, in UTC; the table is a copy with its recorded file times (evidence reads them)."""
    from forensics.synth.mtimes import restored_copy

    table = restored_copy(SAMPLES / name, tmp_path / "table")
    monkeypatch.setenv("DELTA_FORENSICS_UTC", "1")
    monkeypatch.setenv("COLUMNS", "10000")
    whole = set(_tokens(_cli("explain", str(table), str(version))))
    for width in (80, 200):
        monkeypatch.setenv("COLUMNS", str(width))
        out = _cli("explain", str(table), str(version))
        for line in out.splitlines():
            assert len(line) <= width, (width, line)
        for tok in _tokens(out):
            # a word is whole, or ends in an ellipsis where the line could not hold it
            assert tok in whole or (tok.endswith("…") and any(w.startswith(tok[:-1]) for w in whole)), (width, tok)
        assert_text_snapshot(f"explain_{name[0]}{version}_{width}", out)


def test_story_comes_from_the_library(spark, monkeypatch):
    """One source: the API's story is what the terminal leads with and what JSON carries."""
    import forensics

    monkeypatch.setenv("COLUMNS", "1000")
    inc = SAMPLES / "a-merge-partitions"
    t = forensics.Table(str(inc / "table"), spark=spark)
    story = t.explain(3).story()
    assert [s.kind for s in story[:5]] == ["this", "other", "rule", "sure", "fix"]
    out = _cli("explain", str(inc / "table"), "3")
    assert out.splitlines()[:len(story)] == [s.text for s in story]
    assert t.explain(3).to_dict()["story"] == [s.text for s in story]
    err = t.explain_error((inc / "error.txt").read_text())
    assert [s.kind for s in err.story()[:5]] == ["this", "other", "rule", "sure", "fix"]
    assert err.to_dict()["story"] == [s.text for s in err.story()]
    assert "v3" in err.story()[0].text


TAUTOLOGY = re.compile(r"(?<![\w.])(\w+) = \1(?![\w.])")  # `id = id`: a condition that names no table


@pytest.mark.parametrize("name", [n for n in INCIDENTS if (SAMPLES / n / "error.txt").exists()])
def test_advice_examples_are_conditions_a_user_can_write(spark, name):
    """No advice example reads as a tautology: the log's MERGE conditions lost their aliases
    (`id#941L = id#936L` -> `id = id`), so one is never offered as an example, least of all for a
    loser that was no MERGE (explain --error-file and explain-error, JSON)."""
    table, err = SAMPLES / name / "table", SAMPLES / name / "error.txt"
    docs = [json.loads(_cli("explain-error", str(table), "--error-file", str(err), "--json"))]
    docs.append(json.loads(_cli("explain", str(table), str(INCIDENTS[name]["version"]), "--error-file", str(err), "--json")))
    advice = [a for d in docs for a in d.get("advice", [])]
    advice += [a for d in docs for x in d.get("defeatedAttempts", []) for a in x.get("advice", [])]
    assert advice
    for a in advice:
        for text in (a["example"] or "", a["detail"]):
            assert not TAUTOLOGY.search(text), (name, a)
