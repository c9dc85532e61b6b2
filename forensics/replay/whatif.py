"""What if a transaction had read version R and tried to commit now?

We build the hypothetical transaction from the snapshot at R: its read set the way the
engine would record it (the same planning as for logged commits, forensics.sets.commit_sets), and the
actions it would commit (files matching the predicate for DELETE/UPDATE/overwrite, new files
in the named partitions for appends, the files an OPTIMIZE would compact). Then we replay it
against R+1..until with the chosen profile.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from forensics.errors import ExitCode, ForensicsError
from forensics.log.delta_log import DeltaLog
from forensics.model import Bound, CommitRecord, FileAction, Metadata, WriteSet
from forensics.predicates import matches_partition, may_match_stats, parse_predicate
from forensics.model import ISOLATION_LEVELS
from forensics.replay.verdict import transaction_from_sets, winning_commit
from forensics.rules import check_window, get_profile, profile_for_engine_info
from forensics.rules.results import WindowResult, outcome_fields
from forensics.log.schema import TableSchema
from forensics.sets.commit_sets import StateIndex, build_sets, writer_family

OPERATIONS = ("INSERT", "APPEND", "OVERWRITE", "WRITE", "DELETE", "UPDATE", "MERGE", "OPTIMIZE", "SET TBLPROPERTIES", "ADD COLUMNS", "STREAMING UPDATE")


@dataclass
class WhatIfRequest:
    """A hypothetical transaction to replay against the log: what it read, what it does, where."""
    read_version: int
    operation: str
    predicate: str | None = None
    mode: str | None = None  # Append | Overwrite (WRITE)
    partitions: list[dict[str, str]] = field(default_factory=list)
    isolation_level: str | None = None
    rules: str | None = None
    until: int | None = None
    app_id: str | None = None  # streaming query id / txnAppId


@dataclass
class WhatIfResult:
    """The hypothetical transaction's outcome. The answer is flat (`verdict`, `exception`,
    `winning_version`, `rule`, `partition`, `file`, `message`, `certainty`: the JSON's keys of the
    same names); `result` keeps the replay's full record with every check."""

    request: WhatIfRequest
    result: WindowResult
    profile_why: str
    isolation_level: str
    read_summary: str
    write_summary: str
    winners: list[int]
    notes: list[str]

    @property
    def verdict(self) -> str:
        """`commit` or `abort`: what the engine would do with the transaction."""
        return self.result.verdict

    @property
    def exception(self) -> str | None:
        """The exception it would abort with, e.g. `ConcurrentAppendException` (None: it commits)."""
        return self.result.exception

    @property
    def winning_version(self) -> int | None:
        """The commit that would beat it."""
        return self.result.winning_version

    @property
    def rule(self) -> str:
        """The check that would abort it, or `none`."""
        return self.result.rule

    @property
    def partition(self) -> dict[str, str | None] | None:
        """The partition the conflict would be on, if any."""
        return self.result.partition

    @property
    def file(self) -> str | None:
        """The data file the conflict would be on, if any."""
        return self.result.file

    @property
    def message(self) -> str:
        """The engine's message for an abort; a one-line summary for a commit."""
        return self.result.message

    @property
    def reordered_before(self) -> list[int]:
        """Winners it would be serialised before (forgiven blind appends)."""
        return list(self.result.reordered_before)

    @property
    def certainty(self) -> str:
        """exact, superset, subset, unknown, inferred: how far the replay's inputs are known."""
        return self.result.certainty.value

    @property
    def profile(self) -> str:
        """The rule profile it was replayed with."""
        return self.result.profile

    @property
    def read_version(self) -> int:
        """The snapshot version the hypothetical transaction read."""
        return self.request.read_version

    @property
    def checks(self) -> list[Any]:
        """Every check against every winning commit (CheckOutcome)."""
        return list(self.result.checks)

    def to_dict(self) -> dict[str, Any]:
        """The `whatif --json` document (camelCase keys, without `schema_version`)."""
        d = {
            "verdict": self.result.verdict,
            **outcome_fields(self.result),
            "message": self.result.message,
            "reorderedBefore": list(self.result.reordered_before),
        }
        d.update(
            {
                "profile": self.result.profile,
                "profileWhy": self.profile_why,
                "isolationLevel": self.isolation_level,
                "certainty": self.result.certainty.value,
                "why": self.result.why,
                "readVersion": self.request.read_version,
                "winningCommitsChecked": self.winners,
                "read": self.read_summary,
                "write": self.write_summary,
                "notes": self.notes,
                "checks": [c.to_dict() for c in self.result.checks],
            }
        )
        return d


