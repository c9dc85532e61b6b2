"""Counterfactual replays: which conflicts and reorders would appear or vanish if the table had
another isolation level, or another partitioning.

Both replay every window twice (as recorded, and under the scenario) with the same rule
profiles (forensics.replay.windows) and diff the verdicts:

- appear:  a conflict (the rules abort the commit) or a reorder mark the scenario adds;
- vanish:  one the scenario removes;
- unknown: a window whose outcome under the scenario cannot be told (partition-by: a file in
           the window whose value of the new partition column cannot be read from its stats).

Isolation level (conflict-rules §2, §6): as delta-spark and Databricks compute it: the table level, with
OPTIMIZE-like commits (no data change) still downgraded to SnapshotIsolation (conflict-rules §2.1).

Partition-by (simulated): each file's value of COL is taken from its statistics where
minValues == maxValues (and no nulls, or all nulls: the null partition); COL is added to the
table's partitionColumns, so predicates on COL become partition predicates (conflict-rules §4.1) and
added files match them by partition value (conflict-rules §5.6). Files whose min != max, whose stats are
missing, or whose string stats may be truncated (32-character prefix) cannot be placed: they
are counted, and every window touching one lands in `unknown`. All of it is inferred: a real
repartitioning would also have split those files and changed what each commit read.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from forensics.errors import ExitCode, ForensicsError
from forensics.log.delta_log import DeltaLog
from forensics.model import ISOLATION_LEVELS
from forensics.replay.verdict import CommitVerdict
from forensics.replay.windows import ReplayReport, replay_table
from forensics.schemas import camel_keys
from forensics.sets.commit_sets import StateIndex

STRING_PREFIX = 32  # delta.dataSkippingStringPrefixLength default: longer strings are truncated in stats


WOULD_ABORT = "would abort"  # a counterfactual verdict: the scenario's rules abort a commit that is in the log


def _scenario_counts(counts: dict[str, int]) -> dict[str, int]:
    """A replay's counts under a scenario: an abort there is "would abort", not an anomaly of the log."""
    return {("would_abort" if k == "anomaly" else k): n for k, n in counts.items()}


def _rule_why(v: CommitVerdict) -> str:
    """Why the scenario's rules abort it, without the as-recorded framing ("committed although")."""
    return v.result.why if v.result is not None else v.why


@dataclass
class Change:
    version: int
    kind: str  # conflict | reorder | window (unknown: the whole window cannot be told)
    winning_version: int | None
    before: str  # verdict as recorded
    after: str  # verdict under the scenario
    exception: str | None = None
    rule: str | None = None
    partition: dict[str, Any] | None = None
    file: str | None = None
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return camel_keys(dataclasses.asdict(self), keep=("partition",))

    def one_line(self) -> str:
        if self.kind == "conflict":
            part = "" if not self.partition else " [" + ", ".join(f"{k}={v}" for k, v in self.partition.items()) + "]"
            verb = "would abort with" if self.after == WOULD_ABORT else "would no longer abort with"
            rule = f" ({self.rule} rule)" if self.rule else ""
            return f"v{self.version}: {verb} {self.exception or 'a conflict'} against v{self.winning_version}{part}{rule}"
        if self.kind == "reorder":
            return f"v{self.version}: serialised before v{self.winning_version}"
        return f"v{self.version}: {self.why}"


