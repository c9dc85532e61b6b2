"""Per-commit read and write sets, reconstructed from the log (conflict-rules §4, §8.2, §9).

The read set is what the engine's OptimisticTransaction recorded while planning: partition
predicates, data predicates, the files it read at readVersion, whether it read the whole
table, the application ids it read. The log never stores these, so each element carries a
Bound label and the reason in words. The write set is exact: it is the commit's actions.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from functools import lru_cache
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from forensics.sets.lifetimes import FileLifetimes
from forensics.log.file_actions import file_actions
from forensics.log.snapshot import metadata_from_json, protocol_from_json
from forensics.log.delta_log import DeltaLog
from forensics.model import COMMIT_LARGE_OPS, ROW_TRACKING_BACKFILL, ROW_TRACKING_UNBACKFILL, delta_release, METADATA_ONLY_OPS, REPLACE_OPS, Bound, CommitRecord, FileAction, Metadata, Protocol, ReadSet, WriteSet, partition_values_of
from forensics.predicates import (
    TRUE_PREDICATE,
    ParsedPredicate,
    conjuncts,
    may_match_stats,
    merge_read_filters,
    matches_partition,
    parse_predicate,
    predicate_strings,
    split_partition_and_data,
    to_sql,
)
from forensics.predicates.evaluate import full_schema_key
from forensics.predicates.parse import schema_key
from forensics.log.schema import TableSchema



def writer_family(engine_info: str | None) -> str:
    """Which engine wrote a commit, by engineInfo (conflict-rules §2.2, §8.1, §10)."""
    e = (engine_info or "").strip().lower()
    if e.startswith("delta-rs") or e.startswith("delta_rs"):
        return "delta-rs"
    if e.startswith("kernel") or "delta-kernel" in e:
        return "kernel"
    if e.startswith("databricks-runtime"):
        return "databricks"
    return "delta-spark"


@dataclass
class CommitSets:
    """What one commit read and wrote, as the engine recorded it for its conflict check."""
    version: int
    operation: str | None
    read_version: int | None
    read: ReadSet
    write: WriteSet
    schema: TableSchema
    read_metadata: Metadata | None
    read_protocol: Protocol | None
    writer: str

    def to_dict(self) -> dict[str, Any]:
        """The `sets --json` element for this commit (camelCase keys)."""
        r, w = self.read, self.write
        if not r.recorded_read:
            pp = None
        elif len(r.partition_predicates) == 1:
            pp = r.partition_predicates[0]
        else:
            pp = " OR ".join(f"({p})" for p in r.partition_predicates) or None
        return {
            "version": self.version,
            "operation": self.operation,
            "readVersion": self.read_version,
            "writer": self.writer,
            "read": {
                "partitionPredicate": pp,
                "dataPredicates": list(r.data_predicates),
                "wholeTable": r.whole_table,
                "files": sorted(f.path for f in r.files) if r.files is not None else [],
                "filesBound": r.files_bound.value,
                "predicateBound": r.predicate_bound.value,
                "appIds": sorted(r.app_ids),
                "why": r.why,
            },
            "write": {
                "adds": [f.path for f in w.adds],
                "removes": [f.path for f in w.removes],
                "cdc": [f.path for f in w.cdc],
                "metadataChanged": w.metadata_changed,
                "protocolChanged": w.protocol_changed,
                "appIds": sorted(w.app_txns),
                "appTxns": w.app_txns,
                "domains": list(w.domains),
                "isBlindAppend": w.is_blind_append,
                "isBlindAppendRecorded": w.is_blind_append_recorded,
            },
        }


# --------------------------------------------------------------------------------------
# Table state at a version (schema, metadata, protocol) without a full snapshot
# --------------------------------------------------------------------------------------


class StateIndex:
    """metaData / protocol in force at each version, from the log's other-actions table."""

    def __init__(self, log: DeltaLog, lifetimes: FileLifetimes | None = None):
        self.log = log
        self._lifetimes = lifetimes
        md = log.others.filter(pl.col("kind").is_in(["metaData", "protocol"])).sort(["version", "line"])
        self._md: list[tuple[int, Metadata]] = []
        self._pr: list[tuple[int, Protocol]] = []
        for row in md.iter_rows(named=True):
            if row["kind"] == "metaData":
                m = metadata_from_json(row["payload"])
                if m:
                    self._md.append((row["version"], m))
            else:
                p = protocol_from_json(row["payload"])
                if p:
                    self._pr.append((row["version"], p))
        self._base_loaded = False

    @classmethod
    def given(cls, log: DeltaLog, metadata: list[list], protocols: list[list], lifetimes: FileLifetimes) -> "StateIndex":
        """The state of a part of a log (forensics.replay.second), from the whole log's `in_force()`."""
        self = cls.__new__(cls)
        self.log, self._lifetimes, self._base_loaded = log, lifetimes, True
        self._md = [(v, m) for v, text in metadata if (m := metadata_from_json(text)) is not None]
        self._pr = [(v, p) for v, text in protocols if (p := protocol_from_json(text)) is not None]
        return self

    def in_force(self) -> dict[str, list[tuple[int, Metadata | Protocol]]]:
        """Every metaData and protocol with the version it took effect at (-1: the base checkpoint's)."""
        self._load_base()
        return {"metaData": list(self._md), "protocol": list(self._pr)}

    def _load_base(self) -> None:
        """When the early commits are gone, metadata comes from the oldest usable checkpoint."""
        if self._base_loaded:
            return
        self._base_loaded = True
        vs = self.log.versions
        if not vs or vs[0] == 0:
            return
        from forensics.log.snapshot import snapshot

        try:
            snap, _ = snapshot(self.log, vs[0])
        except Exception:  # noqa: BLE001 - best effort; callers label what is unknown
            return
        if snap.metadata:
            self._md.insert(0, (-1, snap.metadata))
        if snap.protocol:
            self._pr.insert(0, (-1, snap.protocol))

    def metadata_at(self, version: int) -> Metadata | None:
        """The table's metaData in force at `version`, or None."""
        self._load_base()
        return _at(self._md, version)

    def protocol_at(self, version: int) -> Protocol | None:
        """The table's protocol in force at `version`, or None."""
        self._load_base()
        return _at(self._pr, version)

    def schema_at(self, version: int) -> TableSchema:
        """The table's schema at `version`."""
        return TableSchema.from_metadata(self.metadata_at(version))

    @property
    def lifetimes(self) -> FileLifetimes:
        """Every data file's lifetime (added at, removed at), built on first use."""
        if self._lifetimes is None:
            self._lifetimes = FileLifetimes.build(self.log)
        return self._lifetimes


