"""Generate a large, realistic delta-spark log (no data files) for benchmarks and tests.

The mix: mostly blind appends (WRITE mode=Append), MERGE / DELETE / UPDATE rewriting files
of one `date` partition, OPTIMIZE compactions (dataChange=false, SnapshotIsolation), rare
SET TBLPROPERTIES (a metaData action), and a share of commits whose readVersion is stale
(readVersion < version-1). Every stale commit's window R+1..V-1 is chosen so that the commit
passes delta-spark 3.2's conflict checks under the isolation level it records (conflict-rules §5,
§6): a DML on partition p only when no winner added (Serializable: any add; WriteSerializable:
a non-blind add) or removed files in p; an OPTIMIZE only when no winner removed a file it
compacts; a blind append only when no winner changed metadata. No window holds a metaData
change for a stale commit (conflict-rules §5.2, any winner metadata aborts in ≤ v4.0).
Deterministic for a seed; timestamps and UUIDs come from the seeded RNG.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import forensics.synth.opparams as P
from forensics.synth.actions import AddFile, CommitInfo, MetaData, ProtocolAction, dumps
from forensics.synth.datafiles import seeded_uuid
from forensics.synth.sparkformat import DEFAULT_ENGINE, SparkLogWriter

SCHEMA_FIELDS = [("id", "long"), ("amount", "double"), ("status", "string"), ("date", "date")]
SCHEMA_STRING = dumps(
    {"type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in SCHEMA_FIELDS]}
)
START_MS = 1717200000000  # 2024-06-01T00:00:00Z
TOMBSTONE_RETENTION = "interval 1 hours"
_STATUSES = ("pending", "shipped", "cancelled", "returned")


@dataclass
class SynthConfig:
    """The shape of a synthetic log: commits, partitions, stale readers, checkpoints, files per commit,
    seed."""
    commits: int = 1000
    partitions: int = 8
    stale: float = 0.1
    checkpoint_interval: int = 100
    files_per_commit: int = 2
    seed: int = 0
    engine_info: str = DEFAULT_ENGINE
    max_window: int = 6
    mean_spacing_ms: int = 15000


@dataclass
class SynthResult:
    out: str
    versions: int
    stale_commits: int
    checkpoints: int
    seconds: float
    operations: dict[str, int] = field(default_factory=dict)
    active_files: int = 0
    isolation_level: str = "Serializable"

    def to_dict(self) -> dict[str, Any]:
        return {
            "out": self.out,
            "versions": self.versions,
            "staleCommits": self.stale_commits,
            "staleShare": round(self.stale_commits / max(1, self.versions - 1), 4),
            "checkpoints": self.checkpoints,
            "seconds": round(self.seconds, 3),
            "operations": self.operations,
            "activeFiles": self.active_files,
            "isolationLevel": self.isolation_level,
        }


@dataclass
class _File:
    add: AddFile
    version: int
    rows: int


@dataclass
class _Summary:
    """What a winner did, for the stale-window checks (conflict-rules §3)."""

    blind_add: frozenset[int]
    other_add: frozenset[int]
    removed: frozenset[int]
    metadata: bool


class _Generator:
    def __init__(self, cfg: SynthConfig, out: Path):
        self.cfg = cfg
        self.rng = random.Random(cfg.seed)
        self.ids = P.ExprIds(1000, random.Random(cfg.seed + 1))
        self.writer = SparkLogWriter(out, engine_info=cfg.engine_info)
        self.writer.keep_lines = False
        self.databricks = cfg.engine_info.startswith("Databricks-Runtime/")
        # conflict-rules §2.1: OSS accepts only Serializable; Databricks defaults to WriteSerializable.
        self.level = "WriteSerializable" if self.databricks else "Serializable"
        self.dates = [(date(2024, 1, 1) + timedelta(days=i)).isoformat() for i in range(cfg.partitions)]
        self.parts: list[dict[str, _File]] = [dict() for _ in range(cfg.partitions)]
        self.summaries: dict[int, _Summary] = {}
        self.last_meta_version = 0
        self.config: dict[str, str] = {"delta.deletedFileRetentionDuration": TOMBSTONE_RETENTION}
        if cfg.checkpoint_interval != 10:
            self.config["delta.checkpointInterval"] = str(cfg.checkpoint_interval)
        if self.databricks:
            self.config["delta.isolationLevel"] = "WriteSerializable"
        self.ts = START_MS
        self.ops: Counter[str] = Counter()
        self.stale_count = 0
        self.stale_debt = 0.0
        self.checkpoints = 0
        self.next_id = 0
        self.table_id = seeded_uuid(self.rng)
        self.attr_ids = {n: self.ids.take() for n, _ in SCHEMA_FIELDS}

    # ---- helpers -----------------------------------------------------------------

    def _commit_info(self, op: str, params: dict[str, Any], read_version: int | None, level: str,
                     blind: bool, metrics: dict[str, str]) -> CommitInfo:
        ci = CommitInfo(
            timestamp=self.ts,
            operation=op,
            operation_parameters=params,
            read_version=read_version,
            isolation_level=level,
            is_blind_append=blind,
            operation_metrics=metrics,
            engine_info=self.cfg.engine_info,
            txn_id=seeded_uuid(self.rng),
        )
        if self.databricks:
            ci.user_id = "4711000000000001"
            ci.user_name = "etl@example.com"
            ci.cluster_id = "0601-000000-synth001"
        return ci

    def _new_file(self, p: int, rows: int, version: int, data_change: bool = True) -> _File:
        lo = self.next_id
        self.next_id += rows
        size = 600 + rows * 12 + self.rng.randint(0, 300)
        stats = (
            f'{{"numRecords":{rows},"minValues":{{"id":{lo},"amount":{self.rng.randint(1, 50)}.5,"status":"cancelled"}},'
            f'"maxValues":{{"id":{lo + rows - 1},"amount":{self.rng.randint(51, 999)}.25,"status":"shipped"}},'
            f'"nullCount":{{"id":0,"amount":0,"status":0}}}}'
        )
        name = f"date={self.dates[p]}/part-{self.rng.randint(0, 199):05d}-{seeded_uuid(self.rng)}.c000.snappy.parquet"
        add = AddFile(name, {"date": self.dates[p]}, size, self.ts - self.rng.randint(200, 4000), data_change, stats)
        return _File(add, version, rows)

    def _window_ok(self, read_version: int, version: int, check) -> bool:
        return all(check(self.summaries[w]) for w in range(read_version + 1, version))

    def _pick_stale_read_version(self, version: int) -> int | None:
        hi = min(self.cfg.max_window, version - 1 - self.last_meta_version)
        if hi < 1:
            return None
        d = self.rng.randint(1, hi)
        return version - 1 - d

    # ---- operations --------------------------------------------------------------

    def _append(self, version: int, read_version: int) -> tuple[list[Any], _Summary]:
        n = max(1, self.rng.randint(1, 2 * self.cfg.files_per_commit - 1))
        p = self.rng.randrange(self.cfg.partitions)
        files = [self._new_file(p, self.rng.randint(50, 5000), version) for _ in range(n)]
        for f in files:
            self.parts[p][f.add.path] = f
        metrics = {
            "numFiles": str(n),
            "numOutputRows": str(sum(f.rows for f in files)),
            "numOutputBytes": str(sum(f.add.size for f in files)),
        }
        params = P.write_params("Append", [])
        if self.databricks:
            params = {"mode": "Append", "statsOnLoad": False, "partitionBy": "[]"}
        ci = self._commit_info("WRITE", params, read_version, self.level, True, metrics)
        self.ops["WRITE"] += 1
        return [ci, *[f.add for f in files]], _Summary(frozenset([p]), frozenset(), frozenset(), False)

    def _dml_partition(self, version: int, read_version: int) -> int | None:
        stale = read_version < version - 1
        cands = [p for p in range(self.cfg.partitions) if any(f.version <= read_version for f in self.parts[p].values())]
        self.rng.shuffle(cands)
        for p in cands:
            if not stale:
                return p
            if self.level == "Serializable":
                ok = self._window_ok(read_version, version, lambda s: p not in s.blind_add and p not in s.other_add and p not in s.removed and not s.metadata)
            else:  # WriteSerializable: blind appends in p do not conflict (conflict-rules §5.6 step 1)
                ok = self._window_ok(read_version, version, lambda s: p not in s.other_add and p not in s.removed and not s.metadata)
            if ok:
                return p
        return None

    def _dml(self, op: str, version: int, read_version: int, p: int) -> tuple[list[Any], _Summary]:
        readable = [f for f in self.parts[p].values() if f.version <= read_version]
        k = min(len(readable), self.rng.randint(1, 3))
        victims = self.rng.sample(readable, k)
        removed_rows = sum(f.rows for f in victims)
        changed = max(1, removed_rows // self.rng.randint(5, 50))
        kept = removed_rows - changed
        pid = self.attr_ids["date"]
        datecond = P.eq(P.Attr("date", pid, "date"), self.dates[p])
        removes = [f.add.remove(self.ts - self.rng.randint(50, 900)) for f in victims]
        for f in victims:
            del self.parts[p][f.add.path]
        adds: list[_File] = []
        if op == "DELETE":
            if kept > 0:
                adds.append(self._new_file(p, kept, version))
            cond = P.and_(datecond, f"({P.Attr('id', self.attr_ids['id'], 'long')} < {self.next_id - self.rng.randint(0, 1000)})")
            params = P.delete_params([cond])
            metrics = {"numRemovedFiles": str(k), "numRemovedBytes": str(sum(f.add.size for f in victims)),
                       "numCopiedRows": str(kept), "numDeletionVectorsAdded": "0", "numDeletionVectorsRemoved": "0",
                       "numAddedChangeFiles": "0", "executionTimeMs": str(self.rng.randint(800, 20000)),
                       "numDeletionVectorsUpdated": "0", "numDeletedRows": str(changed),
                       "scanTimeMs": str(self.rng.randint(300, 8000)), "numAddedFiles": str(len(adds)),
                       "numAddedBytes": str(sum(f.add.size for f in adds)), "rewriteTimeMs": str(self.rng.randint(200, 9000))}
        elif op == "UPDATE":
            adds.append(self._new_file(p, removed_rows, version))
            cond = P.and_(datecond, P.eq(P.Attr("status", self.attr_ids["status"]), self.rng.choice(_STATUSES)))
            params = P.update_params([cond])
            metrics = {"numRemovedFiles": str(k), "numRemovedBytes": str(sum(f.add.size for f in victims)),
                       "numCopiedRows": str(kept), "numDeletionVectorsAdded": "0", "numDeletionVectorsRemoved": "0",
                       "numAddedChangeFiles": "0", "executionTimeMs": str(self.rng.randint(800, 20000)),
                       "numDeletionVectorsUpdated": "0", "scanTimeMs": str(self.rng.randint(300, 8000)),
                       "numAddedFiles": "1", "numUpdatedRows": str(changed),
                       "numAddedBytes": str(adds[0].add.size), "rewriteTimeMs": str(self.rng.randint(200, 9000))}
        else:  # MERGE
            inserted = self.rng.randint(0, 400)
            adds.append(self._new_file(p, removed_rows + inserted, version))
            src = self.ids.take()
            cond = P.and_(P.eq(P.Attr("id", self.attr_ids["id"], "long"), P.Attr("id", src, "long")), datecond)
            params = P.merge_params(cond)
            metrics = {"numTargetRowsCopied": str(kept), "numTargetRowsDeleted": "0", "numTargetFilesAdded": "1",
                       "numTargetBytesAdded": str(adds[0].add.size), "numTargetBytesRemoved": str(sum(f.add.size for f in victims)),
                       "numTargetRowsMatchedUpdated": str(changed), "executionTimeMs": str(self.rng.randint(2000, 60000)),
                       "numTargetRowsInserted": str(inserted), "numTargetRowsMatchedDeleted": "0",
                       "scanTimeMs": str(self.rng.randint(500, 20000)), "numTargetRowsUpdated": str(changed),
                       "numOutputRows": str(removed_rows + inserted), "numTargetRowsNotMatchedBySourceUpdated": "0",
                       "numTargetChangeFilesAdded": "0", "numSourceRows": str(changed + inserted),
                       "numTargetFilesRemoved": str(k), "numTargetRowsNotMatchedBySourceDeleted": "0",
                       "rewriteTimeMs": str(self.rng.randint(500, 20000))}
        for f in adds:
            self.parts[p][f.add.path] = f
        ci = self._commit_info(op, params, read_version, self.level, False, metrics)
        self.ops[op] += 1
        # UPDATE writes add before remove (golden-basic-with-inserts-updates); DELETE/MERGE remove first
        body = [*(f.add for f in adds), *removes] if op == "UPDATE" else [*removes, *(f.add for f in adds)]
        return [ci, *body], _Summary(frozenset(), frozenset([p]) if adds else frozenset(), frozenset([p]), False)

    def _optimize_partition(self, version: int, read_version: int) -> int | None:
        stale = read_version < version - 1
        cands = [p for p in range(self.cfg.partitions) if sum(1 for f in self.parts[p].values() if f.version <= read_version) >= 2]
        self.rng.shuffle(cands)
        for p in cands:
            # SnapshotIsolation: only a winner removing a compacted file conflicts (conflict-rules §5.7, §5.8)
            if not stale or self._window_ok(read_version, version, lambda s: p not in s.removed and not s.metadata):
                return p
        return None

    def _optimize(self, version: int, read_version: int, p: int) -> tuple[list[Any], _Summary]:
        victims = [f for f in self.parts[p].values() if f.version <= read_version]
        rows = sum(f.rows for f in victims)
        out = self._new_file(p, rows, version, data_change=False)
        dts = self.ts - self.rng.randint(500, 5000)
        removes = [f.add.remove(dts, data_change=False) for f in victims]
        for f in victims:
            del self.parts[p][f.add.path]
        self.parts[p][out.add.path] = out
        sizes = sorted(f.add.size for f in victims)
        cond = P.eq(P.Attr("date", self.attr_ids["date"], "date"), self.dates[p])
        metrics = {"numRemovedFiles": str(len(victims)), "numRemovedBytes": str(sum(sizes)), "p25FileSize": str(out.add.size),
                   "numDeletionVectorsRemoved": "0", "minFileSize": str(out.add.size), "numAddedFiles": "1",
                   "maxFileSize": str(out.add.size), "p75FileSize": str(out.add.size), "p50FileSize": str(out.add.size),
                   "numAddedBytes": str(out.add.size)}
        # conflict-rules §2.1: all file actions dataChange=false ⇒ downgraded to SnapshotIsolation
        ci = self._commit_info("OPTIMIZE", P.optimize_params([cond]), read_version, "SnapshotIsolation", False, metrics)
        self.ops["OPTIMIZE"] += 1
        return [ci, out.add, *removes], _Summary(frozenset(), frozenset([p]), frozenset([p]), False)

    def _set_properties(self, version: int) -> tuple[list[Any], _Summary]:
        props = {"delta.logRetentionDuration": f"interval {self.rng.choice([7, 14, 30, 60])} days"}
        self.config.update(props)
        ci = self._commit_info("SET TBLPROPERTIES", P.set_tblproperties_params(props), version - 1, self.level, True, {})
        self.ops["SET TBLPROPERTIES"] += 1
        self.last_meta_version = version
        return [ci, self._metadata()], _Summary(frozenset(), frozenset(), frozenset(), True)

    def _metadata(self) -> MetaData:
        return MetaData(self.table_id, SCHEMA_STRING, ["date"], dict(self.config), START_MS - 5000)

    # ---- main loop ----------------------------------------------------------------

    def run(self) -> SynthResult:
        t0 = time.perf_counter()
        cfg = self.cfg
        create_params = {"partitionBy": P.json_list(["date"]), "clusterBy": "[]", "description": None,
                         "isManaged": "false", "properties": dumps(self.config)}
        ci = self._commit_info("CREATE TABLE", create_params, None, "Serializable", True, {})
        self.writer.commit([ci, self._metadata(), ProtocolAction(1, 2)])
        self.summaries[0] = _Summary(frozenset(), frozenset(), frozenset(), True)
        retention_ms = 3600_000
        for v in range(1, cfg.commits):
            self.ts += self.rng.randint(cfg.mean_spacing_ms // 4, cfg.mean_spacing_ms * 7 // 4)
            read_version = v - 1
            self.stale_debt += cfg.stale
            if self.stale_debt >= 1.0:
                rv = self._pick_stale_read_version(v)
                if rv is not None:
                    read_version = rv
            actions, summ = self._one(v, read_version)
            if read_version < v - 1:
                self.stale_count += 1
                self.stale_debt -= 1.0
            self.writer.commit(actions, sort=False)
            self.summaries[v] = summ
            self.summaries.pop(v - cfg.max_window - 2, None)
            if cfg.checkpoint_interval > 0 and v % cfg.checkpoint_interval == 0:
                self.writer.write_checkpoint(v, min_tombstone_ts=self.ts - retention_ms)
                self._expire_tombstones(self.ts - retention_ms)
                self.checkpoints += 1
        n_files = sum(len(p) for p in self.parts)
        return SynthResult(str(self.writer.table_dir), cfg.commits, self.stale_count, self.checkpoints,
                           time.perf_counter() - t0, dict(self.ops), n_files, self.level)

    def _expire_tombstones(self, min_ts: int) -> None:
        tomb = self.writer.state.tombstones
        for path in [p for p, r in tomb.items() if r["remove"]["deletionTimestamp"] < min_ts]:
            del tomb[path]

    def _one(self, v: int, read_version: int) -> tuple[list[Any], _Summary]:
        stale = read_version < v - 1
        r = self.rng.random()
        if not stale and r < 0.008:
            return self._set_properties(v)
        if r < 0.70:
            return self._append(v, read_version)
        if r < 0.78:
            p = self._optimize_partition(v, read_version)
            if p is not None:
                return self._optimize(v, read_version, p)
            return self._append(v, read_version)
        op = "MERGE" if r < 0.86 else ("UPDATE" if r < 0.93 else "DELETE")
        p = self._dml_partition(v, read_version)
        if p is None:
            return self._append(v, read_version)
        return self._dml(op, v, read_version, p)


def synthesize(out: str | Path, cfg: SynthConfig | None = None) -> SynthResult:
    """Write a synthetic delta-spark log to `out` (which must be absent or empty)."""
    return _Generator(cfg or SynthConfig(), Path(out)).run()
