"""Sample incidents (a)–(e), assembled in delta-spark's on-disk format.

Each builder writes `<dir>/table/` (log + tiny real Parquet files) and, where the engine
would have printed one, `<dir>/error.txt` (conflict-rules §7 template of the writer's release). The
commits that landed are exactly what delta-spark would write; the aborted transaction is
represented only by what it leaves behind: its data files (Spark writes data before it
commits, so they stay as orphans) and its error text. Timestamps and UUIDs are seeded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import forensics.synth.opparams as P
from forensics.synth.actions import SetTransaction
from forensics.synth.errortexts import delta_spark_message
from forensics.synth.sparktable import Databricks, SparkTable

ASSEMBLED = "assembled in delta-spark's on-disk format by scripts/make_sample_logs.py"


@dataclass
class Incident:
    name: str
    summary: str
    produced_by: str
    error_file: str | None = None
    orphans: tuple[str, ...] = ()


def _write_error(out: Path, text: str) -> str:
    (out / "error.txt").write_text(text, encoding="utf-8")
    return "error.txt"


def _rows(add) -> int:
    return json.loads(add.stats)["numRecords"]


def merge_metrics(removed, added, copied: int, updated: int, inserted: int) -> dict[str, str]:
    return {
        "numTargetRowsCopied": str(copied), "numTargetRowsDeleted": "0", "numTargetFilesAdded": str(len(added)),
        "numTargetBytesAdded": str(sum(a.size for a in added)), "numTargetBytesRemoved": str(sum(r.size for r in removed)),
        "numTargetRowsMatchedUpdated": str(updated), "executionTimeMs": "8412", "numTargetRowsInserted": str(inserted),
        "numTargetRowsMatchedDeleted": "0", "scanTimeMs": "2710", "numTargetRowsUpdated": str(updated),
        "numOutputRows": str(copied + updated + inserted), "numTargetRowsNotMatchedBySourceUpdated": "0",
        "numTargetChangeFilesAdded": "0", "numSourceRows": str(updated + inserted), "numTargetFilesRemoved": str(len(removed)),
        "numTargetRowsNotMatchedBySourceDeleted": "0", "rewriteTimeMs": "3106",
    }


def dml_metrics(removed, added, copied: int, changed: int, op: str) -> dict[str, str]:
    m = {"numRemovedFiles": str(len(removed)), "numRemovedBytes": str(sum(r.size for r in removed)),
         "numCopiedRows": str(copied), "numDeletionVectorsAdded": "0", "numDeletionVectorsRemoved": "0",
         "numAddedChangeFiles": "0", "executionTimeMs": "5210", "numDeletionVectorsUpdated": "0"}
    if op == "DELETE":
        m["numDeletedRows"] = str(changed)
    m["scanTimeMs"] = "1893"
    m["numAddedFiles"] = str(len(added))
    if op == "UPDATE":
        m["numUpdatedRows"] = str(changed)
    m["numAddedBytes"] = str(sum(a.size for a in added))
    m["rewriteTimeMs"] = "1120"
    return m


def optimize_metrics(removed, added) -> dict[str, str]:
    sizes = sorted(a.size for a in added)
    return {"numRemovedFiles": str(len(removed)), "numRemovedBytes": str(sum(r.size for r in removed)),
            "p25FileSize": str(sizes[0]), "numDeletionVectorsRemoved": "0", "minFileSize": str(sizes[0]),
            "numAddedFiles": str(len(added)), "maxFileSize": str(sizes[-1]), "p75FileSize": str(sizes[-1]),
            "p50FileSize": str(sizes[0]), "numAddedBytes": str(sum(sizes))}


# --------------------------------------------------------------------------------------
# (a) two MERGEs into different partitions, no literal partition predicate
# --------------------------------------------------------------------------------------


def a_merge_partitions(out: Path) -> Incident:
    engine = "Apache-Spark/3.5.1 Delta-Lake/3.2.0"
    t = SparkTable(out / "table", engine, seed=101, start_ms=1718870400000)  # 2024-06-20
    d1, d2 = "2024-06-18", "2024-06-19"
    f1 = t.data_file(d1, list(range(0, 40)))
    f2 = t.data_file(d2, list(range(40, 80)), task=1)
    t.create_as_select([f1, f2])
    t.tick(61_000)
    t.append([t.data_file(d1, list(range(80, 100)))], 0)
    t.tick(59_000)
    g2 = t.data_file(d2, list(range(100, 120)))
    t.append([g2], 1)
    read = 2
    # Both MERGE jobs read version 2. Condition `t.id = s.id`: no partition literal, so
    # the read predicate is TRUE (conflict-rules §4.1) and each job "read the whole table".
    t.tick(4_000)
    cond_b = P.eq(t.attr["id"], P.Attr("id", t.ids.take(), "long"))
    # Job A (updates rows of date=2024-06-18) writes its output first, then loses.
    t.tick(9_000)
    orphan = t.data_file(d1, list(range(0, 40)) + [500, 501], status="shipped")
    # Job B (rows of date=2024-06-19) commits first: the winner, version W = 3.
    t.tick(1_200)
    b_out = t.data_file(d2, list(range(100, 120)) + [600], status="shipped")
    rem = g2.remove(t.now - 800)
    w = t.commit("MERGE", P.merge_params(cond_b), [rem, b_out], read,
                 metrics=merge_metrics([g2], [b_out], copied=10, updated=10, inserted=1))
    # Job A tries version 3, finds it taken, checks it: the winner added a file in
    # date=2024-06-19, which matches A's TRUE read predicate (Serializable; conflict-rules §5.6).
    error = delta_spark_message(
        "ConcurrentAppendException", t.writer.commit_info_line(w), release="3.2", partition_values={"date": d2}
    )
    # The job's retry re-runs the MERGE on version 3 and commits at 4.
    t.tick(27_000)
    retry = t.data_file(d1, list(range(0, 40)) + [500, 501], status="shipped")
    rem1 = f1.remove(t.now - 900)
    cond_a2 = P.eq(t.attr["id"], P.Attr("id", t.ids.take(), "long"))
    t.commit("MERGE", P.merge_params(cond_a2), [rem1, retry], w,
             metrics=merge_metrics([f1], [retry], copied=30, updated=10, inserted=2))
    return Incident(
        "a-merge-partitions",
        f"two MERGEs (`t.id = s.id`, no partition literal) into {d1} and {d2} read v2; the {d2} MERGE won at v3, "
        f"the {d1} MERGE aborted with ConcurrentAppendException [date={d2}] leaving an orphan file, its retry landed at v4",
        f"{ASSEMBLED} (engineInfo {engine}, Serializable)",
        _write_error(out, error),
        (orphan.path,),
    )


# --------------------------------------------------------------------------------------
# (b) WriteSerializable reordering on Databricks
# --------------------------------------------------------------------------------------


def b_writeserializable_reorder(out: Path) -> Incident:
    engine = "Databricks-Runtime/15.4.x-scala2.12"
    t = SparkTable(out / "table", engine, seed=202, start_ms=1719302400000, isolation_level="WriteSerializable",
                   databricks=Databricks())
    days = ["2024-06-24", "2024-06-25"]
    f1 = t.data_file(days[0], list(range(0, 30)), status="pending")
    f2 = t.data_file(days[0], list(range(30, 50)), status="cancelled", task=1)
    f3 = t.data_file(days[1], list(range(50, 80)), status="shipped", task=2)
    t.create_as_select([f1, f2, f3], {"delta.isolationLevel": "WriteSerializable"})
    t.tick(120_000)
    f4 = t.data_file(days[1], list(range(80, 95)), status="cancelled")
    t.append([f4], 0)
    read = 1
    # A long DELETE WHERE status = 'cancelled' reads version 1 (data predicate ⇒ read
    # predicate TRUE; data skipping keeps f2 and f4, whose stats say status = cancelled).
    t.tick(3_000)
    pred = P.eq(t.attr["status"], "cancelled")
    # A blind INSERT of more cancelled rows commits at R+1 = 2 meanwhile.
    t.tick(40_000)
    ins = t.data_file(days[1], list(range(95, 105)), status="cancelled")
    t.append([ins], read)
    # The DELETE commits at R+2 = 3 with readVersion 1. Its winner (v2) is a blind append
    # and the DELETE is WriteSerializable: v2's file is not a candidate (conflict-rules §5.6 step 1,
    # §6), so the commit passes and v2's cancelled rows survive: the DELETE is serialised
    # before the INSERT although it landed after it.
    t.tick(95_000)
    removes = [f2.remove(t.now - 1500), f4.remove(t.now - 1500)]
    t.commit("DELETE", P.delete_params([pred]), removes, read,
             metrics=dml_metrics([f2, f4], [], copied=0, changed=_rows(f2) + _rows(f4), op="DELETE"),
             tags={"noRowsCopied": "true", "restoresDeletedRows": "false"})
    return Incident(
        "b-writeserializable-reorder",
        "WriteSerializable on Databricks: DELETE WHERE status = 'cancelled' read v1, a blind INSERT of cancelled rows "
        "landed at v2, the DELETE landed at v3 (readVersion 1) without removing v2's file; its rows survive (no error)",
        f"{ASSEMBLED} (engineInfo {engine}, delta.isolationLevel=WriteSerializable)",
    )


# --------------------------------------------------------------------------------------
# (c) OPTIMIZE loses against a DELETE
# --------------------------------------------------------------------------------------


def c_optimize_vs_delete(out: Path) -> Incident:
    engine = "Apache-Spark/3.5.1 Delta-Lake/3.2.0"
    t = SparkTable(out / "table", engine, seed=303, start_ms=1719907200000)
    day, other = "2024-07-01", "2024-06-30"
    t.create_as_select([t.data_file(other, list(range(0, 25)))])
    small = []
    for k in range(4):
        t.tick(30_000)
        f = t.data_file(day, list(range(100 + 10 * k, 110 + 10 * k)))
        small.append(f)
        t.append([f], k)
    read = 4
    # OPTIMIZE WHERE date = '2024-07-01' reads v4: files f1..f4 (trackFilesRead, conflict-rules §8.2)
    t.tick(2_000)
    opt_pred = P.eq(t.attr["date"], day)
    t.tick(14_000)
    compacted = t.data_file(day, list(range(100, 140)), data_change=False)
    # Meanwhile DELETE WHERE date = '2024-07-01' AND id = 117 rewrites f2 and commits at v5.
    t.tick(-9_000)
    victim = small[1]
    keep = [i for i in range(110, 120) if i != 117]
    rewritten = t.data_file(day, keep)
    t.tick(1_000)
    del_pred = P.and_(P.eq(t.attr["date"], day), P.eq(t.attr["id"], 117))
    w = t.commit("DELETE", P.delete_params([del_pred]), [victim.remove(t.now - 700), rewritten], read,
                 metrics=dml_metrics([victim], [rewritten], copied=len(keep), changed=1, op="DELETE"))
    # OPTIMIZE tries v5: SnapshotIsolation skips the append check, but v5 removed f2,
    # which OPTIMIZE read ⇒ ConcurrentDeleteReadException (conflict-rules §5.7). Its command-level
    # retry gives up because f2 no longer exists (conflict-rules §1 item 6).
    t.tick(9_500)
    error = delta_spark_message(
        "ConcurrentDeleteReadException", t.writer.commit_info_line(w), release="3.2",
        file=f"{victim.path} in partition [date={day}]",
    )
    # The scheduled OPTIMIZE runs again an hour later and compacts the partition at v6.
    t.tick(3_600_000)
    current = [small[0], small[2], small[3], rewritten]
    ids = sorted(set(range(100, 140)) - {117})
    again = t.data_file(day, ids, data_change=False)
    dts = t.now - 2_000
    acts = []
    for f in current:
        acts.append(f.remove(dts, data_change=False))
    t.commit("OPTIMIZE", P.optimize_params([opt_pred]), [again, *acts], w, level="SnapshotIsolation",
             metrics=optimize_metrics(current, [again]))
    return Incident(
        "c-optimize-vs-delete",
        f"OPTIMIZE of date={day} read f1..f4 at v4; a DELETE rewrote f2 at v5; OPTIMIZE aborted with "
        "ConcurrentDeleteReadException naming f2, its compacted output stayed as an orphan; a later OPTIMIZE landed at v6",
        f"{ASSEMBLED} (engineInfo {engine}, Serializable; OPTIMIZE is SnapshotIsolation)",
        _write_error(out, error),
        (compacted.path,),
    )


# --------------------------------------------------------------------------------------
# (d) ALTER TABLE lands while a MERGE runs
# --------------------------------------------------------------------------------------


def d_alter_table(out: Path) -> Incident:
    engine = "Apache-Spark/3.5.3 Delta-Lake/3.3.0"
    t = SparkTable(out / "table", engine, seed=404, start_ms=1720512000000)
    day = "2024-07-08"
    f0 = t.data_file(day, list(range(0, 50)))
    t.create_as_select([f0])
    t.tick(45_000)
    f1 = t.data_file("2024-07-09", list(range(50, 90)))
    t.append([f1], 0)
    read = 1
    t.tick(25_000)
    orphan = t.data_file(day, list(range(0, 50)), status="shipped")
    # ALTER TABLE … ADD COLUMNS (discount DOUBLE) commits first at v2 (metaData action).
    t.tick(-12_000)
    col = {"name": "discount", "type": "double", "nullable": True, "metadata": {}}
    t.extra_columns.append(("discount", "double"))
    w = t.commit("ADD COLUMNS", P.add_columns_params([col]), [t.metadata()], read, blind=True, metrics={})
    # The MERGE tries v2: any winning metaData aborts it (≤ v4.0 checkNoMetadataUpdates, conflict-rules §5.2).
    t.tick(12_500)
    error = delta_spark_message("MetadataChangedException", t.writer.commit_info_line(w), release="3.3")
    # The re-run MERGE reads v2 (new schema) and lands at v3.
    t.tick(180_000)
    out_file = t.data_file(day, list(range(0, 50)), status="shipped")
    cond2 = P.and_(P.eq(t.attr["id"], P.Attr("id", t.ids.take(), "long")), P.eq(t.attr["date"], day))
    t.commit("MERGE", P.merge_params(cond2), [f0.remove(t.now - 1_000), out_file], w,
             metrics=merge_metrics([f0], [out_file], copied=0, updated=50, inserted=0))
    return Incident(
        "d-alter-table",
        "a MERGE into date=2024-07-08 read v1; ALTER TABLE ADD COLUMNS landed at v2; the MERGE aborted with "
        "MetadataChangedException (orphan output left), its re-run landed at v3",
        f"{ASSEMBLED} (engineInfo {engine}, Serializable)",
        _write_error(out, error),
        (orphan.path,),
    )


# --------------------------------------------------------------------------------------
# (e) two streaming queries sharing one checkpoint
# --------------------------------------------------------------------------------------


def e_streaming_shared_checkpoint(out: Path) -> Incident:
    engine = "Apache-Spark/4.0.0 Delta-Lake/4.0.0"
    t = SparkTable(out / "table", engine, seed=505, start_ms=1721116800000)
    day = "2024-07-16"
    t.create_as_select([t.data_file(day, list(range(0, 10)))])
    query_id = t.uuid()
    next_id = 10

    def batch(epoch: int, read_version: int) -> int:
        nonlocal next_id
        f = t.data_file(day, list(range(next_id, next_id + 8)))
        next_id += 8
        m = {"numRemovedFiles": "0", "numOutputRows": "8", "numOutputBytes": str(f.size), "numAddedFiles": "1"}
        return t.commit("STREAMING UPDATE", P.streaming_update_params(query_id, epoch),
                        [SetTransaction(query_id, epoch, t.now), f], read_version, blind=True, metrics=m)

    v = 0
    for epoch in range(3):
        t.tick(60_000)
        v = batch(epoch, v)
    # A second instance of the same query (same checkpoint ⇒ same queryId) and the first
    # both run epoch 3 on version 3; the first commits v4 with txn(queryId, 3).
    t.tick(60_000)
    orphan = t.data_file(day, list(range(900, 908)))
    t.tick(700)
    w = batch(3, v)
    # The second finds v4 taken; v4's txn appId is in its readAppIds ⇒ ConcurrentTransactionException (conflict-rules §5.4).
    t.tick(400)
    error = delta_spark_message("ConcurrentTransactionException", t.writer.commit_info_line(w), release="4.0")
    t.tick(60_000)
    batch(4, w)
    return Incident(
        "e-streaming-shared-checkpoint",
        f"two instances of streaming query {query_id} (one checkpoint) both ran epoch 3 on v3; one committed v4 "
        "with its txn, the other aborted with ConcurrentTransactionException (orphan data file left)",
        f"{ASSEMBLED} (engineInfo {engine}, Serializable)",
        _write_error(out, error),
        (orphan.path,),
    )


__all__ = [
    "ASSEMBLED",
    "Incident",
    "a_merge_partitions",
    "b_writeserializable_reorder",
    "c_optimize_vs_delete",
    "d_alter_table",
    "e_streaming_shared_checkpoint",
]