def _at(pairs: list, version: int):
    """The last value whose version is <= `version` (pairs are sorted by version): a bisect."""
    i = bisect_right(pairs, version, key=lambda p: p[0])
    return pairs[i - 1][1] if i else None


# --------------------------------------------------------------------------------------
# Write set (exact)
# --------------------------------------------------------------------------------------


def write_set(log: DeltaLog, rec: CommitRecord) -> WriteSet:
    """The commit's own actions; memoised per log for logged records (replay asks many times)."""
    memo = log.derived.setdefault("write_set", {}) if hasattr(log, "derived") else {}
    hit = memo.get(rec.version)
    if hit is not None and hit[0] is rec:
        return hit[1]
    w = _write_set(log, rec)
    memo[rec.version] = (rec, w)
    return w


def prefetch_write_sets(log: DeltaLog, versions: list[int]) -> None:
    """Build the write sets of many logged versions in one pass over the actions table
    (replay needs every window's winners; one slice per version costs more than the rows)."""
    memo = log.derived.setdefault("write_set", {})
    want = sorted({v for v in versions if v not in memo and log.has_version(v)})
    if not want:
        return
    log.prefetch_records(want)
    files: dict[int, tuple[list, list, list]] = {v: ([], [], []) for v in want}
    slot = {"add": 0, "remove": 1, "cdc": 2}
    acts = log.actions.filter(pl.col("version").is_in(want)).sort(["version", "line"])
    for fa in file_actions(acts):
        files[fa.version][slot[fa.kind]].append(fa)
    mds: dict[int, Metadata | None] = {}
    prs: dict[int, Protocol | None] = {}
    oth = log.others.filter(pl.col("version").is_in(want) & pl.col("kind").is_in(["metaData", "protocol"])).sort(["version", "line"])
    for r in oth.iter_rows(named=True):
        v = r["version"]
        if r["kind"] == "metaData" and mds.get(v) is None:
            mds[v] = metadata_from_json(r["payload"])
        elif r["kind"] == "protocol" and prs.get(v) is None:
            prs[v] = protocol_from_json(r["payload"])
    for v in want:
        rec = log.record(v)
        adds, removes, cdc = files[v]
        memo[v] = (rec, _make_write_set(rec, adds, removes, cdc, mds.get(v), prs.get(v)))