@dataclass
class Counterfactual:
    """What changes if the table had run at another isolation level or partitioning: the verdicts that
    would appear, vanish or cannot be told, against the baseline replay."""
    scenario: str
    isolation_level: str | None
    partition_by: str | None
    appear: list[Change]
    vanish: list[Change]
    unknown: list[Change]
    baseline_counts: dict[str, int]
    counts: dict[str, int]
    files_placed: int | None = None
    files_unknown: int | None = None
    unknown_files: list[str] = field(default_factory=list)  # a sample
    notes: list[str] = field(default_factory=list)
    certainty: str = "inferred"

    def summary(self) -> str:
        """`as recorded: 1 reordered; under the scenario: 1 would abort`: the counts in words."""
        def words(counts: dict[str, int]) -> str:
            return ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in counts.items() if n) or "nothing"

        return f"as recorded: {words(self.baseline_counts)}; under the scenario: {words(self.counts)}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of `replay --isolation-level/--partition-by` (camelCase keys, without
        `schema_version`)."""
        d: dict[str, Any] = {
            "scenario": self.scenario,
            "summary": self.summary(),
            "isolationLevel": self.isolation_level,
            "partitionBy": self.partition_by,
            "appear": [c.to_dict() for c in self.appear],
            "vanish": [c.to_dict() for c in self.vanish],
            "unknown": [c.to_dict() for c in self.unknown],
            "baselineCounts": camel_keys(self.baseline_counts),
            "counts": camel_keys(self.counts),
            "certainty": self.certainty,
            "notes": self.notes,
        }
        if self.partition_by is not None:
            d["files"] = {"placed": self.files_placed, "unknown": self.files_unknown, "unknownSample": self.unknown_files}
        return d


# --------------------------------------------------------------------------------------
# Diff of two replays
# --------------------------------------------------------------------------------------


def _conflict(v: CommitVerdict | None) -> tuple[str | None, int | None] | None:
    if v is None or v.verdict != "anomaly":
        return None
    return (v.exception, v.winning_version)


def diff_reports(base: ReplayReport, alt: ReplayReport, undecidable: dict[int, str] | None = None) -> tuple[list[Change], list[Change], list[Change]]:
    """(appear, vanish, unknown) between two replays of the same log."""
    undecidable = undecidable or {}
    appear: list[Change] = []
    vanish: list[Change] = []
    unknown: list[Change] = []
    for v in sorted(set(base.verdicts) | set(alt.verdicts)):
        b, a = base.verdicts.get(v), alt.verdicts.get(v)
        bv, av = (b.verdict if b else "serial"), (a.verdict if a else "serial")
        here_app: list[Change] = []
        here_van: list[Change] = []
        bc, ac = _conflict(b), _conflict(a)
        if ac is not None and ac != bc:
            here_app.append(Change(v, "conflict", a.winning_version, bv, WOULD_ABORT, a.exception, a.rule, a.partition, a.file,  # type: ignore[union-attr]
                                   _rule_why(a)))  # type: ignore[arg-type]
        if bc is not None and bc != ac:
            here_van.append(Change(v, "conflict", b.winning_version, bv, av, b.exception, b.rule, b.partition, b.file,  # type: ignore[union-attr]
                                   (a.why if a else "")))
        b_re = set(b.reordered_before) if b else set()
        a_re = set(a.reordered_before) if a else set()
        for w in sorted(a_re - b_re):
            here_app.append(Change(v, "reorder", w, bv, av, why=f"v{v} would be serialised before v{w} ({a.isolation_level})"))  # type: ignore[union-attr]
        for w in sorted(b_re - a_re):
            here_van.append(Change(v, "reorder", w, bv, av, why=f"v{w} would no longer be forgiven ({a.isolation_level if a else '?'})"))
        if v in undecidable:
            for c, how in [(c, "appears") for c in here_app] + [(c, "vanishes") for c in here_van]:
                c.why = f"{undecidable[v]}; the simulation says it {how}: {c.why}"
                unknown.append(c)
            if not here_app and not here_van:
                unknown.append(Change(v, "window", None, bv, av, why=undecidable[v]))
            continue
        appear.extend(here_app)
        vanish.extend(here_van)
    return appear, vanish, unknown


# --------------------------------------------------------------------------------------
# Isolation level
# --------------------------------------------------------------------------------------


def isolation_counterfactual(log: DeltaLog, level: str, *, rules: str | None = None, baseline: ReplayReport | None = None,
                             state: StateIndex | None = None, alternative: ReplayReport | None = None) -> Counterfactual:
    """`alternative` is the replay at `level` when the caller already has it (not replayed again)."""
    if level not in ISOLATION_LEVELS:
        raise ForensicsError(ExitCode.USAGE, f"isolation level {level!r} is not one of {', '.join(ISOLATION_LEVELS)}")
    state = state or StateIndex(log)
    base = baseline or replay_table(log, rules=rules, state=state)
    alt = alternative or replay_table(log, rules=rules, isolation_level=level, state=state)
    appear, vanish, unknown = diff_reports(base, alt)
    return Counterfactual(
        scenario=f"isolation level {level}",
        isolation_level=level,
        partition_by=None,
        appear=appear,
        vanish=vanish,
        unknown=unknown,
        baseline_counts=base.counts,
        counts=_scenario_counts(alt.counts),
        certainty="inferred",
        notes=[f"every replayed window re-checked at table level {level} (OPTIMIZE-like commits still downgrade to "
               "SnapshotIsolation, conflict-rules §2.1); aborted attempts (evidence) are not re-evaluated"],
    )


# --------------------------------------------------------------------------------------
# Partitioning
# --------------------------------------------------------------------------------------


def _stat_value(stats: str | None, column: str, col_type: str | None) -> tuple[bool, str | None, str]:
    """(placed, partition value, why-not) for one file's statistics."""
    if not stats:
        return False, None, "no statistics"
    try:
        d = json.loads(stats)
    except ValueError:
        return False, None, "unreadable statistics"
    if not isinstance(d, dict):
        return False, None, "unreadable statistics"
    n = d.get("numRecords")
    nulls = (d.get("nullCount") or {}).get(column) if isinstance(d.get("nullCount"), dict) else None
    lo = (d.get("minValues") or {}).get(column) if isinstance(d.get("minValues"), dict) else None
    hi = (d.get("maxValues") or {}).get(column) if isinstance(d.get("maxValues"), dict) else None
    if n is not None and nulls is not None and n == nulls and n > 0:
        return True, None, ""  # every row null: the null partition
    if lo is None or hi is None:
        return False, None, f"no min/max for {column}"
    if nulls:
        return False, None, f"{column} mixes nulls and values"
    if lo != hi:
        return False, None, f"{column} min != max"
    if isinstance(lo, str) and len(lo) >= STRING_PREFIX and (col_type or "string") == "string":
        return False, None, f"{column} statistics may be a truncated {STRING_PREFIX}-character prefix"
    return True, _partition_text(lo, col_type), ""


