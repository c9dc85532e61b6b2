"""Read and write sets (issue: per-commit read and write sets), on logs in delta-spark's on-disk
format built with forensics.synth, on the sample incidents, and across the corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forensics.log.delta_log import DeltaLog
from forensics.model import Bound
from forensics.sets.commit_sets import StateIndex, commit_sets
from forensics.synth import opparams as P
from forensics.synth.sparktable import SparkTable


@pytest.fixture(scope="module")
def spark_table(tmp_path_factory) -> Path:
    """v0 CTAS with 2 files in each of 3 days; v1 DELETE WHERE date = '2024-01-02' (partition-only);
    v2 blind append; v3 OPTIMIZE of 2024-01-01; v4 DELETE WHERE id = 3 (data predicate)."""
    d = tmp_path_factory.mktemp("sets") / "table"
    t = SparkTable(d, "Apache-Spark/3.5.1 Delta-Lake/3.2.0", seed=7, start_ms=1_700_000_000_000)
    days = ["2024-01-01", "2024-01-02", "2024-01-03"]
    files = [t.data_file(day, [i * 10 + k for k in range(3)], task=i) for i, day in enumerate(days) for _ in range(2)]
    t.create_as_select(files)
    t.tick(1000)
    d2 = [f for f in files if f.partition_values["date"] == "2024-01-02"]
    t.commit("DELETE", P.delete_params([P.eq(t.attr["date"], "2024-01-02")]), [f.remove(t.now) for f in d2], 0,
             metrics={"numRemovedFiles": "2"})
    t.tick(1000)
    new = [t.data_file("2024-01-03", [100, 101])]
    t.append(new, 1)
    t.tick(1000)
    d1 = [f for f in files if f.partition_values["date"] == "2024-01-01"]
    compacted = t.data_file("2024-01-01", [0, 1, 2, 10, 11, 12], data_change=False)
    t.commit("OPTIMIZE", P.optimize_params([P.eq(t.attr["date"], "2024-01-01")]),
             [*(f.remove(t.now, data_change=False) for f in d1), compacted], 2, level="SnapshotIsolation")
    t.tick(1000)
    victim = [f for f in files if f.partition_values["date"] == "2024-01-03"][:1]
    t.commit("DELETE", P.delete_params([P.eq(t.attr["id"], 20)]), [victim[0].remove(t.now)], 3)
    return d


def _sets(table: Path):
    log = DeltaLog.open(str(table))
    state = StateIndex(log)
    return log, state, {v: commit_sets(log, v, state) for v in log.versions}


def test_partition_only_delete_reads_exactly_the_matching_partitions(spark_table, spark):
    log, state, sets = _sets(spark_table)
    s = sets[1]
    assert s.read.partition_predicates == ["date = '2024-01-02'"]
    assert s.read.data_predicates == []
    assert s.read.files_bound == Bound.EXACT
    at0 = state.lifetimes.files_at(0)
    expected = sorted(f.path for f in at0 if f.partition_values["date"] == "2024-01-02")
    assert sorted(f.path for f in s.read.files) == expected == sorted(f.path for f in s.write.removes)
    j = s.to_dict()
    assert j["read"]["partitionPredicate"] == "date = '2024-01-02'"
    assert j["read"]["filesBound"] == "exact"


def test_blind_append_reads_nothing_and_optimize_reads_its_removes(spark_table, spark):
    _, _, sets = _sets(spark_table)
    append = sets[2]
    assert not append.read.recorded_read and append.read.files == []
    assert append.to_dict()["read"]["partitionPredicate"] is None
    assert append.write.is_blind_append and append.write.is_blind_append_recorded is True
    opt = sets[3]
    assert sorted(f.path for f in opt.read.files) == sorted(f.path for f in opt.write.removes)
    assert opt.read.files_bound == Bound.EXACT
    assert opt.read.partition_predicates == ["date = '2024-01-01'"]


def test_data_predicate_delete_reads_true_and_a_superset(spark_table, spark):
    _, state, sets = _sets(spark_table)
    s = sets[4]
    assert s.read.partition_predicates == ["TRUE"]  # conflict-rules §4.1: a data filter makes the partition part TRUE
    assert s.read.data_predicates == ["id = 20"]
    assert s.read.files_bound == Bound.SUPERSET
    removed = {f.path for f in s.write.removes}
    assert removed <= {f.path for f in s.read.files}
    # stats skipping keeps only files whose id range can hold 20
    for f in s.read.files:
        st = json.loads(f.stats)
        assert st["minValues"]["id"] <= 20 <= st["maxValues"]["id"]


def test_sets_cli_json_contract(spark_table, spark, capsys):
    from forensics.cli.main import main

    assert main(["sets", str(spark_table), "--json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [o["version"] for o in out] == [0, 1, 2, 3, 4]
    for o in out:
        assert set(o["read"]) >= {"partitionPredicate", "dataPredicates", "wholeTable", "files", "filesBound", "appIds", "why"}
        assert set(o["write"]) >= {"adds", "removes", "metadataChanged", "protocolChanged", "appIds", "domains", "isBlindAppend"}


def test_streaming_txn_app_ids_are_read_and_written(sample_logs, spark):
    log = DeltaLog.open(str(sample_logs / "e-streaming-shared-checkpoint" / "table"))
    state = StateIndex(log)
    streaming = [v for v in log.versions if (log.record(v).operation or "") == "STREAMING UPDATE"]
    assert streaming
    for v in streaming:
        s = commit_sets(log, v, state)
        assert s.read.app_ids == set(s.write.app_txns) and s.read.app_ids


# Corpus tables with DELETE / UPDATE / MERGE / OPTIMIZE commits (found by a plain scan of their JSON).
def _dml_tables(shared: Path) -> list[Path]:
    out = []
    for t in sorted((shared / "corpus" / "tables").iterdir()):
        for f in sorted((t / "_delta_log").glob("[0-9]" * 20 + ".json")):
            text = f.read_text(errors="replace")
            if any(f'"operation":"{op}"' in text for op in ("DELETE", "UPDATE", "MERGE", "OPTIMIZE")):
                out.append(t)
                break
    return out


@pytest.mark.shared
@pytest.mark.slow
def test_corpus_removes_are_within_exact_or_superset_read_files(shared_dir, spark):
    checked = 0
    for table in _dml_tables(shared_dir):
        log = DeltaLog.open(str(table))
        state = StateIndex(log)
        for v in log.versions:
            rec = log.record(v)
            if (rec.operation or "").upper() not in ("DELETE", "UPDATE", "MERGE", "OPTIMIZE"):
                continue
            s = commit_sets(log, v, state)
            if s.read.files_bound in (Bound.EXACT, Bound.SUPERSET):
                assert {f.path for f in s.write.removes} <= {f.path for f in s.read.files}, (table.name, v)
                checked += 1
    assert checked >= 100


@pytest.mark.shared
def test_corpus_partition_only_delete_is_exact(shared_dir, spark):
    table = shared_dir / "corpus" / "tables" / "krs-cdf-table-partitioned"
    log = DeltaLog.open(str(table))
    s = commit_sets(log, 2, StateIndex(log))
    assert s.read.partition_predicates == ["part = 0"]
    assert s.read.files_bound == Bound.EXACT
    assert sorted(f.path for f in s.read.files) == sorted(f.path for f in s.write.removes)
