"""Replay, explain and whatif on the sample incidents, checked against the incidents' own evidence
(the winner's txnId and the exception in error.txt, read here with plain regexes)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from forensics.cli.main import main
from forensics.analysis.explain import explain_version
from forensics.log.delta_log import DeltaLog
from forensics.replay.windows import replay_table
from forensics.sets.commit_sets import StateIndex
from tests.helpers import winner_named_by

INCIDENTS = ["a-merge-partitions", "c-optimize-vs-delete", "d-alter-table", "e-streaming-shared-checkpoint"]


def _truth(incident: Path) -> dict:
    """What error.txt says, independently of forensics.errortext."""
    text = (incident / "error.txt").read_text()
    exc = re.search(r"(Concurrent\w+Exception|MetadataChangedException|ProtocolChangedException)", text).group(1)
    part = re.search(r"partition \[([^\]]*)\]", text)
    winner = winner_named_by(incident / "table", text)  # `committed at version N`, or the quoted commit's txnId
    return {"exception": exc, "winner": winner, "partition": part.group(1) if part else None}


@pytest.mark.parametrize("name", INCIDENTS)
def test_explain_names_exception_winner_partition_and_advice(sample_logs, spark, name, capsys):
    inc = sample_logs / name
    truth = _truth(inc)
    assert truth["winner"] is not None
    assert main(["explain", str(inc / "table"), str(truth["winner"]), "--error-file", str(inc / "error.txt"), "--json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    defeated = [d for d in out["defeatedAttempts"] if d["source"].startswith("error text")]
    assert defeated, out["defeatedAttempts"]
    d = defeated[0]
    assert d["exception"] == truth["exception"]
    assert d["loserOf"] == truth["winner"] == out["version"]
    if truth["partition"]:
        k, v = truth["partition"].split("=", 1)
        assert d["partition"] == {k: v}
    assert out["advice"], "explain must say what to change"


def test_incident_a_advice_rewrites_the_merge_condition(sample_logs, spark, capsys):
    inc = sample_logs / "a-merge-partitions"
    assert main(["explain-error", str(inc / "table"), "--error-file", str(inc / "error.txt"), "--json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    said = [f"{a['title']}: {a['detail']}" for a in out["advice"]]  # advice records, as explain's
    assert any("partition predicate" in a.lower() and "2024-06-18" in a for a in said)  # the loser's own partition


def test_replay_flags_incident_b_reordered_and_explain_shows_the_serial_order(sample_logs, spark):
    log = DeltaLog.open(str(sample_logs / "b-writeserializable-reorder" / "table"))
    report = replay_table(log)
    reordered = {v: x for v, x in report.verdicts.items() if x.verdict == "reordered"}
    assert list(reordered) == [3]
    assert reordered[3].reordered_before == [2]
    exp = explain_version(log, 3)
    assert exp.log_order == [2, 3] and exp.serial_order == [3, 2]
    assert any("Serializable" in a.title for a in exp.advice)
    # the INSERT's file survives the DELETE: it is still active at the latest version
    insert_files = {f.path for f in exp.sets.write.adds} | {r["path"] for r in _adds(log, 2)}
    assert insert_files and insert_files <= {f.path for f in StateIndex(log).lifetimes.files_at(3)}


def _adds(log: DeltaLog, v: int) -> list[dict]:
    return [r for r in log.actions_of(v).to_dicts() if r["kind"] == "add"]


def test_whatif_reproduces_incident_a(sample_logs, spark, capsys):
    inc = sample_logs / "a-merge-partitions"
    truth = _truth(inc)
    assert main(["whatif", str(inc / "table"), "--read-version", str(truth["winner"] - 1), "--operation", "MERGE",
                 "--predicate", "t.id = s.id", "--partition", "date=2024-06-18", "--until", str(truth["winner"]), "--json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "abort" and out["exception"] == truth["exception"]
    assert out["winningVersion"] == truth["winner"]
    k, v = truth["partition"].split("=", 1)
    assert out["partition"] == {k: v}
    # the text the writer's release prints (Delta-Lake/4.4.0: the 4.1+ sub-classed form) is the very text delta-spark printed, but for the table's name (the tool cannot know it)
    real = (inc / "error.txt").read_text().strip().split(": ", 1)[1]
    assert "[date=2024-06-19]" in real and "committed at version 3" in real
    assert out["message"] == re.sub(r"delta\.`[^`]+`", "delta.`<table path>`", real)


def test_a_real_engines_log_has_no_anomaly(sample_logs, spark):
    """Every commit of `busy` really committed (delta-rs checked it): the replay must agree."""
    log = DeltaLog.open(str(sample_logs / "busy" / "table"))
    report = replay_table(log)
    checked = [v for v in report.verdicts.values() if v.verdict != "skipped"]
    assert len(checked) >= 30
    assert [v.version for v in checked if v.verdict == "anomaly"] == []


def test_too_old_java_is_one_line_with_a_fix(tmp_path, sample_logs):
    fake = tmp_path / "jdk" / "bin"
    fake.mkdir(parents=True)
    java = fake / "java"
    java.write_text('#!/bin/sh\necho \'openjdk version "11.0.22" 2024-01-16\' >&2\n')
    java.chmod(0o755)
    env = dict(os.environ, JAVA_HOME=str(tmp_path / "jdk"), DELTA_FORENSICS_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run([sys.executable, "-m", "forensics", "history", str(sample_logs / "quickstart" / "table")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 5
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Java 11" in lines[0] and "17" in lines[0] and "JAVA_HOME" in lines[0]
    assert "Traceback" not in p.stderr


def _engine_commit(log: Path, v: int, info: dict, adds: list[str]) -> None:
    lines = [{"commitInfo": {"timestamp": 1795674528000 + v * 1000, **info,
                             "engineInfo": "Apache-Spark/3.5.0 Delta-Lake/3.1.0", "txnId": f"t{v}"}}]
    if v == 0:
        schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}},
                                               {"name": "p", "type": "string", "nullable": True, "metadata": {}}]}
        lines += [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
                  {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": json.dumps(schema),
                                "partitionColumns": ["p"], "configuration": {}, "createdTime": 1795674528000}}]
    lines += [{"add": {"path": f"p={p}/part-{v}-{i}.c000.snappy.parquet", "partitionValues": {"p": p}, "size": 669,
                       "modificationTime": 1795674528000 + v * 1000, "dataChange": True}} for i, p in enumerate(adds)]
    (log / f"{v:020d}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def test_an_append_that_read_the_table_is_no_anomaly_when_only_its_assumed_read_conflicts(tmp_path, spark):
    """delta-spark records no read for an append that read the table (WRITE, Append, isBlindAppend
    false): the whole-table read is the tool's assumption. A blind append to another partition that
    landed in its window conflicts only under that assumption, and delta-spark committed it (the live
    race tests/test_live_delta_spark.py reproduces it): no anomaly, and the story says why."""
    log = tmp_path / "t" / "_delta_log"
    log.mkdir(parents=True)
    append = {"operation": "WRITE", "operationParameters": {"mode": "Append", "partitionBy": "[]"}, "isolationLevel": "Serializable"}
    _engine_commit(log, 0, {**append, "isBlindAppend": True}, ["a"])
    for v in (1, 2, 3):
        _engine_commit(log, v, {**append, "readVersion": v - 1, "isBlindAppend": True}, ["a", "b", "c"][: v])
    _engine_commit(log, 4, {**append, "readVersion": 3, "isBlindAppend": True}, ["c", "c"])
    _engine_commit(log, 5, {**append, "readVersion": 3, "isBlindAppend": False}, ["b", "b"])
    d = DeltaLog.open(str(tmp_path / "t"), use_cache=False)
    v5 = replay_table(d).verdicts[5]
    assert (v5.verdict, v5.certainty) == ("clean", "unknown"), v5.why
    assert "only an upper bound" in v5.why and "ConcurrentAppendException against v4" in v5.why
    story = explain_version(d, 5).story_text
    assert "no anomaly is claimed" in story and "none conflicted" not in story, story