def _make_write_set(rec: CommitRecord, adds, removes, cdc, md, pr) -> WriteSet:
    # conflict-rules §3: a missing commitInfo or isBlindAppend field is treated as false by delta-spark.
    return WriteSet(
        adds=adds,
        removes=removes,
        cdc=cdc,
        metadata=md,
        protocol=pr,
        app_txns=dict(rec.txn_app_ids),
        domains=list(rec.domains),
        is_blind_append=bool(rec.is_blind_append),
        is_blind_append_recorded=rec.is_blind_append,
    )


def _write_set(log: DeltaLog, rec: CommitRecord) -> WriteSet:
    acts = log.actions_of(rec.version)
    adds, removes, cdc = [], [], []
    for fa in file_actions(acts):
        {"add": adds, "remove": removes, "cdc": cdc}[fa.kind].append(fa)
    md = pr = None
    for r in log.others_of(rec.version).iter_rows(named=True):
        if r["kind"] == "metaData" and md is None:
            md = metadata_from_json(r["payload"])
        elif r["kind"] == "protocol" and pr is None:
            pr = protocol_from_json(r["payload"])
    return _make_write_set(rec, adds, removes, cdc, md, pr)


# --------------------------------------------------------------------------------------
# Read set
# --------------------------------------------------------------------------------------


@dataclass
class _Plan:
    partition: list[ParsedPredicate]  # partition parts, one per recorded read
    data: list[ParsedPredicate]
    whole_table: bool
    recorded: bool
    predicate_bound: Bound
    files_rule: str  # "none" | "all" | "removes" | "adds" | "partition" | "candidates" | "delta-rs"
    why: list[str]
    assumed: bool = False  # the log records no read: the whole-table read is assumed (ReadSet.assumed)


def _reads_all(why: list[str], reason: str, *, whole: bool = False, bound: Bound = Bound.EXACT,
               assumed: bool = False) -> _Plan:
    """A plan that read every file (partition predicate TRUE), and why."""
    why.append(reason)
    return _Plan([TRUE_PREDICATE], [], whole, True, bound, "all", why, assumed)


def _op(rec: CommitRecord) -> str:
    return (rec.operation or "").strip().upper()


def _parse_all(texts: list[str], schema: TableSchema) -> list[ParsedPredicate]:
    out = []
    for t in texts:
        p = parse_predicate(t, schema)
        out.extend(conjuncts(p) if p.parsed else [p])
    return out


_SPLITS: dict[tuple, tuple[tuple[ParsedPredicate, ...], ParsedPredicate, tuple[ParsedPredicate, ...]]] = {}


def _split_condition(texts: tuple[str, ...], schema: TableSchema) -> tuple[tuple[ParsedPredicate, ...], ParsedPredicate, tuple[ParsedPredicate, ...]]:
    """A recorded DELETE/UPDATE condition's conjuncts, partition part and data filters
    (delta-spark's splitMetadataAndDataPredicates): a function of the texts and the schema
    alone, remembered, because a long log repeats its conditions window after window."""
    key = (texts, full_schema_key(schema))
    hit = _SPLITS.get(key)
    if hit is None:
        preds = _parse_all(list(texts), schema)
        part, data = split_partition_and_data([p for p in preds if p.parsed], schema)
        if len(_SPLITS) >= 4096:
            _SPLITS.clear()
        hit = _SPLITS[key] = (tuple(preds), part, tuple(data))
    return hit