def _normalise_op(req: WhatIfRequest) -> tuple[str, str | None]:
    op = req.operation.strip().upper().replace("_", " ")
    if op in ("INSERT", "APPEND"):
        return "WRITE", "Append"
    if op == "OVERWRITE":
        return "WRITE", "Overwrite"
    if op == "WRITE":
        return "WRITE", (req.mode or "Append").capitalize()
    if op in ("ALTER", "ALTER TABLE"):
        return "SET TBLPROPERTIES", None
    if op not in OPERATIONS:
        raise ForensicsError(ExitCode.USAGE, f"unknown operation {req.operation!r}; use one of {', '.join(OPERATIONS)}")
    return op, None


def _new_file(partition: dict[str, str], schema: TableSchema, data_change: bool = True) -> FileAction:
    prefix = "/".join(f"{k}={v}" for k, v in partition.items())
    name = f"part-00000-whatif-{uuid.uuid4()}.c000.snappy.parquet"
    return FileAction(
        version=-1,
        kind="add",
        path=f"{prefix}/{name}" if prefix else name,
        partition_values=dict(partition),
        size=1024,
        data_change=data_change,
    )


def build_hypothetical(log: DeltaLog, req: WhatIfRequest, state: StateIndex):
    """The CommitRecord and WriteSet of the hypothetical transaction, plus notes in words."""
    op, mode = _normalise_op(req)
    notes: list[str] = []
    R = req.read_version
    if R not in set(log.versions) and not state.lifetimes.exact_at(R):
        raise ForensicsError(ExitCode.NO_VERSION, f"read version {R} is not in the retained log", version=R)
    md: Metadata | None = state.metadata_at(R)
    schema = TableSchema.from_metadata(md)
    files_at = state.lifetimes.files_at(R)
    engine_info, writer = _engine(log, req)
    pred = req.predicate
    parsed = parse_predicate(pred, schema) if pred else None
    if parsed is not None and not parsed.parsed:
        notes.append(f"the predicate could not be parsed ({parsed.error}); every file is assumed to match")

    def matching() -> list[FileAction]:
        if parsed is None:
            return list(files_at)
        return [f for f in files_at if matches_partition(parsed, f.partition_values, schema) and may_match_stats(parsed, f.stats, f.partition_values, schema)]

    parts = [dict(p) for p in req.partitions] or []
    adds: list[FileAction] = []
    removes: list[FileAction] = []
    params: dict[str, Any] = {}
    blind = False
    new_md = None
    if op == "WRITE":
        params["mode"] = mode
        if mode == "Overwrite":
            removes = [_as_remove(f) for f in matching()]
            if pred:
                params["predicate"] = pred
        else:
            blind = pred is None
        targets = parts or ([{}] if not schema.partition_columns else [])
        if not targets and schema.partition_columns:
            notes.append("no --partition given for a partitioned table: the new file's partition is unknown; an unpartitioned-style file is assumed")
            targets = [{}]
        adds = [_new_file(p, schema) for p in targets]
    elif op in ("DELETE", "UPDATE"):
        hit = matching()
        removes = [_as_remove(f) for f in hit]
        params["predicate"] = [pred] if pred and writer != "delta-rs" else (pred or [])
        if writer == "delta-rs" and op == "UPDATE" and not pred:
            # delta-rs records and checks `true` for an UPDATE without a predicate (update.rs:
            # predicate.unwrap_or(lit(true))): every concurrent add conflicts (conflict-rules §9.3)
            params["predicate"] = "true"
        if op == "UPDATE" or (pred and parsed is not None and not _partition_only(parsed, schema)):
            adds = [_new_file(f.partition_values, schema) for f in hit[:1]] if hit else []
        notes.append(f"{op} at readVersion {R} would rewrite {len(hit)} file(s) matching the predicate")
    elif op == "MERGE":
        hit = matching()
        removes = [_as_remove(f) for f in hit]
        params["predicate"] = [pred] if (pred and writer != "delta-rs") else (pred or "")
        targets = parts or [f.partition_values for f in hit[:1]] or [{}]
        adds = [_new_file(p, schema) for p in targets]
    elif op == "OPTIMIZE":
        hit = matching()
        by_part: dict[tuple, list[FileAction]] = {}
        for f in hit:
            by_part.setdefault(tuple(sorted(f.partition_values.items())), []).append(f)
        for key, fs in by_part.items():
            if len(fs) >= 2:  # bin-packing only compacts partitions with more than one small file
                removes += [_as_remove(f, data_change=False) for f in fs]
                adds.append(_new_file(dict(key), schema, data_change=False))
        params["predicate"] = [pred] if pred else []
        notes.append(f"OPTIMIZE would compact {len(removes)} file(s) in {len(adds)} partition(s)")
    elif op in ("SET TBLPROPERTIES", "ADD COLUMNS"):
        if md is None:
            raise ForensicsError(ExitCode.NO_VERSION, f"no table metadata at version {R}", version=R)
        new_md = md
        blind = True
    elif op == "STREAMING UPDATE":
        params["outputMode"] = "Append"
        adds = [_new_file(p, schema) for p in (parts or [{}])]
        blind = True
    txns = {req.app_id: 0} if req.app_id else {}
    if op == "STREAMING UPDATE" and not req.app_id:
        notes.append("no --app-id given: the streaming batch's txn appId is unknown")
    rec = CommitRecord(
        version=(req.until if req.until is not None else (log.latest_version or R)) + 1,
        timestamp=None,
        in_commit_timestamp=None,
        file_modification_time=None,
        operation=op,
        operation_parameters=params,
        read_version=R,
        isolation_level=None,
        is_blind_append=blind if writer != "delta-rs" else None,
        txn_id=None,
        engine_info=engine_info,
        has_commit_info=True,
        has_metadata=new_md is not None,
        txn_app_ids=txns,
    )
    write = WriteSet(
        adds=adds,
        removes=removes,
        cdc=[],
        metadata=new_md,
        protocol=None,
        app_txns=txns,
        domains=[],
        is_blind_append=bool(blind) and writer != "delta-rs",
        is_blind_append_recorded=blind if writer != "delta-rs" else None,
    )
    return rec, write, writer, notes