def _partition_text(value: Any, col_type: str | None) -> str:
    """A stats value in Delta's partition-value serialisation (PROTOCOL.md 'Partition Value Serialization')."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and (col_type or "") in ("integer", "int", "long", "short", "byte"):
        return str(int(value))
    if isinstance(value, str) and (col_type or "").startswith("timestamp") and "T" in value:
        # stats: 2024-06-25T10:00:00.000Z ; partition values: 2024-06-25 10:00:00
        v = value.rstrip("Z").replace("T", " ")
        if v.endswith(".000"):
            v = v[:-4]
        return v
    return str(value)


@dataclass
class _Placement:
    placed: dict[str, str | None]  # path -> value
    unknown: dict[str, str]  # path -> why


def _place_files(log: DeltaLog, state: StateIndex, stored: str, col_type: str | None) -> _Placement:
    stats_of: dict[str, str | None] = {}
    frames = [log.actions.filter(pl.col("kind") == "add").select(["path", "stats"])]
    lt = state.lifetimes.frame
    if lt.height and "stats" in lt.columns:
        frames.insert(0, lt.select(["path", "stats"]))
    for f in frames:
        for p, s in f.iter_rows():
            if s:
                stats_of[p] = s
            else:
                stats_of.setdefault(p, None)
    pl_ = _Placement({}, {})
    for p in log.actions.filter(pl.col("kind").is_in(["add", "remove", "cdc"]))["path"].unique().to_list():
        ok, val, why = _stat_value(stats_of.get(p), stored, col_type)
        if ok:
            pl_.placed[p] = val
        else:
            pl_.unknown[p] = why or "no statistics"
    return pl_


def repartitioned_log(log: DeltaLog, column: str, state: StateIndex | None = None) -> tuple[DeltaLog, _Placement]:
    """A copy of the log (in memory only) as if COL were one more partition column."""
    state = state or StateIndex(log)
    latest = log.latest_version or 0
    schema = state.schema_at(latest)
    col = schema.column(column)
    if col is None:
        raise ForensicsError(ExitCode.USAGE, f"--partition-by {column!r}: no such column in the table schema")
    if schema.is_partition_column(column):
        raise ForensicsError(ExitCode.USAGE, f"--partition-by {column!r}: the table is already partitioned by it")
    stored = col.stored_name
    placement = _place_files(log, state, stored, col.type)

    def new_pv(path: str, pv: str | None) -> str:
        try:
            d = json.loads(pv) if pv else {}
        except ValueError:
            d = {}
        if not isinstance(d, dict):
            d = {}
        d[stored] = placement.placed.get(path)  # unknown files: null (their windows are reported as unknown)
        return json.dumps(d)

    actions = log.actions.with_columns(
        pl.struct(["path", "partition_values"]).map_elements(
            lambda r: new_pv(r["path"], r["partition_values"]) if r["path"] is not None else r["partition_values"],
            return_dtype=pl.Utf8,
        ).alias("partition_values")
    ) if log.actions.height else log.actions

    def new_md(kind: str, payload: str | None) -> str | None:
        if kind != "metaData" or not payload:
            return payload
        try:
            d = json.loads(payload)
        except ValueError:
            return payload
        pcs = list(d.get("partitionColumns") or [])
        if col.name not in pcs:
            pcs.append(col.name)
        d["partitionColumns"] = pcs
        return json.dumps(d)

    others = log.others.with_columns(
        pl.struct(["kind", "payload"]).map_elements(lambda r: new_md(r["kind"], r["payload"]), return_dtype=pl.Utf8).alias("payload")
    ) if log.others.height else log.others
    alt = dataclasses.replace(log, actions=actions, others=others, _records={}, findings=list(log.findings))
    return alt, placement


def partition_counterfactual(log: DeltaLog, column: str, *, rules: str | None = None, isolation_level: str | None = None,
                             baseline: ReplayReport | None = None, state: StateIndex | None = None) -> Counterfactual:
    state = state or StateIndex(log)
    # The baseline is the replay as recorded unless the caller passes another one.
    base = baseline or replay_table(log, rules=rules, state=state)
    alt_log, placement = repartitioned_log(log, column, state)
    alt = replay_table(alt_log, rules=rules, isolation_level=isolation_level, versions=list(base.verdicts))
    undecidable: dict[int, str] = {}
    files_by_v: dict[int, list[str]] = {}
    for v, p in log.actions.filter(pl.col("kind").is_in(["add", "remove", "cdc"])).select(["version", "path"]).iter_rows():
        files_by_v.setdefault(v, []).append(p)
    for v, cv in base.verdicts.items():
        if cv.verdict == "skipped" and alt.verdicts.get(v) is not None and alt.verdicts[v].verdict == "skipped":
            continue
        involved = [p for x in [v, *cv.window] for p in files_by_v.get(x, [])]
        bad = [p for p in involved if p in placement.unknown]
        if bad:
            undecidable[v] = (f"{len(bad)} file(s) in this window cannot be placed in a {column} partition "
                              f"({placement.unknown[bad[0]]}: {bad[0]})")
    appear, vanish, unknown = diff_reports(base, alt, undecidable)
    notes = [
        f"simulated partitioning by {column}: each file's value from its statistics (min == max); inferred",
        f"{len(placement.placed)} file(s) placed, {len(placement.unknown)} cannot be told (min != max, nulls mixed, truncated or missing stats)",
    ]
    vs = log.versions
    if vs and vs[0] > 0:
        notes.append(f"files from the checkpoint the log starts at (v{vs[0] - 1} and before) keep their recorded partition values")
    return Counterfactual(
        scenario=f"partition by {column}" + (f", isolation level {isolation_level}" if isolation_level else ""),
        isolation_level=isolation_level,
        partition_by=column,
        appear=appear,
        vanish=vanish,
        unknown=unknown,
        baseline_counts=base.counts,
        counts=_scenario_counts(alt.counts),
        files_placed=len(placement.placed),
        files_unknown=len(placement.unknown),
        unknown_files=sorted(placement.unknown)[:20],
        notes=notes,
    )


def layout_verdict(log: DeltaLog, version: int, column: str, *, state: StateIndex | None = None,
                   rules: str | None = None, isolation_level: str | None = None) -> str | None:
    """Version `version` replayed as if the table were partitioned by `column` (the partition
    counterfactual for one window): "commits" or "aborts"; None when a file of its window cannot be
    placed, or the column cannot partition the table. Used to check layout advice before giving it."""
    state = state or StateIndex(log)
    try:
        alt_log, placement = repartitioned_log(log, column, state)
    except ForensicsError:
        return None
    base = replay_table(log, rules=rules, state=state, versions=[version]).verdicts.get(version)
    window = base.window if base is not None else []
    files = log.actions.filter(pl.col("version").is_in([version, *window]) & pl.col("kind").is_in(["add", "remove", "cdc"]))["path"]
    if any(p in placement.unknown for p in files.to_list()):
        return None
    v = replay_table(alt_log, rules=rules, isolation_level=isolation_level, versions=[version]).verdicts.get(version)
    if v is None or v.verdict == "skipped":
        return None
    return "aborts" if v.verdict == "anomaly" else "commits"
