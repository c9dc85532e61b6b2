"""Typed records passed between the reader, the set builder, the rule engine and the views.

Names follow Delta's own vocabulary (readVersion, winning commit, blind append, read
predicate) so a reader of this code can hold it against delta-spark's ConflictChecker.
Everything here is plain data: no Spark, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields, make_dataclass
from enum import Enum
from typing import Any, Literal, TypeVar, get_args

from forensics.times import with_iso

# --------------------------------------------------------------------------------------
# Certainty labels
# --------------------------------------------------------------------------------------


class Bound(str, Enum):
    """How a reconstructed set relates to what the engine really recorded.

    exact:    equal to what the engine recorded (read straight from log evidence).
    superset: contains what the engine recorded (we may report conflicts it did not see).
    subset:   contained in what the engine recorded (we may miss conflicts).
    unknown:  the log does not say.
    """

    EXACT = "exact"
    SUPERSET = "superset"
    SUBSET = "subset"
    UNKNOWN = "unknown"


# --------------------------------------------------------------------------------------
# Diagnostics (bad input, stray files, anomalies)
# --------------------------------------------------------------------------------------

Severity = Literal["info", "warning", "error"]


def where(file: str | None, version: int | None) -> str:
    """`_delta_log/…7.json, version 7`: what a diagnostic concerns, for its one line."""
    return ", ".join([*([file] if file else []), *([f"version {version}"] if version is not None else [])])


@dataclass(frozen=True)
class Finding:
    """Something noticed while reading: a stray file, a gap, a broken line.

    `code` is stable (documented in docs/findings.md); `message` is one line for humans.
    `file` is relative to the table root where possible; `version` is the commit involved.
    """

    code: str
    message: str
    severity: Severity = "warning"
    file: str | None = None
    version: int | None = None

    def one_line(self) -> str:
        """The finding as the CLI prints it on stderr: severity, code, file and version, message."""
        loc = where(self.file, self.version)
        return f"{self.severity}: {self.code}{f' ({loc})' if loc else ''}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        """The finding as JSON."""
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "file": self.file,
            "version": self.version,
        }


# --------------------------------------------------------------------------------------
# Log contents
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeletionVectorRef:
    storage_type: str
    path_or_inline_dv: str
    offset: int | None = None
    size_in_bytes: int | None = None
    cardinality: int | None = None

    @property
    def unique_id(self) -> str:
        """Delta's DeletionVectorDescriptor.uniqueId: storageType + pathOrInlineDv [+ '@' offset]."""
        base = f"{self.storage_type}{self.path_or_inline_dv}"
        return f"{base}@{self.offset}" if self.offset is not None else base


@dataclass(frozen=True, slots=True)
class FileAction:
    """One add, remove or cdc action, as written in the log (path not decoded)."""

    version: int
    kind: Literal["add", "remove", "cdc"]
    path: str
    partition_values: dict[str, str | None] = field(default_factory=dict)
    size: int | None = None
    data_change: bool | None = None
    stats: str | None = None  # raw JSON text; parse lazily
    deletion_vector: DeletionVectorRef | None = None
    modification_time: int | None = None
    deletion_timestamp: int | None = None
    tags: dict[str, str] | None = None

    @property
    def key(self) -> tuple[str, str | None]:
        """Files are identified by (path, deletion-vector id), as in Delta's log replay."""
        return (self.path, self.deletion_vector.unique_id if self.deletion_vector else None)


def partition_values_of(text: str | None) -> Any:
    """A file action's partitionValues from the log's JSON text, as its FileAction carries them
    (absent, empty or unreadable: none)."""
    if not text:
        return {}
    try:
        return json.loads(text) or {}
    except ValueError:
        return {}


