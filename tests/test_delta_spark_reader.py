"""Our snapshot and history beside delta-spark's own (`DeltaLog.getSnapshotAt`, `DESCRIBE HISTORY`):
a bounded set of real tables from ../shared/corpus (delta-spark 1.2-4.3, Databricks, delta-rs,
Kernel), tables written live by delta-spark 4.4 with its newest features (deletion vectors, row
tracking, V2 checkpoints with sidecars, in-commit timestamps, liquid clustering) and a conflict
raced on one of them, and a catalog name resolved through Delta's catalog (`DeltaTable.forName`).

All `live` (make test-live: delta-spark's jars on the suite's session). The corpus part skips where
../shared is absent.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from forensics.runtime import delta_jvm

pytestmark = pytest.mark.live
REPO = Path(__file__).resolve().parent.parent

# ~20 corpus tables (corpus/INDEX.md): writer, and what each brings.
CORPUS = {
    "dspark-delta-1.2.1": "delta-spark 1.2.1, classic checkpoints",
    "krs-parsed-stats": "delta-spark 2.1, checkpoint",
    "kjava-basic-with-checkpoint": "delta-spark 2.2, checkpoint at 10",
    "kjava-basic-dv-with-checkpoint": "delta-spark 2.4, deletion vectors, 47 versions, 4 checkpoints",
    "golden-multi-part-checkpoint": "delta-spark 3.0, multi-part checkpoint",
    "golden-dv-partitioned-with-checkpoint": "delta-spark 3.0, partitioned, deletion vectors",
    "rs-cdf-table": "delta-spark 3.0, change data feed",
    "golden-v2-checkpoint-parquet": "delta-spark 3.2, V2 checkpoint (parquet) with sidecars",
    "krs-v2-checkpoints-json-with-sidecars": "delta-spark 3.4, V2 checkpoints (json) with sidecars",
    "golden-type-widening": "delta-spark 3.3, type widening",
    "golden-commit-info-containing-arbitrary-operationParams-types": "delta-spark 3.4, non-string operationParameters",
    "krs-void-column": "delta-spark 4.1",
    "rs-cdc_ict_table": "delta-spark 4.3.1, in-commit timestamps",
    "rs-table_with_deletion_logs": "Databricks 12.2, deletion vectors, checkpoints",
    "rs-table_with_liquid_clustering": "Databricks 13.2, liquid clustering",
    "rs-cdf-table-with-cdc-and-dvs": "Databricks 16.0, CDF and deletion vectors",
    "rs-checkpoint-v2-table": "Databricks 17.0, V2 checkpoints with sidecars",
    "krs-app-txn-with-last-updated": "delta-rs py-0.25.5, txn actions",
    "rs-table_failed_last_checkpoint_update": "delta-rs 0.17.1, stale _last_checkpoint",
    "uc-managed-marksheet": "Delta Kernel 3.2 (Unity Catalog CLI)",
    "uc-ext-numbers": "Delta Kernel 3.2 (Unity Catalog CLI), one commit",
}


@pytest.fixture(scope="module")
def delta_spark(spark):
    if not delta_jvm.loaded(spark):
        pytest.fail("delta-spark's JVM classes are not on the classpath: run `make test-live` (it fetches them)")
    return spark


@pytest.fixture(scope="module")
def corpus(shared_dir):
    tables = shared_dir / "corpus" / "tables"
    if not tables.is_dir():
        pytest.skip("../shared/corpus is absent")
    return tables


def _py(jvm, seq) -> list:
    return list(jvm.scala.jdk.javaapi.CollectionConverters.asJava(seq))


def _dv_key(dv) -> tuple | None:
    """A deletion vector's identity as both readers hold it (None: no DV): ours a DeletionVectorRef,
    delta-spark's a row of allFiles()."""
    if dv is None:
        return None
    if isinstance(dv, dict):
        return (dv["storageType"], dv["pathOrInlineDv"], dv["offset"], dv["sizeInBytes"], dv["cardinality"])
    return (dv.storage_type, dv.path_or_inline_dv, dv.offset, dv.size_in_bytes, dv.cardinality)


def assert_snapshots_equal(spark, table, path: str, versions: list[int]) -> None:
    """Files (path, size, deletion vector), protocol (versions and features) and metadata at each version."""
    from pyspark.sql import DataFrame

    jvm = spark._jvm  # noqa: SLF001
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)  # noqa: SLF001
    none = jvm.scala.Option.empty()
    for v in versions:
        theirs = log.getSnapshotAt(v, none, none, False)
        ours = table.snapshot(v)
        rows = DataFrame(theirs.allFiles().toDF(), spark).select("path", "size", "deletionVector").collect()
        files = {(r["path"], r["size"], _dv_key(r["deletionVector"] and r["deletionVector"].asDict())) for r in rows}
        assert {(f.path, f.size, _dv_key(f.deletion_vector)) for f in ours.files} == files, (path, v)
        p = theirs.protocol()
        features = lambda o: sorted(_py(jvm, o.get().toSeq())) if o.isDefined() else None  # noqa: E731
        assert (ours.protocol.min_reader_version, ours.protocol.min_writer_version,
                sorted(ours.protocol.reader_features) if ours.protocol.reader_features is not None else None,
                sorted(ours.protocol.writer_features) if ours.protocol.writer_features is not None else None) == \
            (p.minReaderVersion(), p.minWriterVersion(), features(p.readerFeatures()), features(p.writerFeatures())), (path, v)
        m = theirs.metadata()
        assert ours.metadata.id == m.id() and ours.metadata.schema_string == m.schemaString(), (path, v)
        assert list(ours.metadata.partition_columns) == _py(jvm, m.partitionColumns()), (path, v)
        conf = dict(jvm.scala.jdk.javaapi.CollectionConverters.asJava(m.configuration()))
        assert dict(ours.metadata.configuration or {}) == conf, (path, v)