def _partition_only(p, schema: TableSchema) -> bool:
    return bool(p.columns) and all(schema.is_partition_column(c) for c in p.columns)


def _as_remove(f: FileAction, data_change: bool = True) -> FileAction:
    return FileAction(
        version=-1, kind="remove", path=f.path, partition_values=f.partition_values, size=f.size,
        data_change=data_change, stats=f.stats, deletion_vector=f.deletion_vector,
    )


def _engine(log: DeltaLog, req: WhatIfRequest) -> tuple[str | None, str]:
    """The engine the hypothetical writer is: from --rules, else the table's latest writer."""
    if req.rules:
        r = req.rules.lower()
        if r.startswith("delta-rs"):
            return "delta-rs:py-1.6.6", "delta-rs"
        if r.startswith("databricks"):
            return "Databricks-Runtime/15.4.x-scala2.12", "databricks"
        if r.startswith("kernel"):
            return "Kernel-4.0.0/whatif", "kernel"
        return None, "delta-spark"
    engines = [e for e in log.commits["engine_info"].to_list() if e]
    ei = engines[-1] if engines else None
    return ei, writer_family(ei)


def whatif(log: DeltaLog, req: WhatIfRequest, state: StateIndex | None = None) -> WhatIfResult:
    state = state or StateIndex(log)
    if req.isolation_level and req.isolation_level not in ISOLATION_LEVELS:
        raise ForensicsError(ExitCode.USAGE, f"unknown isolation level {req.isolation_level!r}; use one of {', '.join(ISOLATION_LEVELS)}")
    latest = log.latest_version
    until = req.until if req.until is not None else latest
    if latest is None or until is None:
        raise ForensicsError(ExitCode.NOT_A_TABLE, "the table has no versions")
    if req.read_version < 0 or req.read_version > until:
        raise ForensicsError(ExitCode.NO_VERSION, f"read version {req.read_version} is outside 0..{until}", version=req.read_version)
    rec, write, writer, notes = build_hypothetical(log, req, state)
    sets = build_sets(log, state, rec, write, writer=writer)
    txn = transaction_from_sets(rec, sets, req.read_version, req.isolation_level)
    txn.version = None
    if req.rules:
        profile, pwhy = get_profile(req.rules), f"--rules {req.rules}"
    else:
        profile, pwhy = profile_for_engine_info(rec.engine_info, True, cluster_id=rec.cluster_id)
        if profile is None:
            raise ForensicsError(ExitCode.USAGE, f"the table's latest writer: {pwhy}")
        pwhy = "the table's latest writer: " + pwhy
    winners_v = [v for v in range(req.read_version + 1, until + 1) if log.has_version(v)]
    missing = [v for v in range(req.read_version + 1, until + 1) if not log.has_version(v)]
    if missing:
        notes.append(f"winning commit(s) {missing[:5]} are not in the retained log; not checked")
    winners = [winning_commit(log, v) for v in winners_v]
    read_files = state.lifetimes.files_at(req.read_version) if profile.reads_the_snapshot else None
    result = check_window(txn, winners, profile, read_snapshot_files=read_files, table_name=(sets.read_metadata.name if sets.read_metadata else None))
    if any(n for n in notes if "unknown" in n or "could not" in n) and result.certainty == Bound.EXACT:
        result.certainty = Bound.UNKNOWN
    rs = sets.read
    read_summary = (
        f"partition predicate {', '.join(rs.partition_predicates) or 'none'}; "
        f"{'whole table; ' if rs.whole_table else ''}{len(rs.files or [])} file(s) read ({rs.files_bound.value}); {rs.why}"
    )
    write_summary = f"{len(write.adds)} add(s), {len(write.removes)} remove(s){', metadata change' if write.metadata else ''}; blind append: {write.is_blind_append}"
    return WhatIfResult(req, result, pwhy, txn.isolation_level, read_summary, write_summary, winners_v, notes)
