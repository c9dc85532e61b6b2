"""A small delta-spark-format table with real Parquet data files, for hand-built incidents.

Wraps SparkLogWriter with a seeded clock, UUIDs and Catalyst expression ids, and writes tiny
data files with pyarrow so delta-rs (and Spark) can read the table as well as its log.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

import forensics.synth.opparams as P
from forensics.synth.actions import AddFile, CommitInfo, MetaData, ProtocolAction, dumps
from forensics.synth.datafiles import data_file_name, seeded_uuid, write_data_file
from forensics.synth.sparkformat import SparkLogWriter

DATA_FIELDS = [("id", "long"), ("amount", "double"), ("status", "string")]
PARTITION_FIELD = ("date", "date")


def schema_string(extra: list[tuple[str, str]] | None = None) -> str:
    fields = [*DATA_FIELDS, *(extra or []), PARTITION_FIELD]
    return dumps({"type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields]})


@dataclass
class Databricks:
    """Fields a Databricks runtime adds to commitInfo (observed in the corpus)."""

    user_id: str = "5113846617090401"
    user_name: str = "data-eng@example.com"
    cluster_id: str = "0611-093015-k3v9q2lm"
    notebook_id: str | None = "2771203961445523"
    tags: dict[str, str] = field(default_factory=lambda: {"restoresDeletedRows": "false"})


class SparkTable:
    def __init__(self, table_dir: Path, engine_info: str, seed: int, start_ms: int,
                 isolation_level: str = "Serializable", databricks: Databricks | None = None):
        self.writer = SparkLogWriter(table_dir, engine_info=engine_info)
        self.dir = Path(table_dir)
        self.rng = random.Random(seed)
        self.ids = P.ExprIds(800 + seed % 97, random.Random(seed + 7))
        self.now = start_ms
        self.level = isolation_level
        self.databricks = databricks
        self.table_id = seeded_uuid(self.rng)
        self.config: dict[str, str] = {}
        self.extra_columns: list[tuple[str, str]] = []
        self.attr = {n: P.Attr(n, self.ids.take(), t) for n, t in [*DATA_FIELDS, PARTITION_FIELD]}

    # ---- clock and names ----------------------------------------------------------

    def tick(self, ms: int) -> int:
        self.now += ms
        return self.now

    def uuid(self) -> str:
        return seeded_uuid(self.rng)

    # ---- files ----------------------------------------------------------------------

    def data_file(self, day: str, ids: list[int], status: str = "pending", data_change: bool = True,
                  task: int = 0, tags: dict[str, str] | None = None) -> AddFile:
        """Write a real Parquet file into `date=<day>/` now and return its AddFile (not committed)."""
        cols: dict[str, Any] = {
            "id": pa.array(ids, pa.int64()),
            "amount": pa.array([round(10.0 + (i * 7.31) % 490, 2) for i in ids], pa.float64()),
            "status": pa.array([status] * len(ids), pa.string()),
        }
        for name, typ in self.extra_columns:
            cols[name] = pa.array([None] * len(ids), pa.float64() if typ == "double" else pa.string())
        rel = data_file_name(self.rng, {"date": day}, task)
        # Spark's file modification time: when the task finished, rounded to the second
        mtime = (self.now // 1000) * 1000
        add = write_data_file(self.dir, rel, pa.table(cols), {"date": day}, mtime, data_change)
        if tags is not None:
            add.tags = tags
        return add

    # ---- commits ----------------------------------------------------------------------

    def commit(self, operation: str, params: dict[str, Any], actions: list[Any], read_version: int | None,
               *, level: str | None = None, blind: bool = False, metrics: dict[str, str] | None = None,
               tags: dict[str, str] | None = None) -> int:
        ci = CommitInfo(
            timestamp=self.now,
            operation=operation,
            operation_parameters=params,
            read_version=read_version,
            isolation_level=level or self.level,
            is_blind_append=blind,
            operation_metrics=metrics if metrics is not None else {},
            txn_id=self.uuid(),
        )
        if self.databricks:
            db = self.databricks
            ci.user_id, ci.user_name, ci.cluster_id = db.user_id, db.user_name, db.cluster_id
            ci.notebook = {"notebookId": db.notebook_id} if db.notebook_id else None
            ci.tags = dict(tags if tags is not None else db.tags)
        elif tags:
            ci.tags = tags
        return self.writer.commit([ci, *actions])

    def metadata(self) -> MetaData:
        return MetaData(self.table_id, schema_string(self.extra_columns), ["date"], dict(self.config), self.now - 2300)

    def create_as_select(self, files: list[AddFile], properties: dict[str, str] | None = None) -> int:
        """Version 0: CREATE TABLE AS SELECT partitioned by date (Delta 3.x parameter set)."""
        self.config = dict(properties or {})
        params = {"partitionBy": P.json_list(["date"]), "clusterBy": "[]", "description": None,
                  "isManaged": "false", "properties": dumps(self.config)}
        if self.databricks:
            params["isManaged"] = "true"
            params["statsOnLoad"] = False
        metrics = write_metrics(files)
        return self.commit("CREATE TABLE AS SELECT", params, [self.metadata(), ProtocolAction(1, 2), *files], None,
                           level=self.level, blind=True, metrics=metrics)

    def append(self, files: list[AddFile], read_version: int) -> int:
        params: dict[str, Any] = P.write_params("Append", [])
        if self.databricks:
            params = {"mode": "Append", "statsOnLoad": False, "partitionBy": "[]"}
        return self.commit("WRITE", params, files, read_version, blind=True, metrics=write_metrics(files))

    def stats_rows(self, add: AddFile) -> int:
        return int(json.loads(add.stats or "{}").get("numRecords", 0))


def write_metrics(files: list[AddFile]) -> dict[str, str]:
    rows = sum(json.loads(f.stats or "{}").get("numRecords", 0) for f in files)
    return {"numFiles": str(len(files)), "numOutputRows": str(rows), "numOutputBytes": str(sum(f.size for f in files))}