def _spark_plan(rec: CommitRecord, write: WriteSet, schema: TableSchema) -> _Plan:
    """What delta-spark's OptimisticTransaction recorded, per operation (conflict-rules §8.2)."""
    op = _op(rec)
    params = rec.operation_parameters or {}
    srcs = predicate_strings(rec.operation, params)
    why: list[str] = []

    def split(texts: list[str], what: str) -> _Plan:
        preds, part, data = _split_condition(tuple(texts), schema)
        bad = [p for p in preds if not p.parsed]
        bound = Bound.EXACT
        if bad:
            # An unparseable conjunct is a data filter for Spark's split unless it only names
            # partition columns; we cannot tell, so the partition part stays as computed and
            # the label says so.
            bound = Bound.SUPERSET
            why.append(f"{what}: {len(bad)} predicate part(s) could not be parsed ({bad[0].error}); treated as data filters")
        if any(p.truncated for p in preds):
            bound = Bound.SUPERSET
            why.append(f"{what}: the recorded predicate is truncated")
        filters = _data_filters(data) + [ParsedPredicate(text=b.text, sql=b.text) for b in bad]
        if part.is_true and filters:
            why.append(f"{what}: only data filters (or ORs mixing data and partition columns) ⇒ partition predicate TRUE (conflict-rules §4.1)")
        return _Plan([part], filters, False, True, bound, "candidates" if filters else "partition", why)

    if op in COMMIT_LARGE_OPS:
        why.append(f"{op} commits without conflict checks (commitLarge, conflict-rules §1.6): nothing recorded")
        return _Plan([], [], False, False, Bound.EXACT, "none", why)
    if op in ("DELETE", "UPDATE"):
        texts = [s.text for s in srcs if s.role == "condition"]
        if not texts:
            return _reads_all(why, f"{op} without a condition reads every file (conflict-rules §8.2)")
        return split(texts, op)
    if op == "TRUNCATE":
        # TruncateDeltaTableCommand (delta-spark v4.3+) reads through filterFiles(Seq.empty): TRUE, every file
        blind = "; its commitInfo says isBlindAppend=true, which no delta-spark TRUNCATE records: not taken as a blind append" \
            if rec.is_blind_append else ""
        return _reads_all(why, f"TRUNCATE reads every file and removes them all (conflict-rules §8.2){blind}")
    if op in (ROW_TRACKING_BACKFILL, ROW_TRACKING_UNBACKFILL):
        why.append(f"{op} marks the batch of files it re-commits as read (trackFilesRead) and records no predicate; batch files "
                   "a concurrent commit touched are dropped from both before it commits: files read = its adds (conflict-rules §8.2, §5.5)")
        return _Plan([], [], False, True, Bound.EXACT, "adds", why)
    if op == "MERGE":
        nmbs = [s for s in srcs if s.role == "not_matched_by_source"]
        cond = [s.text for s in srcs if s.role == "merge_condition"]
        if nmbs:
            why.append("MERGE has a WHEN NOT MATCHED BY SOURCE clause ⇒ it reads the whole target: partition predicate TRUE (conflict-rules §8.2)")
            return _Plan([TRUE_PREDICATE], [], False, True, Bound.EXACT, "candidates", why)
        if not cond:
            why.append("MERGE condition not recorded; assumed to read the whole target")
            return _Plan([TRUE_PREDICATE], [], False, True, Bound.UNKNOWN, "candidates", why)
        p = parse_predicate(cond[0], schema)
        matched = [s for s in srcs if s.role == "matched"]
        matched_only = bool(matched) and not any(s.role == "not_matched" for s in srcs)
        release = delta_release(rec.engine_info)
        filters, twhy = merge_read_filters(
            p, [parse_predicate(s.text, schema) if s.text.strip() else None for s in matched], schema,
            matched_only=matched_only, narrows_by_clause=release is None or release >= (3, 0))
        why.append("MERGE: " + twhy)
        # OptimisticTransaction.trackReadPredicates splits conjunct by conjunct and never takes a
        # partition term out of an OR (conflict-rules §4.1, §4.7).
        part, data = split_partition_and_data(filters, schema, extract_from_or=False)
        if part.is_true:
            why.append("MERGE read no literal predicate on a partition column alone ⇒ it read every partition (conflict-rules §4.1)")
        bound = Bound.SUPERSET if ("assumed" in twhy or not p.parsed or p.truncated) else Bound.EXACT
        return _Plan([part], _data_filters(data), False, True, bound, "candidates", why)
    if op in ("OPTIMIZE", "REORG", "REORG TABLE"):
        texts = [s.text for s in srcs]
        preds = _parse_all(texts, schema) if texts else []
        parts = [p for p in preds if p.parsed]
        part = TRUE_PREDICATE
        if parts:
            part, _ = split_partition_and_data(parts, schema)
        why.append(f"{op} reads exactly the files it compacts (its removes) under its partition predicate (conflict-rules §8.2)")
        return _Plan([part], [], False, True, Bound.EXACT, "removes", why)
    if op in REPLACE_OPS:
        return _reads_all(why, f"{op} reads every file (conflict-rules §8.2)")
    if op == "ADD CONSTRAINT":
        return _reads_all(why, "ADD CONSTRAINT scans every file to validate it")
    # SYNC IDENTITY commits as CHANGE COLUMN (alterDeltaTableCommands, delta-spark v2.4-v4.4) with the
    # identity tag, after filterFiles() and readWholeTable(); older writers named it ALTER COLUMN.
    if op in ("CHANGE COLUMN", "ALTER COLUMN") and (rec.tags or {}).get("delta.identity.schemaUpdate") == "true":
        return _reads_all(why, "SYNC IDENTITY reads the whole table (readWholeTable, conflict-rules §4.3)", whole=True)
    if op in METADATA_ONLY_OPS or op.startswith("ALTER") or op.startswith("SET ") or op.startswith("UNSET "):
        why.append(f"{op} reads no data")
        return _Plan([], [], False, False, Bound.EXACT, "none", why)
    if op == "STREAMING UPDATE":
        mode = str(params.get("outputMode", "")).lower()
        if mode == "complete":
            return _reads_all(why, "streaming Complete mode overwrites the table: reads every file")
        if rec.is_blind_append is False and not write.removes:
            return _reads_all(why, "streaming batch is not a blind append although it only adds: the batch scanned this table (readWholeTable; inferred)", whole=True, bound=Bound.SUPERSET)
        why.append("streaming Append/Update batch reads no files of this table")
        return _Plan([], [], False, False, Bound.EXACT, "none", why)
    if op in ("WRITE", "CREATE TABLE AS SELECT", "CREATE OR REPLACE TABLE AS SELECT") or op.startswith("WRITE"):
        mode = str(params.get("mode", "")).lower()
        dpo = str(params.get("isDynamicPartitionOverwrite", "")).lower() == "true"
        replace = [s.text for s in srcs if s.role == "replace_where"]
        if dpo:
            tuples = sorted({tuple(sorted(f.partition_values.items())) for f in write.adds})
            if tuples and schema.partition_columns:
                ors = [" AND ".join(_eq_sql(k, v, schema) for k, v in t) for t in tuples]
                pred = " OR ".join(f"({o})" for o in ors) if len(ors) > 1 else ors[0]
                part = parse_predicate(pred, schema)
            else:
                part = TRUE_PREDICATE
            why.append("dynamic partition overwrite: partition ∈ partitions it writes; no read files (conflict-rules §4.1, §8.2)")
            return _Plan([part], [], False, True, Bound.EXACT, "none", why)
        if mode == "overwrite" and replace:
            return split(replace, "replaceWhere")
        if mode == "overwrite":
            return _reads_all(why, "overwrite without replaceWhere reads every file")
        if rec.is_blind_append is False and not write.removes:
            return _reads_all(why, "append recorded as not blind although it only adds: the query read this table inside the transaction (inferred: whole table)",
                              bound=Bound.SUPERSET, assumed=True)
        if rec.is_blind_append is None and rec.has_commit_info:
            why.append("append; the writer did not record isBlindAppend (read set unknown; Spark treats it as not blind)")
            return _Plan([], [], False, False, Bound.UNKNOWN, "none", why)
        why.append("blind append: reads nothing (conflict-rules §4.5)")
        return _Plan([], [], False, False, Bound.EXACT, "none", why)
    if rec.is_blind_append:
        why.append(f"{op or 'commit'} recorded isBlindAppend=true: no reads")
        return _Plan([], [], False, False, Bound.EXACT, "none", why)
    if not rec.has_commit_info:
        why.append("no commitInfo: what this commit read is unknown")
        return _Plan([TRUE_PREDICATE], [], False, True, Bound.UNKNOWN, "removes", why)
    why.append(f"{op or 'commit'}: operation not modelled; assumed to read the files it removes")
    return _Plan([TRUE_PREDICATE] if write.removes else [], [], False, bool(write.removes), Bound.UNKNOWN, "removes", why)


