"""A gate for pipelines: `replay --fail-on` exits with the code of the verdict class it was asked
to stop on (17 reorder, 18 anomaly, 19 aborted), `--strict` still covers findings only, `--jsonl`
prints one schema-valid verdict per line, and `stats` takes several tables at once. All on the
sample incidents, read with the test run's one Spark session."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from forensics import GATE_PRECEDENCE, gate_match, load_schema
from forensics.errors import ExitCode
from helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
B = str(ROOT / "sample_logs" / "b-writeserializable-reorder" / "table")
F = str(ROOT / "sample_logs" / "f-delta-rs-aborted" / "table")
Q = str(ROOT / "sample_logs" / "quickstart" / "table")


@pytest.fixture(autouse=True)
def _in_process(spark, monkeypatch):
    """Every command here runs in this process, on the test run's Spark session."""
    monkeypatch.setenv("DELTA_FORENSICS_ENGINE", "off")


def _lines(out: str) -> list[dict]:
    return [json.loads(x) for x in out.splitlines()]


def _validate(doc, name: str) -> None:
    v = jsonschema.Draft202012Validator(load_schema(name), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in v.iter_errors(doc)]
    assert errors == []


def test_fail_on_reorder_stops_on_the_writeserializable_reorder():
    rc, out, err = run_cli(["replay", B, "--fail-on", "reorder"])
    assert rc == int(ExitCode.GATE_REORDER) == 17
    assert "1 reordered" in out  # the report is printed as ever
    assert re.search(r"^--fail-on reorder: v3 \(exit 17\)$", err, re.M), err
    # the same table passes a gate on other classes, and plain --strict (findings only) as before
    assert run_cli(["replay", B, "--fail-on", "anomaly,aborted", "-q"])[0] == 0
    assert run_cli(["replay", B, "--strict", "-q"])[0] == 0
    assert run_cli(["replay", B, "--strict", "--fail-on", "reorder", "-q"])[0] == 17
    rc, _, err = run_cli(["replay", B, "--fail-on", "reorder", "-q"])
    assert rc == 17 and err == ""


def test_fail_on_passes_a_quiet_table():
    rc, _, err = run_cli(["replay", Q, "--fail-on", "reorder,anomaly,aborted", "-q"])
    assert rc == 0, err


def test_fail_on_aborted_stops_on_the_orphan_files_of_a_delta_rs_loser():
    rc, _, err = run_cli(["replay", F, "--fail-on", "aborted"])
    assert rc == int(ExitCode.GATE_ABORTED) == 19
    assert re.search(r"^--fail-on aborted: attempt-1.* \(exit 19\)$", err, re.M), err
    assert run_cli(["replay", F, "--fail-on", "reorder,anomaly", "-q"])[0] == 0  # the log itself shows no conflict


def test_the_most_severe_class_wins():
    """Lines of both tables together: a reorder and aborted attempts; the gate answers by GATE_PRECEDENCE."""
    lines = _lines(run_cli(["replay", B, "--jsonl", "-q"])[1]) + _lines(run_cli(["replay", F, "--jsonl", "-q"])[1])
    assert GATE_PRECEDENCE == ("anomaly", "aborted", "reorder")
    assert gate_match(lines, ("reorder", "aborted")) == "aborted"
    assert gate_match(lines, ("reorder",)) == "reorder"
    assert gate_match(lines, ("anomaly",)) is None


def test_usage_errors_are_one_line():
    for argv, words in [
        (["replay", B, "--fail-on", "reorder,conflicts"], "'conflicts'"),
        (["replay", B, "--fail-on", ","], "got nothing"),
        (["replay", B, "--json", "--jsonl"], "choose one"),
        (["replay", F, "--fail-on", "aborted", "--no-evidence"], "--no-evidence"),
        (["replay", B, "--jsonl", "--partition-by", "date"], "--partition-by"),
    ]:
        rc, out, err = run_cli(argv)
        assert rc == int(ExitCode.USAGE), argv
        assert out == "" and len(err.strip().splitlines()) == 1 and words in err, (argv, err)


def test_strict_help_says_it_covers_findings_only():
    from forensics.cli.main import build_parser

    sub = next(a for a in build_parser(["replay"])._actions if a.__class__.__name__ == "_SubParsersAction")
    text = sub.choices["replay"]._option_string_actions["--strict"].help
    assert "findings only" in text and "--fail-on" in text


def test_jsonl_is_one_valid_verdict_per_line_and_says_what_json_says():
    for table in (B, F):
        rc, out, _ = run_cli(["replay", table, "--jsonl", "-q", "--utc"])
        assert rc == 0
        lines = _lines(out)
        for line in lines:
            _validate(line, "replay-jsonl")
        doc = json.loads(run_cli(["replay", table, "--json", "-q"])[1])
        windows = [x for x in lines if x["kind"] == "window"]
        attempts = [x for x in lines if x["kind"] == "attempt"]
        assert [w["version"] for w in windows] == [c["version"] for c in doc["commits"]]
        assert [w["verdict"] for w in windows] == [c["verdict"] for c in doc["commits"]]
        assert [a["id"] for a in attempts] == [a["id"] for a in doc["attempts"]]
        assert all(a["verdict"] == "aborted" for a in attempts)
        assert all(x["table"] == doc["table"] for x in lines)
    assert [w["verdict"] for w in windows] and attempts  # f: skipped windows and aborted attempts
    b = _lines(run_cli(["replay", B, "--jsonl", "-q"])[1])
    assert [(x["version"], x["verdict"], x["reorderedBefore"]) for x in b] == [(3, "reordered", [2])]
    assert b[0]["timestamp"] == json.loads(run_cli(["history", B, "--json", "-q"])[1])[3]["timestamp"]
    bad = dict(b[0], verdict="maybe")
    with pytest.raises(AssertionError):
        _validate(bad, "replay-jsonl")


def test_stats_over_several_tables():
    rc, out, err = run_cli(["stats", B, F, "-q", "--utc"])
    assert rc == 0, err
    assert B in out and F in out
    one = [json.loads(run_cli(["stats", t, "--json", "-q"])[1]) for t in (B, F)]
    total = sum(d["totals"]["commits"] for d in one)
    assert re.search(rf"^all 2 tables: commits: {total} ", out, re.M), out[-800:]
    rc, out, _ = run_cli(["stats", B, F, "--json", "-q"])
    multi = json.loads(out)
    _validate(multi, "stats")
    assert [d["table"] for d in multi["tables"]] == [B, F]
    assert multi["tables"] == [{k: v for k, v in d.items() if k != "schema_version"} for d in one]
    assert multi["combined"]["tables"] == 2
    for k, v in multi["combined"]["totals"].items():
        assert v == sum(d["totals"][k] for d in one), k
    # one table: the document as before (no wrapper)
    assert "table" in one[0] and "tables" not in one[0]
    _validate(one[0], "stats")


def test_docs_document_the_gate_codes():
    readme = "\n".join((ROOT / "docs" / page).read_text(encoding="utf-8") for page in ("exit-codes.md", "commands.md", "json.md"))
    for code in (ExitCode.GATE_REORDER, ExitCode.GATE_ANOMALY, ExitCode.GATE_ABORTED, ExitCode.INTERRUPTED):
        assert re.search(rf"^\| {int(code)} \| ", readme, re.M), code
    assert "replay-jsonl" in readme and "--fail-on" in readme and "watch TABLE" in readme
