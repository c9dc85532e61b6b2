"""Verdicts the engines would give, on logs written in the engine's exact on-disk form.

Each test builds a two- or three-commit log the way delta-spark writes it (forensics.synth:
Catalyst simpleString predicates with expression ids, operationParameters as JSON text), reads it
back through the real path (`forensics.Table`: Spark reader, set reconstruction, rules), and
checks the engine's answer at a named tag (docs/conflict-rules.md cites the source of each).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import forensics.synth.opparams as P
from forensics import Table
from forensics.synth.actions import MetaData, ProtocolAction
from forensics.synth.sparktable import SparkTable, schema_string

pytestmark = pytest.mark.usefixtures("spark")

T0 = 1_718_870_400_000  # 2024-06-20


def _merge_table(root: Path, engine: str) -> tuple[SparkTable, int]:
    """v0: CTAS with rows in 2024-01-01 and 2024-01-02; v1: a blind append to 2024-01-03 (read v0)."""
    t = SparkTable(root / "t", engine, seed=7, start_ms=T0)
    t.create_as_select([t.data_file("2024-01-01", [1, 2, 3]), t.data_file("2024-01-02", [4, 5, 6], task=1)])
    t.tick(5_000)
    t.append([t.data_file("2024-01-03", [7, 8])], 0)
    return t, 0


def _merge(t: SparkTable, read_version: int, condition: str, matched: list[dict] | None, not_matched: list[dict] | None) -> int:
    """A MERGE that read `read_version` and rewrote the 2024-01-01 file, committed after the append."""
    t.tick(3_000)
    old = t.data_file("2024-01-01", [1, 2, 3])  # the file it read and rewrote (same partition)
    new = t.data_file("2024-01-01", [1, 2, 3, 99], status="shipped")
    return t.commit("MERGE", P.merge_params(condition, matched, not_matched), [old.remove(t.now - 500), new], read_version)


def _cond(t: SparkTable, *extra: str) -> str:
    return P.and_(P.eq(t.attr["id"], P.Attr("id", t.ids.take(), "long")), *extra)


@pytest.mark.parametrize("engine", ["Apache-Spark/3.5.1 Delta-Lake/3.2.0", "Apache-Spark/3.3.2 Delta-Lake/2.4.0"])
def test_merge_or_of_partition_and_data_terms_reads_every_partition(tmp_path, engine):
    """ON t.id = s.id AND ((date = '2024-01-01' AND amount > 5.0) OR date = '2024-01-02'), a concurrent
    append to 2024-01-03: delta-spark records the OR as one data filter (it never takes a partition term
    out of an OR, OptimisticTransaction.trackReadPredicates), so the read is TRUE and the MERGE aborts
    with ConcurrentAppendException (conflict-rules §4.1, §4.7)."""
    t, rv = _merge_table(tmp_path, engine)
    d, a = t.attr["date"], t.attr["amount"]
    either = f"(({P.eq(d, '2024-01-01')} AND ({a} > 5.0)) OR {P.eq(d, '2024-01-02')})"
    v = _merge(t, rv, _cond(t, either), None, None)
    ex = Table(t.dir).explain(v, use_evidence=False)
    assert ex.verdict.verdict == "anomaly", ex.verdict.why
    assert ex.verdict.exception == "ConcurrentAppendException"
    assert ex.verdict.winning_version == 1
    assert ex.sets.read.partition_predicates == ["TRUE"]


def test_merge_with_only_matched_clauses_reads_their_partition_on_3x(tmp_path):
    """ON t.id = s.id WHEN MATCHED AND t.date = '2024-01-01' THEN UPDATE (delta-spark 3.2): only WHEN
    MATCHED clauses, so getTargetOnlyPredicates adds the clause's target-only condition and the read is
    date = 2024-01-01: the append to 2024-01-03 does not conflict and the MERGE commits."""
    t, rv = _merge_table(tmp_path, "Apache-Spark/3.5.1 Delta-Lake/3.2.0")
    matched = [{"actionType": "update", "predicate": P.eq(t.attr["date"], "2024-01-01")}]
    v = _merge(t, rv, _cond(t), matched, [])
    ex = Table(t.dir).explain(v, use_evidence=False)
    assert ex.verdict.verdict == "clean", ex.verdict.why
    assert ex.sets.read.partition_predicates != ["TRUE"]


def test_merge_matched_clause_does_not_narrow_before_3_0(tmp_path):
    """The same MERGE written by delta-spark 2.4: no clause narrowing (conflict-rules §4.7), the read is
    TRUE and the append to 2024-01-03 aborts it."""
    t, rv = _merge_table(tmp_path, "Apache-Spark/3.3.2 Delta-Lake/2.4.0")
    matched = [{"actionType": "update", "predicate": P.eq(t.attr["date"], "2024-01-01")}]
    v = _merge(t, rv, _cond(t), matched, [])
    ex = Table(t.dir).explain(v, use_evidence=False)
    assert ex.verdict.verdict == "anomaly" and ex.verdict.exception == "ConcurrentAppendException"


def test_merge_with_a_not_matched_clause_is_not_narrowed(tmp_path):
    """WHEN MATCHED AND date = ... plus WHEN NOT MATCHED THEN INSERT: not matched-only, so only the ON
    condition counts; it has no partition term, the read is TRUE, and the append aborts it."""
    t, rv = _merge_table(tmp_path, "Apache-Spark/3.5.1 Delta-Lake/3.2.0")
    matched = [{"actionType": "update", "predicate": P.eq(t.attr["date"], "2024-01-01")}]
    v = _merge(t, rv, _cond(t), matched, [{"actionType": "insert"}])
    ex = Table(t.dir).explain(v, use_evidence=False)
    assert ex.verdict.verdict == "anomaly" and ex.verdict.exception == "ConcurrentAppendException"


# ---- delta-spark 4.1+: the metadata allow-list is per release (conflict-rules §5.2.4) -----------

V2_PROTOCOL = ProtocolAction(3, 7, ["v2Checkpoint", "deletionVectors"], ["v2Checkpoint", "deletionVectors"])


def _properties_race(root: Path, engine: str, change: dict[str, str]) -> tuple[Path, int]:
    """v0 CTAS (protocol supports v2Checkpoint), v1 SET TBLPROPERTIES `change` (read v0), v2 a DELETE of
    2024-01-02 that also read v0 and committed after it: does the release reconcile the change?"""
    t = SparkTable(root / "t", engine, seed=11, start_ms=T0)
    f1, f2 = t.data_file("2024-01-01", [1, 2]), t.data_file("2024-01-02", [3, 4], task=1)
    t.config = {"delta.checkpointPolicy": "classic"}
    t.commit("CREATE TABLE AS SELECT", {"partitionBy": P.json_list(["date"]), "properties": "{}"},
             [t.metadata(), V2_PROTOCOL, f1, f2], None, blind=True)
    t.tick(2_000)
    md = MetaData(t.table_id, schema_string(), ["date"], {**t.config, **change}, T0 - 2300)
    t.commit("SET TBLPROPERTIES", P.set_tblproperties_params(change), [md], 0)
    t.tick(2_000)
    v = t.commit("DELETE", P.delete_params([P.eq(t.attr["date"], "2024-01-02")]), [f2.remove(t.now - 300)], 0)
    return t.dir, v


@pytest.mark.parametrize(("release", "verdict"), [("4.1.0", "anomaly"), ("4.2.0", "anomaly"), ("4.3.0", "clean"), ("4.4.0", "clean")])
def test_checkpoint_policy_change_is_reconciled_from_4_3(tmp_path, release, verdict):
    path, v = _properties_race(tmp_path, f"Apache-Spark/4.0.0 Delta-Lake/{release}", {"delta.checkpointPolicy": "v2"})
    ex = Table(path).explain(v, use_evidence=False)
    assert ex.verdict.verdict == verdict, ex.verdict.why
    if verdict == "anomaly":
        assert ex.verdict.exception == "MetadataChangedException"
        assert "allow-list" in ex.verdict.why


@pytest.mark.parametrize(("release", "verdict"), [("4.3.0", "anomaly"), ("4.4.0", "clean")])
def test_unity_catalog_table_id_without_the_catalog_feature(tmp_path, release, verdict):
    """4.4 lists io.unitycatalog.tableId and validates it only on catalog-managed tables; elsewhere it
    passes. 4.3 does not list it: MetadataChangedException."""
    path, v = _properties_race(tmp_path, f"Apache-Spark/4.0.0 Delta-Lake/{release}", {"io.unitycatalog.tableId": "a1b2"})
    ex = Table(path).explain(v, use_evidence=False)
    assert ex.verdict.verdict == verdict, ex.verdict.why


# ---- Databricks by runtime, with deletion vectors (conflict-rules §11.2, §11.3) ------------------

from dataclasses import replace as _replace  # noqa: E402

from forensics.synth.actions import DeletionVector  # noqa: E402
from forensics.synth.sparktable import Databricks  # noqa: E402

DV_PROTOCOL = ProtocolAction(3, 7, ["deletionVectors"], ["deletionVectors"])


def _dbr(runtime: str, photon: bool = True) -> str:
    return f"Databricks-Runtime/{runtime}.x-{'photon-' if photon else ''}scala2.12"


def _dv(tag: str, rows: int) -> DeletionVector:
    return DeletionVector("u", (tag * 20)[:20], 34, rows)


def _databricks_table(root: Path, runtime: str, *, partitioned: bool, dvs: str | None = "true",
                      photon: bool = True) -> tuple[SparkTable, list]:
    t = SparkTable(root / "t", _dbr(runtime, photon), seed=13, start_ms=T0, isolation_level="WriteSerializable", databricks=Databricks())
    files = [t.data_file("2024-01-01", [1, 2]), t.data_file("2024-01-01", [3, 4], task=1), t.data_file("2024-01-02", [5, 6], task=2)]
    if not partitioned:
        files = [_replace(f, partition_values={}) for f in files]
    t.config = {} if dvs is None else {"delta.enableDeletionVectors": dvs}
    md = MetaData(t.table_id, schema_string(), ["date"] if partitioned else [], dict(t.config), T0 - 2300)
    t.commit("CREATE TABLE AS SELECT", {"partitionBy": P.json_list(["date"] if partitioned else []), "properties": "{}"},
             [md, DV_PROTOCOL, *files], None, blind=True)
    return t, files


def _dv_delete(t: SparkTable, f, dv: DeletionVector, read_version: int, *, removed_dv: DeletionVector | None = None,
               merge: bool = False) -> int:
    """A DELETE (or a MERGE) that marked rows of `f` deleted with a deletion vector (remove f, add f with the DV)."""
    t.tick(2_000)
    rem = _replace(f, deletion_vector=removed_dv).remove(t.now - 200)
    add = _replace(f, deletion_vector=dv)
    if merge:
        return t.commit("MERGE", P.merge_params(_cond(t), [{"actionType": "delete"}], []), [rem, add], read_version)
    return t.commit("DELETE", P.delete_params([P.eq(t.attr["id"], 1)]), [rem, add], read_version)


@pytest.mark.parametrize(("runtime", "verdict"), [("12.2", "anomaly"), ("13.3", "anomaly"), ("14.3", "clean")])
def test_row_level_concurrency_needs_runtime_14_2(tmp_path, runtime, verdict):
    """Two DELETEs marking rows of the same file of an unpartitioned DV table, both read v0: from DBR 14.2
    row-level concurrency reconciles them (the loser's remove names the winner's DV); before, the
    second aborts. The append check runs first (conflict-rules §5.10) and the winner's re-added file
    (same path, new DV) counts as an add on an unpartitioned table: ConcurrentAppendException."""
    t, files = _databricks_table(tmp_path, runtime, partitioned=False)
    d1 = _dv("a", 1)
    _dv_delete(t, files[0], d1, 0)
    v = _dv_delete(t, files[0], _dv("b", 2), 0, removed_dv=d1)
    ex = Table(t.dir).explain(v, use_evidence=False)
    assert ex.verdict.verdict == verdict, ex.verdict.why
    if verdict == "anomaly":
        assert ex.verdict.exception == "ConcurrentAppendException"
    else:
        assert ex.verdict.certainty != "exact"  # Databricks is modelled from its docs


@pytest.mark.parametrize(("runtime", "photon", "verdict"), [("14.2", False, "anomaly"), ("14.2", True, "clean"), ("14.3", False, "clean")])
def test_merge_gets_row_level_concurrency_on_14_2_only_with_photon(tmp_path, runtime, photon, verdict):
    """The docs: row-level concurrency for MERGE needs Photon on Runtime 14.2, not from 14.3."""
    t, files = _databricks_table(tmp_path, runtime, partitioned=False, photon=photon)
    d1 = _dv("a", 1)
    _dv_delete(t, files[0], d1, 0)
    v = _dv_delete(t, files[0], _dv("b", 2), 0, removed_dv=d1, merge=True)
    ex = Table(t.dir).explain(v, use_evidence=False)
    assert ex.verdict.verdict == verdict, ex.verdict.why


def test_row_level_concurrency_never_on_partitioned_tables(tmp_path):
    t, files = _databricks_table(tmp_path, "15.4", partitioned=True)
    d1 = _dv("a", 1)
    _dv_delete(t, files[0], d1, 0)
    v = _dv_delete(t, files[0], _dv("b", 2), 0, removed_dv=d1)
    ex = Table(t.dir).explain(v, use_evidence=False)
    assert ex.verdict.verdict == "anomaly" and ex.verdict.exception == "ConcurrentAppendException"


def _optimize(t: SparkTable, files: list, read_version: int, zorder: list[str]) -> int:
    t.tick(2_000)
    out = t.data_file("2024-01-01", [1, 2, 3, 4], data_change=False, task=3)
    params = {**P.optimize_params([P.eq(t.attr["date"], "2024-01-01")]), "zOrderBy": P.json_list(zorder)}
    return t.commit("OPTIMIZE", params, [f.remove(t.now - 100, data_change=False) for f in files] + [out], read_version)


@pytest.mark.parametrize(("zorder", "dvs", "verdict"), [([], "true", "clean"), (["id"], "true", "anomaly"), ([], "false", "anomaly")])
def test_optimize_without_zorder_does_not_conflict_with_dml_when_dvs_are_on(tmp_path, zorder, dvs, verdict):
    """Partitioned table on DBR 14.3: an OPTIMIZE of 2024-01-01 commits first, then a DELETE in 2024-01-01
    that read the same files. The docs: OPTIMIZE without ZORDER BY cannot conflict with DELETE/UPDATE/MERGE
    when deletion vectors are enabled (partitioned tables included); with ZORDER BY, or DVs off, it can."""
    t, files = _databricks_table(tmp_path, "14.3", partitioned=True, dvs=dvs)
    _optimize(t, files[:2], 0, zorder)
    v = _dv_delete(t, files[0], _dv("c", 1), 0)
    ex = Table(t.dir).explain(v, use_evidence=False)
    assert ex.verdict.verdict == verdict, ex.verdict.why
    if verdict == "anomaly":
        # delta-spark's append check counts every add of the winner, dataChange=false included
        # (WinningCommitSummary.addedFiles), and runs before delete-read (conflict-rules §5.6, §5.10)
        assert ex.verdict.exception == "ConcurrentAppendException"


def test_optimize_that_lost_to_a_dv_delete_is_not_a_conflict_either(tmp_path):
    """The other order: the DELETE commits first and the OPTIMIZE (no ZORDER BY) that read v0 commits after it."""
    t, files = _databricks_table(tmp_path, "14.3", partitioned=True)
    _dv_delete(t, files[0], _dv("c", 1), 0)
    v = _optimize(t, files[:2], 0, [])
    ex = Table(t.dir).explain(v, use_evidence=False)
    assert ex.verdict.verdict == "clean", ex.verdict.why


# ---- which profile: old Databricks commits and writers no profile models ----------------------

def _single_window(root: Path, engine: str | None, *, cluster: bool) -> tuple[Path, int]:
    t = SparkTable(root / "t", engine or "", seed=17, start_ms=1_620_000_000_000, isolation_level="WriteSerializable",
                   databricks=Databricks() if cluster else None)
    t.writer.engine_info = engine  # None: the commitInfo has no engineInfo at all (2021 runtimes)
    t.create_as_select([t.data_file("2021-05-01", [1])])
    t.tick(1_000)
    t.append([t.data_file("2021-05-02", [2])], 0)
    t.tick(1_000)
    v = t.append([t.data_file("2021-05-03", [3])], 0)
    return t.dir, v


def test_a_2021_databricks_commit_is_replayed_with_the_databricks_rules(tmp_path):
    path, v = _single_window(tmp_path, None, cluster=True)
    verdict = Table(path).replay_report().verdicts[v]
    assert verdict.profile == "databricks", verdict.profile_why
    assert verdict.certainty != "exact"
    assert "clusterId" in verdict.profile_why


def test_a_writer_no_profile_models_gets_no_verdict(tmp_path):
    path, v = _single_window(tmp_path, "Trino/435", cluster=False)
    verdict = Table(path).replay_report().verdicts[v]
    assert verdict.verdict == "skipped"
    assert verdict.why.startswith("no model for this writer") and "Trino/435" in verdict.why
    assert Table(path, rules="delta-spark-3.2-4.0").replay_report().verdicts[v].verdict in ("clean", "reordered")


def test_upgrade_hint_when_the_winner_has_no_commit_info(tmp_path):
    """A winner that only added files and wrote no commitInfo has no isBlindAppend: delta-spark (plain
    messages, here 3.1) tells a WriteSerializable loser to upgrade its writers (conflict-rules §7.1)."""
    t = SparkTable(tmp_path / "t", "Apache-Spark/3.5.0 Delta-Lake/3.1.0", seed=19, start_ms=T0, isolation_level="WriteSerializable")
    f = t.data_file("2024-01-01", [1, 2])
    t.create_as_select([f])
    t.tick(1_000)
    t.writer.commit([t.data_file("2024-01-01", [3])])  # an old writer: add actions only, no commitInfo
    t.tick(1_000)
    v = t.commit("DELETE", P.delete_params([P.eq(t.attr["date"], "2024-01-01")]), [f.remove(t.now - 100)], 0)
    ex = Table(t.dir).explain(v, use_evidence=False)
    assert ex.verdict.exception == "ConcurrentAppendException"
    assert "Upgrading all your concurrent writers to use the latest Delta Lake may avoid this error" in ex.message


def test_a_copied_commit_file_is_not_concurrency(tmp_path):
    """v3 is v1's commit file copied byte for byte (a restore script, a sync tool): its readVersion 0
    looks stale, but it is the same transaction. Replay skips it and stats count no stale window."""
    t = SparkTable(tmp_path / "t", "Apache-Spark/3.5.1 Delta-Lake/3.2.0", seed=23, start_ms=T0)
    t.create_as_select([t.data_file("2024-01-01", [1])])
    for rv in (0, 1):
        t.tick(60_000)
        t.append([t.data_file("2024-01-02", [rv + 2])], rv)
    log_dir = t.dir / "_delta_log"
    (log_dir / "00000000000000000003.json").write_bytes((log_dir / "00000000000000000001.json").read_bytes())
    table = Table(t.dir)
    verdict = table.replay_report().verdicts[3]
    assert verdict.verdict == "skipped" and "a copy of v1" in verdict.why
    st = table.stats_report(with_evidence=False).to_dict()
    assert st["totals"]["staleWindows"] == 0
    assert max(c["maxConcurrent"] for c in st["concurrency"]) == 1  # sequential: windows only touch


def test_sync_identity_reads_the_whole_table(tmp_path):
    """ALTER TABLE ... ALTER COLUMN id SYNC IDENTITY commits as CHANGE COLUMN with the identity tag after
    filterFiles() and readWholeTable() (delta-spark alterDeltaTableCommands): an append to any partition
    that landed in its window aborts it, partitioned table or not."""
    t = SparkTable(tmp_path / "t", "Apache-Spark/3.5.1 Delta-Lake/3.2.0", seed=29, start_ms=T0)
    t.create_as_select([t.data_file("2024-01-01", [1, 2])])
    t.tick(1_000)
    t.append([t.data_file("2024-01-09", [3])], 0)
    t.tick(1_000)
    params = {"column": "id", "syncIdentity": "true"}
    v = t.commit("CHANGE COLUMN", params, [t.metadata()], 0, tags={"delta.identity.schemaUpdate": "true"})
    ex = Table(t.dir).explain(v, use_evidence=False)
    assert ex.sets.read.whole_table
    assert ex.verdict.verdict == "anomaly" and ex.verdict.exception == "ConcurrentAppendException", ex.verdict.why


def test_delta_rs_double_compaction_by_release(tmp_path):
    """Two compactions of the same files, both from the read version: deltalake 1.6.6 (live, here)
    commits both; by source, python-v1.3.0..1.6.3 abort the second with ConcurrentDeleteDelete and
    releases before 1.3.0 with ConcurrentDeleteRead (conflict-rules §9.4)."""
    import pyarrow as pa
    from deltalake import DeltaTable, __version__ as deltalake_version, write_deltalake

    path = str(tmp_path / "rs")
    for i in range(3):
        write_deltalake(path, pa.table({"id": pa.array([i * 10, i * 10 + 1], pa.int64())}), mode="append")
    stale = DeltaTable(path)
    DeltaTable(path).optimize.compact()
    stale.optimize.compact()  # the live engine's answer: it commits
    v = DeltaTable(path).version()
    assert deltalake_version >= "1.6.6"
    assert Table(path).replay_report().verdicts[v].verdict in ("clean", "reordered")
    older = Table(path, rules="delta-rs@1.6.3").replay_report().verdicts[v]
    assert (older.verdict, older.exception) == ("anomaly", "ConcurrentDeleteDeleteException"), older.why
    oldest = Table(path, rules="delta-rs@1.2.1").replay_report().verdicts[v]
    assert (oldest.verdict, oldest.exception) == ("anomaly", "ConcurrentDeleteReadException"), oldest.why


# ---- TRUNCATE, ROW TRACKING BACKFILL, delta-rs isolation per winner (issue 14) -------------------

def _truncate_race(root: Path, *, recorded_blind: bool) -> tuple[SparkTable, int, list]:
    """v0 CTAS (2024-01-01, 2024-01-02); v1 a blind append to 2024-01-03 (read v0); v2 TRUNCATE TABLE
    that read v0, as TruncateDeltaTableCommand (delta-spark v4.3+) commits it: no parameters, every file
    removed, its removal metrics."""
    t = SparkTable(root / "t", "Apache-Spark/4.1.0 Delta-Lake/4.3.0", seed=31, start_ms=T0)
    files = [t.data_file("2024-01-01", [1, 2]), t.data_file("2024-01-02", [3], task=1)]
    t.create_as_select(files)
    t.tick(1_000)
    t.append([t.data_file("2024-01-03", [4])], 0)
    t.tick(1_000)
    metrics = {"numRemovedFiles": "2", "numRemovedBytes": str(sum(f.size for f in files)), "numDeletedRows": "3",
               "executionTimeMs": "412"}
    v = t.commit("TRUNCATE", {}, [f.remove(t.now - 100) for f in files], 0, blind=recorded_blind, metrics=metrics)
    return t, v, files


@pytest.mark.parametrize("recorded_blind", [False, True])
def test_truncate_reads_every_file_and_is_never_a_blind_append(tmp_path, recorded_blind):
    """TRUNCATE TABLE reads through filterFiles(Seq.empty): partition predicate TRUE, every file, so a
    concurrent append into any partition aborts it (ConcurrentAppendException). delta-spark records
    isBlindAppend=false for it; a commit that says true (no delta-spark TRUNCATE writes that) is still
    not a blind append, which would skip the append check (conflict-rules §4.5, §8.2)."""
    t, v, files = _truncate_race(tmp_path, recorded_blind=recorded_blind)
    ex = Table(t.dir).explain(v, use_evidence=False)
    assert ex.sets.read.partition_predicates == ["TRUE"]
    assert sorted(f.path for f in ex.sets.read.files) == sorted(f.path for f in files)
    assert ex.sets.write.is_blind_append is False and ex.sets.write.is_blind_append_recorded is recorded_blind
    assert (ex.verdict.verdict, ex.verdict.exception, ex.verdict.winning_version) == \
        ("anomaly", "ConcurrentAppendException", 1), ex.verdict.why


def _row_tracking_table(root: Path) -> tuple[SparkTable, list]:
    """v0 CTAS of three files; v1 the protocol upgrade that ROW TRACKING BACKFILL starts with (rowTracking,
    domainMetadata), as delta-spark 4.1 writes them."""
    t = SparkTable(root / "t", "Apache-Spark/4.0.0 Delta-Lake/4.1.0", seed=37, start_ms=T0)
    files = [t.data_file("2024-01-01", [1, 2]), t.data_file("2024-01-01", [3, 4], task=1),
             t.data_file("2024-01-02", [5], task=2)]
    t.create_as_select(files)
    t.tick(1_000)
    t.commit("UPGRADE PROTOCOL", {"newProtocol": '{"minReaderVersion":1,"minWriterVersion":7}'},
             [ProtocolAction(1, 7, None, ["appendOnly", "invariants", "domainMetadata", "rowTracking"])], 0)
    return t, files


def _backfill(t: SparkTable, batch: list, read_version: int) -> int:
    """RowTrackingBackfillBatch: the batch re-committed with dataChange=false and row ids, the row-tracking
    high-water mark, operation ROW TRACKING BACKFILL at SnapshotIsolation, not a blind append."""
    t.tick(1_000)
    adds, base = [], 0
    for f in batch:
        obj = f.to_obj()["add"]
        adds.append({"add": {**obj, "dataChange": False, "baseRowId": base, "defaultRowCommitVersion": read_version}})
        base += t.stats_rows(f)
    hwm = {"domainMetadata": {"domain": "delta.rowTracking", "configuration": f'{{"rowIdHighWaterMark":{base - 1}}}',
                              "removed": False}}
    return t.commit("ROW TRACKING BACKFILL", {"batchId": "0"}, [hwm, *adds], read_version, level="SnapshotIsolation")


def test_row_tracking_backfill_read_set_is_the_batch_it_recommits(tmp_path):
    """BackfillExecutor marks the batch read (trackFilesRead) and records no predicate; the conflict
    checker drops batch files a winner touched before it commits (resolveRowTrackingBackfillConflicts).
    A backfill that read v1 and lost the file v2's DELETE removed: files read = its adds, exact
    (conflict-rules §5.5, §8.2); the verdict is exact and clean."""
    t, files = _row_tracking_table(tmp_path)
    t.tick(1_000)
    t.commit("DELETE", P.delete_params([P.eq(t.attr["id"], 1)]), [files[0].remove(t.now - 100)], 1)
    v = _backfill(t, files[1:], 1)
    ex = Table(t.dir).explain(v, use_evidence=False)
    assert sorted(f.path for f in ex.sets.read.files) == sorted(f.path for f in files[1:])
    assert ex.sets.read.files_bound.value == "exact" and ex.sets.read.partition_predicates == []
    assert "trackFilesRead" in ex.sets.read.why
    assert ex.verdict.verdict == "clean" and ex.verdict.certainty == "exact", ex.verdict.why


def test_a_backfill_winner_skips_the_append_check(tmp_path):
    """whatif: an UPDATE of 2024-01-01 that read v1 against a backfill (v2) that re-added its files: from
    v3.3 the append check is skipped when either side is a backfill, and a backfill removes nothing."""
    t, files = _row_tracking_table(tmp_path)
    _backfill(t, files, 1)
    wi = Table(t.dir).whatif(read_version=1, operation="UPDATE", predicate="date = '2024-01-01'")
    assert wi.result.verdict == "commit", wi.result.why
    ap = next(c for c in wi.result.checks if c.check == "appends")
    assert ap.status == "skipped" and "backfill" in ap.reason


def test_delta_rs_isolation_level_is_decided_per_winner(tmp_path):
    """delta-rs keeps no level for the transaction: each winner is checked at the table's level, lowered
    to SnapshotIsolation only for a winner with no action at all (conflict_checker.rs ConflictChecker::new
    and can_downgrade_to_snapshot_isolation, python-v1.6.3; conflict-rules §2.2). A stale OPTIMIZE after a
    concurrent append, run live on deltalake, shows Serializable (delta-spark's own rule would say
    SnapshotIsolation), and its append check names the level it used for that winner."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    path = str(tmp_path / "rs")
    for i in range(3):
        write_deltalake(path, pa.table({"id": pa.array([i * 10, i * 10 + 1], pa.int64())}), mode="append")
    stale = DeltaTable(path)
    write_deltalake(path, pa.table({"id": pa.array([100], pa.int64())}), mode="append")
    stale.optimize.compact()  # the live engine's answer: it commits
    v = DeltaTable(path).version()
    ex = Table(path).explain(v, use_evidence=False)
    assert ex.verdict.verdict == "clean", ex.verdict.why
    assert ex.verdict.isolation_level == "Serializable"
    ap = next(c for c in ex.verdict.result.checks if c.check == "appends")
    assert f"delta-rs level for v{v - 1}: Serializable" in ap.reason
    wi = Table(path).whatif(read_version=v - 2, until=v - 1, operation="OPTIMIZE", rules="delta-rs")
    assert wi.isolation_level == "Serializable" and wi.result.verdict == "commit"
    # a DELETE whose predicate matches the appended row: the level asked for reaches the delta-rs check
    ask = {"read_version": v - 2, "until": v - 1, "operation": "DELETE", "predicate": "id >= 100", "rules": "delta-rs"}
    assert Table(path).whatif(**ask).result.exception == "ConcurrentAppendException"
    si = Table(path).whatif(**ask, isolation_level="SnapshotIsolation")
    assert si.isolation_level == "SnapshotIsolation" and si.result.verdict == "commit", si.result.why
