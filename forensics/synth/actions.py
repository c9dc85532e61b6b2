"""Delta log actions as delta-spark writes them (key order = Jackson declaration order).

delta-spark serialises its action case classes with Jackson (`JsonInclude.NON_ABSENT`), so a
field that is None is omitted and the keys come out in the order the case class declares
them (`actions/actions.scala`). We mirror that order here, checked against real commits in
../shared/corpus/tables (golden-basic-with-inserts-merge, golden-checkpoint,
krs-compacted-log-files-table for Databricks). Models delta-spark 3.x / 4.0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Union

_SEP = (",", ":")


def dumps(obj: Any) -> str:
    """Compact JSON as Jackson writes it: no spaces, UTF-8 (non-ASCII not escaped)."""
    return json.dumps(obj, separators=_SEP, ensure_ascii=False)


def _put(d: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        d[key] = value


@dataclass
class DeletionVector:
    storage_type: str
    path_or_inline_dv: str
    size_in_bytes: int
    cardinality: int
    offset: int | None = None

    def to_obj(self) -> dict[str, Any]:
        d: dict[str, Any] = {"storageType": self.storage_type, "pathOrInlineDv": self.path_or_inline_dv}
        _put(d, "offset", self.offset)
        d["sizeInBytes"] = self.size_in_bytes
        d["cardinality"] = self.cardinality
        return d


@dataclass
class AddFile:
    path: str
    partition_values: dict[str, str | None]
    size: int
    modification_time: int
    data_change: bool = True
    stats: str | None = None  # JSON text, as on disk
    tags: dict[str, str] | None = None
    deletion_vector: DeletionVector | None = None

    def to_obj(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "path": self.path,
            "partitionValues": self.partition_values,
            "size": self.size,
            "modificationTime": self.modification_time,
            "dataChange": self.data_change,
        }
        _put(d, "stats", self.stats)
        _put(d, "tags", self.tags)
        if self.deletion_vector is not None:
            d["deletionVector"] = self.deletion_vector.to_obj()
        return {"add": d}

    def remove(self, deletion_timestamp: int, data_change: bool = True, with_stats: bool = True) -> "RemoveFile":
        """The tombstone delta-spark writes for this file (`AddFile.removeWithTimestamp`)."""
        stats = None
        if with_stats and self.stats is not None:
            # delta-spark ≥3.0 keeps only numRecords (+ tightBounds) in a remove's stats.
            try:
                num = json.loads(self.stats).get("numRecords")
            except ValueError:
                num = None
            stats = None if num is None else dumps({"numRecords": num})
        return RemoveFile(
            path=self.path,
            deletion_timestamp=deletion_timestamp,
            data_change=data_change,
            partition_values=self.partition_values,
            size=self.size,
            tags=self.tags,
            deletion_vector=self.deletion_vector,
            stats=stats,
        )


@dataclass
class RemoveFile:
    path: str
    deletion_timestamp: int
    data_change: bool = True
    extended_file_metadata: bool | None = True
    partition_values: dict[str, str | None] | None = None
    size: int | None = None
    tags: dict[str, str] | None = None
    deletion_vector: DeletionVector | None = None
    stats: str | None = None

    def to_obj(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "path": self.path,
            "deletionTimestamp": self.deletion_timestamp,
            "dataChange": self.data_change,
        }
        _put(d, "extendedFileMetadata", self.extended_file_metadata)
        _put(d, "partitionValues", self.partition_values)
        _put(d, "size", self.size)
        _put(d, "tags", self.tags)
        if self.deletion_vector is not None:
            d["deletionVector"] = self.deletion_vector.to_obj()
        _put(d, "stats", self.stats)
        return {"remove": d}


@dataclass
class AddCDCFile:
    path: str
    partition_values: dict[str, str | None]
    size: int
    tags: dict[str, str] | None = None

    def to_obj(self) -> dict[str, Any]:
        d: dict[str, Any] = {"path": self.path, "partitionValues": self.partition_values, "size": self.size, "dataChange": False}
        _put(d, "tags", self.tags)
        return {"cdc": d}


@dataclass
class MetaData:
    id: str
    schema_string: str
    partition_columns: list[str]
    configuration: dict[str, str] = field(default_factory=dict)
    created_time: int | None = None
    name: str | None = None
    description: str | None = None

    def to_obj(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id}
        _put(d, "name", self.name)
        _put(d, "description", self.description)
        d["format"] = {"provider": "parquet", "options": {}}
        d["schemaString"] = self.schema_string
        d["partitionColumns"] = list(self.partition_columns)
        d["configuration"] = dict(self.configuration)
        _put(d, "createdTime", self.created_time)
        return {"metaData": d}


@dataclass
class ProtocolAction:
    min_reader_version: int = 1
    min_writer_version: int = 2
    reader_features: list[str] | None = None
    writer_features: list[str] | None = None

    def to_obj(self) -> dict[str, Any]:
        d: dict[str, Any] = {"minReaderVersion": self.min_reader_version, "minWriterVersion": self.min_writer_version}
        _put(d, "readerFeatures", self.reader_features)
        _put(d, "writerFeatures", self.writer_features)
        return {"protocol": d}


@dataclass
class SetTransaction:
    app_id: str
    version: int
    last_updated: int | None = None

    def to_obj(self) -> dict[str, Any]:
        d: dict[str, Any] = {"appId": self.app_id, "version": self.version}
        _put(d, "lastUpdated", self.last_updated)
        return {"txn": d}


@dataclass
class CommitInfo:
    """commitInfo in Jackson declaration order (conflict-rules §7.4).

    `operation_parameters` holds the values *as written on disk* (conflict-rules §8.1): build them
    with `forensics.synth.opparams` so list parameters become JSON strings holding JSON text.
    """

    timestamp: int
    operation: str
    operation_parameters: dict[str, Any]
    read_version: int | None = None
    isolation_level: str | None = "Serializable"
    is_blind_append: bool | None = None
    operation_metrics: dict[str, str] | None = None
    engine_info: str | None = None
    txn_id: str | None = None
    in_commit_timestamp: int | None = None
    user_id: str | None = None
    user_name: str | None = None
    job: dict[str, Any] | None = None
    notebook: dict[str, Any] | None = None
    cluster_id: str | None = None
    user_metadata: str | None = None
    tags: dict[str, str] | None = None

    def to_obj(self) -> dict[str, Any]:
        d: dict[str, Any] = {}
        _put(d, "inCommitTimestamp", self.in_commit_timestamp)
        d["timestamp"] = self.timestamp
        _put(d, "userId", self.user_id)
        _put(d, "userName", self.user_name)
        d["operation"] = self.operation
        d["operationParameters"] = self.operation_parameters
        _put(d, "job", self.job)
        _put(d, "notebook", self.notebook)
        _put(d, "clusterId", self.cluster_id)
        _put(d, "readVersion", self.read_version)
        _put(d, "isolationLevel", self.isolation_level)
        _put(d, "isBlindAppend", self.is_blind_append)
        _put(d, "operationMetrics", self.operation_metrics)
        _put(d, "userMetadata", self.user_metadata)
        _put(d, "tags", self.tags)
        _put(d, "engineInfo", self.engine_info)
        _put(d, "txnId", self.txn_id)
        return {"commitInfo": d}


@dataclass
class DomainMetadata:
    domain: str
    configuration: str
    removed: bool = False

    def to_obj(self) -> dict[str, Any]:
        return {"domainMetadata": {"domain": self.domain, "configuration": self.configuration, "removed": self.removed}}


Action = Union[CommitInfo, MetaData, ProtocolAction, SetTransaction, AddFile, RemoveFile, AddCDCFile, DomainMetadata]


def action_line(action: Action | dict[str, Any]) -> str:
    """One log line for an action (a dict is written as given, in its own key order)."""
    obj = action if isinstance(action, dict) else action.to_obj()
    return dumps(obj)
