"""Counterfactual replays: isolation level and simulated partitioning, checked against the log files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest


def commits(table: Path) -> dict[int, list[dict]]:
    out = {}
    for f in sorted((table / "_delta_log").glob("*.json")):
        if re.fullmatch(r"\d{20}\.json", f.name):
            out[int(f.name[:20])] = [json.loads(x) for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]
    return out


def ci(acts: list[dict]) -> dict:
    return next((a["commitInfo"] for a in acts if "commitInfo" in a), {})


@pytest.fixture(scope="module")
def b_log(spark, sample_logs):
    from forensics.log.delta_log import DeltaLog

    return DeltaLog.open(str(sample_logs / "b-writeserializable-reorder" / "table"), use_cache=False)


@pytest.fixture(scope="module")
def b_versions(sample_logs):
    acts = commits(sample_logs / "b-writeserializable-reorder" / "table")
    delete = next(v for v, a in acts.items() if ci(a).get("operation") == "DELETE")
    insert = next(v for v, a in acts.items() if ci(a).get("isBlindAppend") and ci(acts[delete])["readVersion"] < v < delete)
    assert ci(acts[delete])["isolationLevel"] == "WriteSerializable"
    return delete, insert, acts


def test_serializable_would_abort_the_delete(b_log, b_versions):
    from forensics.analysis.counterfactual import isolation_counterfactual

    delete, insert, acts = b_versions
    cf = isolation_counterfactual(b_log, "Serializable")
    conflicts = [c for c in cf.appear if c.kind == "conflict"]
    assert [(c.version, c.exception, c.winning_version) for c in conflicts] == [(delete, "ConcurrentAppendException", insert)]
    added = {a["add"]["path"] for a in acts[insert] if "add" in a}
    assert conflicts[0].file in added
    assert [(c.version, c.kind, c.winning_version) for c in cf.vanish] == [(delete, "reorder", insert)]
    assert cf.unknown == []
    # as recorded (WriteSerializable) nothing changes
    same = isolation_counterfactual(b_log, "WriteSerializable")
    assert same.appear == [] and same.vanish == []


def test_replay_cli_shows_the_diff(sample_logs, b_versions, capsys):
    from forensics.cli.main import main

    delete, insert, _ = b_versions
    table = str(sample_logs / "b-writeserializable-reorder" / "table")
    assert main(["replay", table, "--isolation-level", "Serializable", "--json", "-q"]) == 0
    d = json.loads(capsys.readouterr().out)
    cf = d["counterfactual"]
    assert set(cf) >= {"appear", "vanish", "unknown"}
    assert [(c["version"], c["exception"], c["winningVersion"]) for c in cf["appear"]] == [(delete, "ConcurrentAppendException", insert)]
    assert main(["replay", table, "--isolation-level", "Serializable", "-q"]) == 0
    out = capsys.readouterr().out
    assert f"v{delete}: would abort with ConcurrentAppendException against v{insert}" in out
    assert "anomaly" not in out and "too coarsely" not in out  # a scenario's abort is not an anomaly of the log
    assert [c["after"] for c in cf["appear"] if c["kind"] == "conflict"] == ["would abort"]
    assert cf["counts"].get("wouldAbort") == 1 and "anomaly" not in cf["counts"]
    assert main(["replay", table, "--partition-by", "no_such_column", "-q"]) == 2
    assert main(["replay", table, "--partition-by", "date", "-q"]) == 2  # already a partition column


def _placeable(acts: dict[int, list[dict]], col: str) -> tuple[set[str], set[str]]:
    """Files whose stats say one value of `col` (min == max, no nulls), and the others."""
    stats_of: dict[str, dict] = {}
    paths = set()
    for a in acts.values():
        for x in a:
            for k in ("add", "remove"):
                if k in x:
                    paths.add(x[k]["path"])
                    if k == "add" and x[k].get("stats"):
                        stats_of[x[k]["path"]] = json.loads(x[k]["stats"])
    ok = set()
    for p in paths:
        s = stats_of.get(p) or {}
        lo, hi = s.get("minValues", {}).get(col), s.get("maxValues", {}).get(col)
        if lo is not None and lo == hi and not s.get("nullCount", {}).get(col) and not (isinstance(lo, str) and len(lo) >= 32):
            ok.add(p)
    return ok, paths - ok


def test_partition_by_places_files_from_stats(b_log, b_versions):
    from forensics.analysis.counterfactual import partition_counterfactual, repartitioned_log
    from forensics.replay.windows import replay_table

    delete, insert, acts = b_versions
    ok, bad = _placeable(acts, "status")
    cf = partition_counterfactual(b_log, "status")
    assert (cf.files_placed, cf.files_unknown) == (len(ok), len(bad))
    # with status as a partition column the DELETE's `status = 'cancelled'` is a partition predicate:
    # the blind INSERT of cancelled rows still matches it, so under Serializable it still aborts there
    alt, _ = repartitioned_log(b_log, "status")
    v = replay_table(alt, isolation_level="Serializable").verdicts[delete]
    assert v.verdict == "anomaly" and v.winning_version == insert and "status" in (v.partition or {})
    # by `id` no file holds a single value: the window cannot be told
    ok_id, bad_id = _placeable(acts, "id")
    cf_id = partition_counterfactual(b_log, "id")
    assert cf_id.files_unknown == len(bad_id) > 0
    assert [c.version for c in cf_id.unknown] == [delete] and cf_id.appear == [] and cf_id.vanish == []
    # the table on disk is untouched and the original log object unchanged
    assert "status" not in (replay_table(b_log).verdicts[delete].partition or {})