def _eq_sql(col: str, val: str | None, schema: TableSchema) -> str:
    c = schema.column(col)
    name = f"`{c.name if c else col}`"
    if val is None:
        return f"{name} IS NULL"
    return f"{name} = '" + val.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _delta_rs_plan(rec: CommitRecord, write: WriteSet, schema: TableSchema) -> _Plan:
    """delta-rs records one SQL predicate string and reads by it (conflict-rules §9)."""
    op = _op(rec)
    params = rec.operation_parameters or {}
    why: list[str] = []
    pred = params.get("predicate") if op in ("WRITE", "DELETE", "UPDATE", "MERGE") else None
    if op == "MERGE" and not pred:
        return _reads_all(why, "delta-rs MERGE with no derived predicate reads the whole table (conflict-rules §9)", whole=True)
    if isinstance(pred, str) and pred.strip():
        p = parse_predicate(pred, schema)
        why.append("delta-rs records its read predicate verbatim; files read = files matching it by partition values and statistics (conflict-rules §9)")
        return _Plan([p], [], False, True, Bound.EXACT if p.parsed else Bound.UNKNOWN, "delta-rs", why)
    if op in ("OPTIMIZE",):
        why.append("delta-rs OPTIMIZE: no read predicate (conflict-rules §9); the files it compacts are its removes")
        return _Plan([], [], False, True, Bound.EXACT, "removes", why)
    if op in ("WRITE", "STREAMING UPDATE") and not write.removes:
        why.append("delta-rs append: no predicate; delta-rs counts every file of the read snapshot as read (conflict-rules §9)")
        return _Plan([], [], False, True, Bound.EXACT, "all", why)
    if op in ("DELETE", "UPDATE", "WRITE"):
        return _reads_all(why, f"delta-rs {op} without predicate reads every file")
    return _spark_plan(rec, write, schema)