HISTORY_COLUMNS = ("operation", "readVersion", "isolationLevel", "isBlindAppend", "engineInfo", "userName")


def assert_history_equal(spark, table, path: str, timestamps: bool = False) -> None:
    """DESCRIBE HISTORY beside our history: the same versions, and per version the same operation,
    readVersion, isolation level, blind-append flag, engine, user, operation parameters (names; values
    where the log holds a string) and, where asked (in-commit timestamps), the same time."""
    theirs = {int(r["version"]): r.asDict() for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()}
    ours = {r["version"]: r for r in table.history().to_dicts()}
    assert set(theirs) <= set(ours) and theirs, (path, sorted(theirs), sorted(ours))
    for v, t in theirs.items():
        o = ours[v]
        got = {c: o[c] for c in HISTORY_COLUMNS}
        want = {c: t[c] for c in HISTORY_COLUMNS}
        assert got == want, (path, v)
        params = t["operationParameters"] or {}
        raw = _raw_commit_info(Path(path), v).get("operationParameters") or {}
        assert set(raw) == set(params), (path, v)
        assert {k: x for k, x in raw.items() if isinstance(x, str)} == {k: params[k] for k, x in raw.items() if isinstance(x, str)}
        assert set(o["operationParameters"] or {}) >= set(params), (path, v)
        if timestamps:
            ts = int(t["timestamp"].timestamp() * 1000) if hasattr(t["timestamp"], "timestamp") else int(t["timestamp"])
            assert (o["inCommitTimestamp"] or o["timestamp"]) == ts, (path, v)


def _raw_commit_info(table: Path, version: int) -> dict:
    f = table / "_delta_log" / f"{version:020d}.json"
    if not f.exists():
        return {}
    for line in f.read_text(encoding="utf-8").splitlines():
        if '"commitInfo"' in line:
            return json.loads(line)["commitInfo"]
    return {}


def _copy(src: Path, tmp_path: Path) -> str:
    """delta-spark may write a checksum or a log cache beside what it reads: a copy, never ../shared."""
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return str(dst)


# ---- the corpus ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_table_reads_as_delta_spark_reads_it(delta_spark, corpus, tmp_path, name):
    from forensics import Table

    src = corpus / name
    if not src.is_dir():
        pytest.skip(f"{name} is not in this corpus")
    path = _copy(src, tmp_path)
    t = Table(path)
    assert_snapshots_equal(delta_spark, t, path, t.versions[-2:])
    assert_history_equal(delta_spark, t, path, timestamps="ict" in name)


# ---- delta-spark 4.4's newest features, written live ---------------------------------------------

FEATURES = ("'delta.enableDeletionVectors' = 'true', 'delta.enableRowTracking' = 'true', "
            "'delta.checkpointPolicy' = 'v2', 'delta.enableInCommitTimestamps' = 'true', 'delta.checkpointInterval' = '4'")


@pytest.fixture(scope="module")
def newest(delta_spark, tmp_path_factory):
    """A clustered table with deletion vectors, row tracking, in-commit timestamps and V2 checkpoints
    (with sidecars: `checkpoint.partSize` 2), written by delta-spark 4.4 with SQL: two inserts, a DELETE
    and an UPDATE that write deletion vectors (a checkpoint at v4), a MERGE, OPTIMIZE (clustering), an insert."""
    path = str(tmp_path_factory.mktemp("newest") / "orders")
    s = delta_spark
    s.conf.set("spark.databricks.delta.checkpoint.partSize", "2")
    try:
        s.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, region STRING, amount DOUBLE) USING delta CLUSTER BY (region) "
              f"TBLPROPERTIES ({FEATURES})").collect()
        s.sql(f"INSERT INTO delta.`{path}` SELECT id, IF(id < 10, 'eu', 'us'), id * 1.5 FROM range(0, 20)").collect()
        s.sql(f"INSERT INTO delta.`{path}` SELECT id, 'ap', id * 1.5 FROM range(20, 30)").collect()
        s.sql(f"DELETE FROM delta.`{path}` WHERE id = 3").collect()
        s.sql(f"UPDATE delta.`{path}` SET amount = amount + 1 WHERE id = 14").collect()  # v4: a V2 checkpoint
        s.sql(f"MERGE INTO delta.`{path}` t USING (SELECT 5 AS id, 'eu' AS region, 0.5 AS amount UNION ALL "
              "SELECT 99, 'us', 9.0) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET amount = s.amount "
              "WHEN NOT MATCHED THEN INSERT *").collect()
        s.sql(f"OPTIMIZE delta.`{path}`").collect()
        s.sql(f"INSERT INTO delta.`{path}` VALUES (100, 'ap', 1.0)").collect()
    finally:
        s.conf.unset("spark.databricks.delta.checkpoint.partSize")
    return path