@dataclass(frozen=True, slots=True)
class CommitRecord:
    """One retained version of the table, from its commitInfo and action counts.

    A field the commit does not carry is None (not a default): delta-rs writes no
    readVersion, old writers write no isBlindAppend, hand-built logs have no commitInfo.
    """

    version: int
    timestamp: int | None  # commitInfo.timestamp (ms), else the file's modification time
    in_commit_timestamp: int | None
    file_modification_time: int | None
    operation: str | None
    operation_parameters: dict[str, Any]  # decoded (see forensics.log.params)
    read_version: int | None
    isolation_level: str | None
    is_blind_append: bool | None
    txn_id: str | None
    engine_info: str | None
    user_id: str | None = None
    user_name: str | None = None
    job: dict[str, Any] | None = None
    notebook: dict[str, Any] | None = None
    cluster_id: str | None = None
    operation_metrics: dict[str, Any] | None = None  # numbers as numbers whatever the writer (log.params.metric_value)
    user_metadata: str | None = None
    tags: dict[str, str] | None = None
    client_version: str | None = None  # delta-rs' clientVersion
    other_commit_info: dict[str, Any] | None = None  # every other commitInfo key, as written (None: no commitInfo)
    num_add: int = 0
    num_remove: int = 0
    num_cdc: int = 0
    partitions_touched: list[dict[str, str | None]] = field(default_factory=list)
    has_metadata: bool = False
    has_protocol: bool = False
    has_txn: bool = False
    has_domain_metadata: bool = False
    has_commit_info: bool = False
    txn_app_ids: dict[str, int] = field(default_factory=dict)  # appId -> version
    domains: list[str] = field(default_factory=list)
    source: Literal["commit", "compacted", "staged", "checkpoint"] = "commit"
    commit_info_raw: str | None = None  # the commitInfo object as written (JSON text)


_Frozen = TypeVar("_Frozen")


def positional_builder(cls: type[_Frozen]) -> Callable[..., _Frozen]:
    """`cls(*values)` for a frozen slotted dataclass given every field, in order, at a fifth of the
    cost. A frozen `__init__` sets each field through `object.__setattr__` (38 calls for a
    CommitRecord; a 1,000,000-commit replay builds a million of them and three million
    FileActions): the values go instead into a plain slotted twin of the same fields, and the
    object's class then becomes `cls`, which Python allows between classes of identical slots. The
    result is a `cls` in every respect, frozen included (tests/test_model_builders.py)."""
    twin = make_dataclass(f"_{cls.__name__}Fields", [(f.name, f.type) for f in fields(cls)],  # type: ignore[arg-type]
                          slots=True, eq=False, repr=False)
    if getattr(twin, "__slots__", None) != getattr(cls, "__slots__", ()):
        raise TypeError(f"{cls.__name__} is not a slotted dataclass")

    def build(*values: Any) -> _Frozen:
        obj = twin(*values)
        obj.__class__ = cls
        return obj  # type: ignore[return-value]

    return build


@dataclass(frozen=True)
class Protocol:
    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] | None = None
    writer_features: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "minReaderVersion": self.min_reader_version,
            "minWriterVersion": self.min_writer_version,
        }
        if self.reader_features is not None:
            d["readerFeatures"] = list(self.reader_features)
        if self.writer_features is not None:
            d["writerFeatures"] = list(self.writer_features)
        return d


@dataclass(frozen=True)
class Metadata:
    id: str | None
    name: str | None
    description: str | None
    format_provider: str | None
    schema_string: str | None
    partition_columns: tuple[str, ...]
    configuration: dict[str, str]
    created_time: int | None

    def to_dict(self) -> dict[str, Any]:
        return with_iso({
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "format": {"provider": self.format_provider},
            "schemaString": self.schema_string,
            "partitionColumns": list(self.partition_columns),
            "configuration": dict(self.configuration),
            "createdTime": self.created_time,
        }, "createdTime")


@dataclass(frozen=True)
class Snapshot:
    """Table state at one version: what a reader at that version sees."""

    version: int
    files: list[FileAction]  # active adds, keyed by (path, DV id)
    protocol: Protocol | None
    metadata: Metadata | None
    app_transactions: dict[str, int]
    domain_metadata: dict[str, str]
    base_checkpoint: int | None  # the checkpoint the replay started from, if any


# --------------------------------------------------------------------------------------
# Read and write sets (issue: per-commit read/write sets)
# --------------------------------------------------------------------------------------