def commit_sets(log: DeltaLog, version: int, state: StateIndex | None = None) -> CommitSets:
    """Read and write sets of one logged commit."""
    rec = log.record(version)
    state = state or StateIndex(log)
    return build_sets(log, state, rec, write_set(log, rec))


def build_sets(log: DeltaLog, state: StateIndex, rec: CommitRecord, write: WriteSet, *, writer: str | None = None) -> CommitSets:
    """Read/write sets of a commit record, logged or hypothetical (whatif, evidence)."""
    version = rec.version
    rv = rec.read_version if rec.read_version is not None else (version - 1 if version > 0 else None)
    rv_known = rec.read_version is not None
    read_md = state.metadata_at(rv) if rv is not None else None
    read_pr = state.protocol_at(rv) if rv is not None else None
    schema = TableSchema.from_metadata(read_md or write.metadata)
    writer = writer or writer_family(rec.engine_info)
    plan = _delta_rs_plan(rec, write, schema) if writer == "delta-rs" else _spark_plan(rec, write, schema)
    if not rv_known and version > 0 and plan.recorded:
        plan.why.append(f"readVersion not recorded (writer: {writer}); assumed {rv} (the previous version)")
    files, bound = _read_files(log, state, plan, write, schema, rv)
    if write.is_blind_append and _op(rec) == "TRUNCATE":
        write = replace(write, is_blind_append=False)  # it read every file (conflict-rules §4.5, §8.2)
    if not rv_known and plan.recorded and bound == Bound.EXACT and version > 0:
        bound = Bound.UNKNOWN
    read = ReadSet(
        partition_predicates=[to_sql(p) if p.parsed else p.text for p in plan.partition],
        data_predicates=[p.sql or p.text for p in plan.data],
        whole_table=plan.whole_table,
        files=files,
        files_bound=bound,
        app_ids=set(rec.txn_app_ids),  # conflict-rules §4.4: readAppIds ≈ the commit's own txn appIds (E for Spark)
        recorded_read=plan.recorded,
        why="; ".join(plan.why),
        predicate_bound=plan.predicate_bound,
        assumed=plan.assumed,
    )
    return CommitSets(version, rec.operation, rec.read_version, read, write, schema, read_md, read_pr, writer)