def test_newest_features_read_as_delta_spark_reads_them(delta_spark, newest):
    from forensics import Table

    log = Path(newest) / "_delta_log"
    assert list((log / "_sidecars").glob("*.parquet")), "no sidecar written: the V2 checkpoint is not exercised"
    assert list(log.glob("*.checkpoint.*.json")) or list(log.glob("*.checkpoint.*.parquet"))
    t = Table(newest)
    snap = t.snapshot(t.versions[-1])
    assert {"deletionVectors", "rowTracking", "v2Checkpoint", "inCommitTimestamp", "clustering"} <= set(snap.protocol.writer_features)
    assert any(f.deletion_vector is not None for f in t.snapshot(4).files)  # the DVs of v3, v4 (OPTIMIZE purges them)
    assert_snapshots_equal(delta_spark, t, newest, [3, 4, t.versions[-1]])  # DVs, the V2 checkpoint, clustered
    assert_history_equal(delta_spark, t, newest, timestamps=True)
    h = {r["version"]: r for r in t.history().to_dicts()}
    assert all(h[v]["inCommitTimestamp"] is not None for v in t.versions)  # in-commit timestamps from v0


def test_conflict_on_newest_features_is_explained(delta_spark, newest, tmp_path):
    """A real conflict on that table: an INSERT that read the whole table (delta-spark's own
    transaction, held open) against a DELETE that writes a deletion vector. explain-error on the
    engine's text names the engine's winner and exception, and explain of that winner is no anomaly."""
    sys.path.insert(0, str(REPO))
    from bench.differential_spark import Engine, commit_loser, named_winner
    from forensics import Table

    path = str(tmp_path / "orders")
    shutil.copytree(newest, path)
    eng = Engine(delta_spark)
    txn = eng.delta.DeltaLog.forTable(delta_spark._jsparkSession, path).startTransaction()  # noqa: SLF001
    read = int(txn.readVersion())
    txn.readWholeTable()
    rows = delta_spark.createDataFrame([(500, "eu", 5.0)], "id BIGINT, region STRING, amount DOUBLE")
    adds = list(eng.jvm.scala.jdk.javaapi.CollectionConverters.asJava(txn.writeFiles(rows._jdf)))  # noqa: SLF001
    op = eng.cls("DeltaOperations$Write")(eng.jvm.org.apache.spark.sql.SaveMode.Append, eng.some(eng.seq([])),
                                          *[eng.none() for _ in range(7)])
    delta_spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 7").collect()  # the winner: a deletion vector
    real = commit_loser(eng, {"txn": txn, "actions": adds, "op": op})
    assert real["outcome"] == "abort", real
    winner = named_winner(real["message"], path)
    assert winner == read + 1
    t = Table(path)
    dv = [f for f in t.snapshot(winner).files if f.deletion_vector is not None]
    assert dv, "the winner wrote no deletion vector"
    e = t.explain_error(real["message"]).to_dict()
    assert e["exception"] == real["exception"] and e["winningVersion"] == winner, (real, e.get("winnerMatch"))
    assert e["replay"]["verdict"] == "abort" and e["replay"]["exception"] == real["exception"], e["replay"]
    ex = t.explain(winner).to_dict()
    assert (ex.get("verdict") or {}).get("verdict") != "anomaly", ex.get("verdict")


def test_catalog_name_through_delta_catalog(delta_spark, newest, tmp_path):
    """`schema.table` registered in the session's catalog (Delta's catalog, DeltaTable.forName) opens
    the same log as its location."""
    from delta.tables import DeltaTable

    from forensics import Table

    s = delta_spark
    s.sql(f"CREATE SCHEMA IF NOT EXISTS forensics_live LOCATION '{tmp_path / 'schema'}'").collect()
    try:
        s.sql(f"CREATE TABLE forensics_live.orders USING delta LOCATION '{newest}'").collect()
        assert DeltaTable.forName(s, "forensics_live.orders").history().count() == len(Table(newest).versions)
        for name in ("forensics_live.orders", "spark_catalog.forensics_live.orders"):
            t = Table(name, spark=s)
            assert t.catalog_name == name
            assert t.versions == Table(newest).versions
            assert_history_equal(s, t, newest, timestamps=True)
    finally:
        s.sql("DROP TABLE IF EXISTS forensics_live.orders").collect()  # external: the files stay
        s.sql("DROP SCHEMA IF EXISTS forensics_live").collect()
    assert (Path(newest) / "_delta_log").is_dir()