@dataclass(slots=True)
class ReadSet:
    """What a transaction read, as delta-spark's OptimisticTransaction records it (conflict-rules §4)."""

    partition_predicates: list[str]  # SQL text, `TRUE` for a whole-table read predicate
    data_predicates: list[str]
    whole_table: bool
    files: list[FileAction] | None  # None = not known
    files_bound: Bound
    app_ids: set[str]
    recorded_read: bool  # False = the commit recorded no read at all (blind append)
    why: str  # the reason for each label, in words
    predicate_bound: Bound = Bound.EXACT
    # True = the log records no read at all for a transaction that did read (an append recorded as
    # not blind): the whole-table read is an assumption, an upper bound the engine never stated.
    assumed: bool = False


@dataclass(slots=True)
class WriteSet:
    """What a transaction committed."""

    adds: list[FileAction]
    removes: list[FileAction]
    cdc: list[FileAction]
    metadata: Metadata | None
    protocol: Protocol | None
    app_txns: dict[str, int]
    domains: list[str]
    is_blind_append: bool  # the value the conflict checker would use
    is_blind_append_recorded: bool | None  # what commitInfo said (None = absent)

    @property
    def metadata_changed(self) -> bool:
        return self.metadata is not None

    @property
    def protocol_changed(self) -> bool:
        return self.protocol is not None


# --------------------------------------------------------------------------------------
# Verdicts
# --------------------------------------------------------------------------------------

ExceptionName = Literal[
    "ConcurrentAppendException",
    "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException",
    "MetadataChangedException",
    "ProtocolChangedException",
    "ConcurrentTransactionException",
    "ConcurrentWriteException",
]

EXCEPTION_NAMES: tuple[str, ...] = get_args(ExceptionName)

Verdict = Literal["clean", "reordered", "anomaly", "skipped"]


# --------------------------------------------------------------------------------------
# Inputs of the conflict checker
# --------------------------------------------------------------------------------------


@dataclass(slots=True)
class Transaction:
    """The current transaction, as the conflict checker sees it at commit time.

    For a logged commit `version` is where it landed; for a hypothetical or failed one it
    is None. `isolation_level` is the effective level (conflict-rules §2), after any downgrade.
    """

    operation: str | None
    operation_parameters: dict[str, Any]
    read_version: int
    isolation_level: str  # "Serializable" | "WriteSerializable" | "SnapshotIsolation"
    read: ReadSet
    write: WriteSet
    partition_columns: tuple[str, ...]
    schema_string: str | None = None
    read_metadata: Metadata | None = None
    read_protocol: Protocol | None = None
    engine_info: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    txn_id: str | None = None
    version: int | None = None
    isolation_level_bound: Bound = Bound.EXACT  # inferred when the commit did not record it


@dataclass(slots=True)
class WinningCommit:
    """A commit that landed between the transaction's readVersion and its own commit (conflict-rules §3)."""

    version: int
    operation: str | None
    adds: list[FileAction]
    removes: list[FileAction]
    metadata: Metadata | None
    protocol: Protocol | None
    app_txns: dict[str, int]
    domains: list[str]
    is_blind_append: bool | None  # as recorded; None (absent) is treated as False by delta-spark
    commit: CommitRecord | None = None
    tags: dict[str, str] = field(default_factory=dict)

ISOLATION_LEVELS: tuple[str, ...] = ("Serializable", "WriteSerializable", "SnapshotIsolation")


def hive_partition(pv: dict[str, Any] | None) -> str | None:
    """{"date": "2024-06-25"} -> "date=2024-06-25" (null values as Hive's default partition name)."""
    if pv is None:
        return None
    if not pv:
        return ""
    return "/".join(f"{k}={'__HIVE_DEFAULT_PARTITION__' if v is None else v}" for k, v in pv.items())


# --------------------------------------------------------------------------------------
# Operations: one classification for the rules, the statistics and the TUI's matrix
# --------------------------------------------------------------------------------------