def _read_files(log: DeltaLog, state: StateIndex, plan: _Plan, write: WriteSet, schema: TableSchema, rv: int | None):
    if plan.files_rule == "none":
        return [], Bound.EXACT
    if plan.files_rule == "removes":
        return list(write.removes), Bound.EXACT if plan.predicate_bound == Bound.EXACT else plan.predicate_bound
    if plan.files_rule == "adds":
        return list(write.adds), plan.predicate_bound
    if rv is None or rv < 0:
        return [], Bound.EXACT
    lt = state.lifetimes
    if not lt.exact_at(rv):
        plan.why.append(f"files at readVersion {rv} are unknown: the log before version {lt.known_from} was cleaned up")
        return None, Bound.UNKNOWN
    if plan.files_rule == "all":
        return lt.files_at(rv), Bound.EXACT
    part = plan.partition[0] if plan.partition else TRUE_PREDICATE
    if plan.files_rule == "partition":
        sel = lt.files_at_in_partitions(rv, _partition_keeper(part, schema))
        return _checked(sel, plan.predicate_bound, write, plan)
    if plan.files_rule == "delta-rs":
        sel = [f for f in lt.files_at(rv) if may_match_stats(part, f.stats, f.partition_values, schema)]
        return sel, plan.predicate_bound
    # candidates: partition pruning, then data skipping on file statistics (conflict-rules §4.2).
    sel = lt.files_at_in_partitions(rv, _partition_keeper(part, schema))
    data = [_for_skipping(d, schema) for d in plan.data]
    if data:
        sel = [f for f in sel if all(may_match_stats(d, f.stats, f.partition_values, schema) for d in data)]
    plan.why.append(
        "read files = files of the matching partitions at readVersion that data skipping on their statistics keeps; "
        "Spark's own skipping may have kept fewer (superset)"
    )
    return _checked(sel, Bound.SUPERSET, write, plan)


def _data_filters(data: list[ParsedPredicate]) -> list[ParsedPredicate]:
    """A plan's data filters, each under its SQL as text (what ReadSet.data_predicates shows);
    a parsed one keeps its tree, so data skipping need not parse its SQL again."""
    return [replace(d, text=to_sql(d)) if d.parsed else ParsedPredicate(text=to_sql(d), sql=to_sql(d)) for d in data]


def _for_skipping(d: ParsedPredicate, schema: TableSchema) -> ParsedPredicate:
    """A data filter as data skipping takes it: parsed whole against this schema, as is (a
    DELETE's condition names a new literal each time: parsing its SQL again was a second parse
    per window), else parsed from its SQL or text (a truncated filter's SQL is parsed whole)."""
    if d.parsed and not d.truncated and d._schema_key == schema_key(schema):
        return d
    return parse_predicate(d.sql or d.text, schema)


def _partition_keeper(part: ParsedPredicate, schema: TableSchema) -> Callable[[str | None], bool]:
    """Whether a file of a partition (its partitionValues text) may match `part`: evaluated once
    per distinct partition, and remembered for the next window with the same predicate."""
    memo = _partition_memo((part.sql, None if part.sql is not None else part.text, part.truncated, part._schema_key,
                            full_schema_key(schema)))

    def keep(text: str | None) -> bool:
        hit = memo.get(text)
        if hit is None:
            hit = memo[text] = matches_partition(part, partition_values_of(text), schema)
        return hit

    return keep


@lru_cache(maxsize=256)
def _partition_memo(key: tuple) -> dict[str | None, bool]:
    """partitionValues text -> matches, per predicate and schema (the last 256 of them)."""
    return {}


def _checked(sel: list[FileAction], bound: Bound, write: WriteSet, plan: _Plan):
    """The engine read every file it removed: if the reconstruction misses one, it is wrong, and says so."""
    missing = {f.path for f in write.removes} - {f.path for f in sel}
    if missing and bound in (Bound.EXACT, Bound.SUPERSET):
        plan.why.append(
            f"{len(missing)} removed file(s) fall outside the reconstructed read files (e.g. {sorted(missing)[0]}): "
            "the reconstruction is incomplete"
        )
        return sel, Bound.UNKNOWN
    return sel, bound
