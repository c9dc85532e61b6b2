"""Write a Delta log in exactly the on-disk form delta-spark writes.

delta-spark's jars cannot be fetched here, so where no available engine can produce a log
we assemble it ourselves and say so (README, sample_logs/README.md). What we reproduce,
checked against real commits in ../shared/corpus/tables:
  * one JSON object per line, `\\n`-separated, no trailing newline after the last line;
  * commitInfo first, then metaData, protocol, txn, domainMetadata, then file actions in
    the order the caller gives (delta-spark ≥2.x puts commitInfo first; CTAS samples show
    metaData before protocol);
  * keys in Jackson declaration order, None fields omitted (forensics.synth.actions);
  * operationParameters in their on-disk encoding (forensics.synth.opparams, conflict-rules §8.1);
  * classic Parquet checkpoints + `_last_checkpoint` with checksum (forensics.synth.checkpoint).
The writer keeps the table state (active files, tombstones, txns) so it can checkpoint.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from forensics.errors import UsageError
from forensics.synth.actions import Action, CommitInfo, action_line
from forensics.synth.checkpoint import write_checkpoint_file, write_last_checkpoint

DEFAULT_ENGINE = "Apache-Spark/3.5.1 Delta-Lake/3.2.0"
_ORDER = {"commitInfo": 0, "metaData": 1, "protocol": 2, "txn": 3, "domainMetadata": 4}


class TableDirNotEmpty(UsageError):
    """Raised instead of writing into an existing, non-empty table directory."""


@dataclass
class TableState:
    """What a checkpoint at some version holds (action objects as on disk)."""

    protocol: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    files: dict[str, dict[str, Any]] = field(default_factory=dict)  # path -> add
    tombstones: dict[str, dict[str, Any]] = field(default_factory=dict)  # path -> remove
    txns: dict[str, dict[str, Any]] = field(default_factory=dict)  # appId -> txn
    domains: dict[str, dict[str, Any]] = field(default_factory=dict)

    def apply(self, objs: Iterable[dict[str, Any]]) -> None:
        for obj in objs:
            (kind, a), = obj.items()
            if kind == "add":
                self.files[a["path"]] = obj
                self.tombstones.pop(a["path"], None)
            elif kind == "remove":
                self.files.pop(a["path"], None)
                self.tombstones[a["path"]] = obj
            elif kind == "metaData":
                self.metadata = obj
            elif kind == "protocol":
                self.protocol = obj
            elif kind == "txn":
                self.txns[a["appId"]] = obj
            elif kind == "domainMetadata":
                if a.get("removed"):
                    self.domains.pop(a["domain"], None)
                else:
                    self.domains[a["domain"]] = obj

    def checkpoint_actions(self, min_tombstone_ts: int | None = None) -> list[dict[str, Any]]:
        """Protocol, metadata, txns, domains, live tombstones, then adds (delta-spark's set)."""
        out: list[dict[str, Any]] = []
        if self.protocol:
            out.append(self.protocol)
        if self.metadata:
            out.append(self.metadata)
        out.extend(self.txns.values())
        out.extend(self.domains.values())
        for r in self.tombstones.values():
            ts = r["remove"].get("deletionTimestamp") or 0
            if min_tombstone_ts is None or ts >= min_tombstone_ts:
                out.append(r)
        out.extend(self.files.values())
        return out


class SparkLogWriter:
    """Append versions to `<table_dir>/_delta_log` in delta-spark's on-disk format.

    Refuses to write into a table directory that already has content unless it is empty.
    """

    def __init__(self, table_dir: str | os.PathLike[str], engine_info: str = DEFAULT_ENGINE, spark_version: str | None = None):
        self.table_dir = Path(table_dir)
        if self.table_dir.exists() and any(self.table_dir.iterdir()):
            raise TableDirNotEmpty(f"{self.table_dir} exists and is not empty; pass an empty or new directory", file=str(self.table_dir))
        self.log_dir = self.table_dir / "_delta_log"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.engine_info = engine_info
        self.spark_version = spark_version or _spark_version(engine_info)
        self.state = TableState()
        self.next_version = 0
        self.commit_lines: dict[int, list[str]] = {}
        self.keep_lines = True

    # ---- commits ------------------------------------------------------------------

    def commit(self, actions: list[Action | dict[str, Any]], version: int | None = None, sort: bool = True) -> int:
        """Write one version from actions; commitInfo gets this writer's engineInfo if unset."""
        v = self.next_version if version is None else version
        objs: list[dict[str, Any]] = []
        for a in actions:
            if isinstance(a, CommitInfo) and a.engine_info is None:
                a.engine_info = self.engine_info
            objs.append(a if isinstance(a, dict) else a.to_obj())
        if sort:
            # stable: commitInfo, metaData, protocol, txn, domainMetadata, then file actions as given
            objs.sort(key=lambda o: _ORDER.get(next(iter(o)), 9))
        lines = [action_line(o) for o in objs]
        self.write_lines(v, lines)
        self.state.apply(objs)
        return v

    def write_lines(self, version: int, lines: list[str]) -> Path:
        """Create `<version>.json` (fails if it exists: put-if-absent, like a real commit)."""
        path = self.log_dir / f"{version:020d}.json"
        with open(path, "x", encoding="utf-8", newline="\n") as fh:
            fh.write("\n".join(lines))
        if self.keep_lines:
            self.commit_lines[version] = lines
        self.next_version = max(self.next_version, version + 1)
        return path

    def commit_info_line(self, version: int) -> str:
        """The commitInfo line of a version written by this writer."""
        lines = self.commit_lines.get(version)
        if lines is None:
            lines = (self.log_dir / f"{version:020d}.json").read_text(encoding="utf-8").splitlines()
        for line in lines:
            if line.startswith('{"commitInfo"'):
                return line
        raise KeyError(f"version {version} has no commitInfo")

    # ---- checkpoints -------------------------------------------------------------

    def write_checkpoint(self, version: int, state: TableState | None = None, min_tombstone_ts: int | None = None) -> Path:
        """Classic checkpoint of `state` (default: this writer's state, which must be at `version`)."""
        st = state or self.state
        actions = st.checkpoint_actions(min_tombstone_ts)
        path, size, n_add = write_checkpoint_file(self.log_dir, version, actions, self.spark_version)
        write_last_checkpoint(self.log_dir, version, size, path.stat().st_size, n_add)
        return path


def _spark_version(engine_info: str) -> str:
    # "Apache-Spark/3.5.1 Delta-Lake/3.2.0" -> "3.5.1"; Databricks prints its runtime instead.
    for tok in engine_info.split():
        if tok.startswith("Apache-Spark/"):
            return tok.split("/", 1)[1]
    return "3.5.0"