COMMIT_LARGE_OPS = {"CONVERT", "CLONE", "SHALLOW CLONE", "DEEP CLONE", "RESTORE"}
# delta-spark v3.3+: re-commit existing files to assign (or drop) row ids (conflict-rules §5.5, §8.2)
ROW_TRACKING_BACKFILL, ROW_TRACKING_UNBACKFILL = "ROW TRACKING BACKFILL", "ROW TRACKING UNBACKFILL"
METADATA_ONLY_OPS = {
    "SET TBLPROPERTIES",
    "UNSET TBLPROPERTIES",
    "ADD COLUMNS",
    "ADD COLUMN",
    "CHANGE COLUMN",
    "CHANGE COLUMNS",
    "RENAME COLUMN",
    "DROP COLUMNS",
    "DROP COLUMN",
    "REPLACE COLUMNS",
    "CLUSTER BY",
    "ALTER COLUMN",
    "UPDATE FIELD METADATA",
    "UPDATE TABLE METADATA",
    "DROP CONSTRAINT",
    "ADD FEATURE",
    "DROP FEATURE",
    "UPGRADE PROTOCOL",
    "CREATE TABLE",
    "VACUUM START",
    "VACUUM END",
    "COMPUTE STATS",
    "FSCK",
}
REPLACE_OPS = {"CREATE OR REPLACE TABLE", "REPLACE TABLE", "CREATE OR REPLACE TABLE AS SELECT", "REPLACE TABLE AS SELECT"}

# The operation classes of the Databricks docs' write-conflict table (conflict-rules §11), plus
# METADATA (schema/property/feature changes, CREATE and REPLACE: they abort concurrent writers by
# the metadata rule), OTHER and UNKNOWN (no commitInfo).
OPERATION_CLASSES = ("INSERT", "UPDATE/DELETE/MERGE", "OPTIMIZE", "METADATA", "OTHER", "UNKNOWN")
_DML_OPS = {"UPDATE", "DELETE", "MERGE", "MERGE INTO", "TRUNCATE"}
_COMPACT_OPS = {"OPTIMIZE", "COMPACTION", "ZORDER", "REORG", "REORG TABLE", "AUTO OPTIMIZE"}
_APPEND_OPS = {"WRITE", "INSERT", "APPEND", "STREAMING UPDATE", "COPY INTO"}


def operation_class(operation: str | None, params: dict[str, Any] | None = None) -> str:
    """The class of a commit's operation in Delta's conflict tables.

    A WRITE or STREAMING UPDATE that overwrites (mode Overwrite, outputMode Complete, or a
    replaceWhere predicate) rewrites data and reads the table, so it sits with UPDATE/DELETE/MERGE
    (conflict-rules §8.2); an appending one is an INSERT.
    """
    if operation is None:
        return "UNKNOWN"
    op = operation.strip().upper()
    params = params or {}
    if op in _COMPACT_OPS or op.startswith("OPTIMIZE"):
        return "OPTIMIZE"
    if op in _DML_OPS or op.startswith("MERGE"):
        return "UPDATE/DELETE/MERGE"
    if op in _APPEND_OPS or op.startswith("WRITE"):
        mode = str(params.get("mode") or params.get("outputMode") or "").lower()
        if mode in ("overwrite", "complete") or params.get("predicate") not in (None, "", "[]"):
            return "UPDATE/DELETE/MERGE"
        return "INSERT"
    if op in METADATA_ONLY_OPS or op in REPLACE_OPS or op.startswith(("ALTER", "SET ", "UNSET ", "CREATE", "REPLACE")):
        return "METADATA"
    return "OTHER"


_DELTA_LAKE_RELEASE = re.compile(r"Delta-Lake/(\d+)\.(\d+)")


def delta_release(engine_info: str | None) -> tuple[int, int] | None:
    """The delta-spark release an engineInfo names (`Delta-Lake/3.2.0` -> (3, 2)); None when it names none."""
    m = _DELTA_LAKE_RELEASE.search(engine_info or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


# Built by the hundred thousand (replay, the commit index): see positional_builder.
new_file_action = positional_builder(FileAction)
new_commit_record = positional_builder(CommitRecord)
