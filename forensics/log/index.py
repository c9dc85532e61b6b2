"""The per-commit index, built with polars from the tables the Spark reader returns.

One row per version: what `history` prints and what every later stage starts from. Built
once per new commit and kept in the cache, so this code runs on small, already-parsed data.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from typing import Any

import polars as pl

from forensics.log.params import commit_info_columns, concat_columns
from forensics.model import CommitRecord, Finding, new_commit_record
from forensics.runtime.gc_tuning import fewer_collections
from forensics.runtime.halves import in_two

COMMIT_SCHEMA: dict[str, Any] = {
    "version": pl.Int64,
    "source": pl.Utf8,
    "timestamp": pl.Int64,
    "in_commit_timestamp": pl.Int64,
    "file_modification_time": pl.Int64,
    "operation": pl.Utf8,
    "operation_parameters": pl.Utf8,  # JSON text of the decoded object
    "read_version": pl.Int64,
    "isolation_level": pl.Utf8,
    "is_blind_append": pl.Boolean,
    "txn_id": pl.Utf8,
    "engine_info": pl.Utf8,
    "user_id": pl.Utf8,
    "user_name": pl.Utf8,
    "job": pl.Utf8,
    "notebook": pl.Utf8,
    "cluster_id": pl.Utf8,
    "operation_metrics": pl.Utf8,  # JSON object, numbers as numbers whatever the writer (params.metric_value)
    "user_metadata": pl.Utf8,
    "tags": pl.Utf8,
    "client_version": pl.Utf8,
    "other_commit_info": pl.Utf8,  # JSON object of the keys without a column (params.other_commit_info); null without commitInfo
    "num_add": pl.Int64,
    "num_remove": pl.Int64,
    "num_cdc": pl.Int64,
    "partitions_touched": pl.Utf8,  # JSON list of partitionValues objects
    "has_metadata": pl.Boolean,
    "has_protocol": pl.Boolean,
    "has_txn": pl.Boolean,
    "has_domain_metadata": pl.Boolean,
    "has_commit_info": pl.Boolean,
    "txn_app_ids": pl.Utf8,  # JSON {appId: version}
    "domains": pl.Utf8,  # JSON list
    "commit_info_raw": pl.Utf8,
}


def build_commit_index(
    versions: list[int],
    actions: pl.DataFrame,
    others: pl.DataFrame,
    mtimes: dict[int, int],
    sources: dict[int, str],
) -> tuple[pl.DataFrame, list[Finding]]:
    """One row per version in `versions` (commits with no readable line still get a row).

    Built column-wise: counts, partitions and action kinds are polars aggregations; only the
    commitInfo's JSON (parameters, metrics, the keys without a column) is decoded per commit,
    in one tight loop (`params.commit_info_columns`): at 1,000,000 commits a loop over every row
    cost ~90 s, this one 18-27 s, half of it in a second process (forensics/runtime/halves.py)."""
    base = pl.DataFrame(
        {
            "version": versions,
            "source": [sources.get(v, "commit") for v in versions],
            "file_modification_time": [mtimes.get(v) for v in versions],
        },
        schema={"version": pl.Int64, "source": pl.Utf8, "file_modification_time": pl.Int64},
    )
    frame = base.join(_file_action_columns(actions), on="version", how="left", maintain_order="left")
    frame = frame.join(_other_action_columns(others), on="version", how="left", maintain_order="left")
    raws = frame["commit_info_raw"].to_list()
    has_ci = frame["has_commit_info"].to_list()
    with fewer_collections():  # a few dicts per commit, no cycles: the collector would walk the loaded log again and again
        decoded = in_two(commit_info_columns, concat_columns, raws, has_ci)  # a second process takes half of a long log
    frame = frame.with_columns(pl.Series(name, col, dtype=COMMIT_SCHEMA[name]) for name, col in decoded.items())
    frame = frame.with_columns(
        pl.coalesce("ci_timestamp", "file_modification_time").alias("timestamp"),
        *(pl.col(c).fill_null(0) for c in ("num_add", "num_remove", "num_cdc")),
        pl.col("partitions_touched").fill_null("[]"),
        *(pl.col(c).fill_null(False) for c in ("has_metadata", "has_protocol", "has_txn", "has_domain_metadata", "has_commit_info")),
        pl.col("txn_app_ids").fill_null("{}"),
        pl.col("domains").fill_null("[]"),
    )
    return frame.select([pl.col(c).cast(t) for c, t in COMMIT_SCHEMA.items()]), []


_CI_COLUMNS = {"ci_timestamp": "ci_timestamp", "in_commit_timestamp": "ci_ict", "operation": "ci_operation",
               "read_version": "ci_read_version", "isolation_level": "ci_isolation_level",
               "is_blind_append": "ci_is_blind_append", "txn_id": "ci_txn_id", "engine_info": "ci_engine_info",
               "commit_info_raw": "payload"}


def _file_action_columns(actions: pl.DataFrame) -> pl.DataFrame:
    """Per version: how many add / remove / cdc actions, and the partitions its adds and removes
    touched as a JSON list (each distinct partitionValues text once, in text order)."""
    schema = {"version": pl.Int64, "num_add": pl.Int64, "num_remove": pl.Int64, "num_cdc": pl.Int64, "partitions_touched": pl.Utf8}
    if not actions.height:
        return pl.DataFrame(schema=schema)
    kind = pl.col("kind")
    counts = actions.group_by("version").agg(
        *((kind == k).sum().cast(pl.Int64).alias(f"num_{k}") for k in ("add", "remove", "cdc"))
    )
    pv = pl.col("partition_values")
    parts = (
        actions.filter(kind.is_in(["add", "remove"]) & pv.is_not_null() & (pv != "") & (pv != "{}"))
        .select("version", "partition_values")
        .unique()
        .sort(["version", "partition_values"])
        .group_by("version", maintain_order=True)
        .agg(("[" + pv.str.join(",") + "]").alias("partitions_touched"))
    )
    return counts.join(parts, on="version", how="left", maintain_order="left").select(schema.keys())


def _other_action_columns(others: pl.DataFrame) -> pl.DataFrame:
    """Per version: its first commitInfo's typed fields and text, which other actions it holds,
    its txn appIds (JSON object, the last version of each) and domains (JSON list, line order)."""
    schema = {"version": pl.Int64, **{c: others.schema.get(src, pl.Utf8) for c, src in _CI_COLUMNS.items()},
              "has_metadata": pl.Boolean, "has_protocol": pl.Boolean, "has_txn": pl.Boolean,
              "has_domain_metadata": pl.Boolean, "has_commit_info": pl.Boolean, "txn_app_ids": pl.Utf8, "domains": pl.Utf8}
    if not others.height:
        return pl.DataFrame(schema=schema)
    kind = pl.col("kind")
    flags = others.group_by("version").agg(
        *((kind == k).any().alias(f"has_{name}") for k, name in
          (("metaData", "metadata"), ("protocol", "protocol"), ("txn", "txn"), ("domainMetadata", "domain_metadata"),
           ("commitInfo", "commit_info")))
    )
    first_ci = (
        others.filter(kind == "commitInfo")
        .sort(["version", "line"])
        .unique(subset="version", keep="first", maintain_order=True)
        .select("version", *(pl.col(src).alias(c) for c, src in _CI_COLUMNS.items()))
    )
    # txn and domainMetadata actions are few (streaming writers, row tracking): plain Python.
    txns: dict[int, dict[str, Any]] = {}
    domains: dict[int, list[str]] = {}
    few = others.filter((kind == "txn") & pl.col("app_id").is_not_null() | (kind == "domainMetadata") & pl.col("domain").is_not_null())
    for v, k, app_id, txn_version, domain in few.sort(["version", "line"]).select("version", "kind", "app_id", "txn_version", "domain").iter_rows():
        if k == "txn":
            txns.setdefault(v, {})[app_id] = txn_version
        else:
            domains.setdefault(v, []).append(domain)
    vs = sorted(set(txns) | set(domains))
    extra = pl.DataFrame(
        {"version": vs, "txn_app_ids": [json.dumps(txns.get(v, {})) for v in vs], "domains": [json.dumps(domains.get(v, [])) for v in vs]},
        schema={"version": pl.Int64, "txn_app_ids": pl.Utf8, "domains": pl.Utf8},
    )
    return flags.join(first_ci, on="version", how="left", maintain_order="left").join(extra, on="version", how="left", maintain_order="left").select(schema.keys())


def line_findings(others: pl.DataFrame, names: dict[int, str]) -> list[Finding]:
    """Broken lines and unknown action types, each naming its file and version."""
    out: list[Finding] = []
    bad = others.filter(pl.col("kind").is_in(["corrupt", "unknown"])).sort(["version", "line"])
    for row in bad.iter_rows(named=True):
        v = row["version"]
        f = names.get(v)
        if row["kind"] == "corrupt":
            text = row["payload"] or ""
            if "\ufffd" in text:
                msg = f"line {row['line'] + 1} is not valid UTF-8 JSON; skipped"
                code = "commit.non_utf8"
            else:
                msg = f"line {row['line'] + 1} is not valid JSON (truncated or garbage); skipped"
                code = "commit.bad_line"
            out.append(Finding(code, msg, "error", f, v))
        else:
            keys = row["unknown_keys"] or "?"
            out.append(Finding("commit.unknown_action", f"unknown action type(s) {keys} on line {row['line'] + 1}; ignored", "warning", f, v))
    return out


def duplicate_findings(commits: pl.DataFrame) -> list[Finding]:
    """Two versions with the same txnId or identical commitInfo: a copied commit, not concurrency."""
    out: list[Finding] = []
    for col, what in (("txn_id", "txnId"), ("commit_info_raw", "commitInfo")):
        dup = (
            commits.filter(pl.col(col).is_not_null())
            .group_by(col)
            .agg(pl.col("version").sort().alias("versions"))
            .filter(pl.col("versions").list.len() > 1)
        )
        for row in dup.iter_rows(named=True):
            vs = row["versions"]
            if what == "commitInfo" and commits.filter(pl.col("version").is_in(vs))["txn_id"].null_count() == 0:
                continue  # already reported by txnId
            out.append(
                Finding(
                    "commit.duplicate",
                    f"versions {', '.join(map(str, vs))} carry the same {what}: a copied commit file, not concurrency",
                    "warning",
                    None,
                    vs[-1],
                )
            )
    bad_rv = commits.filter(pl.col("read_version").is_not_null() & (pl.col("read_version") >= pl.col("version")))
    for row in bad_rv.iter_rows(named=True):
        out.append(
            Finding(
                "commit.read_version_not_before",
                f"readVersion {row['read_version']} is not below the commit's own version (copied or hand-edited commit?)",
                "warning",
                None,
                row["version"],
            )
        )
    return out


def records_of(frame: pl.DataFrame) -> list[CommitRecord]:
    """The CommitRecords of many commit-index rows, as `record_from_row` gives each: the columns
    taken whole rather than a dict per row, and each JSON text decoded once however often it
    repeats (a long log's appends share their operationParameters: 150,000 distinct texts in a
    million commits). Built by replay for a block's commits and winners at a time."""
    cols = {name: frame[name].to_list() for name in _RECORD_FIELDS}
    for name, default in _JSON_FIELDS.items():
        cols[name] = _decoded_column(cols[name], default)
    return list(map(new_commit_record, *(cols[name] for name in _RECORD_FIELDS)))


def _decoded_column(texts: list[str | None], default: Any) -> list[Any]:
    """`_loads` of each text; a text seen before gets a copy of its first decoding when that is a
    flat object or list (strings, numbers, booleans) or a list of flat objects (partitionsTouched),
    so no two records share a value."""
    repeated = {t for t, n in Counter(texts).items() if n > 1 and t is not None}  # most metrics texts are unique
    first: dict[str, Any] = {}
    out = []
    for t in texts:
        hit = first.get(t) if t in repeated else None
        if hit is None:
            v = _decoded(t, default)
            if t in repeated and _copyable(v):
                first[t] = _copy(v)
            out.append(v)
        else:
            out.append(_copy(hit))
    return out


def _flat(v: Any) -> bool:
    items = v.values() if isinstance(v, dict) else v if isinstance(v, list) else None
    return items is not None and all(x is None or isinstance(x, (str, int, float, bool)) for x in items)


def _copyable(v: Any) -> bool:
    """A value `_copy` copies whole: flat, or a list of flat objects."""
    return _flat(v) or (isinstance(v, list) and all(isinstance(x, dict) and _flat(x) for x in v))


def _copy(v: Any) -> Any:
    """A copy of a `_copyable` value that shares nothing mutable with it."""
    if isinstance(v, list) and v and isinstance(v[0], dict):
        return [x.copy() for x in v]
    return v.copy()


def record_from_row(row: dict[str, Any]) -> CommitRecord:
    """A typed CommitRecord from one row of the commit index."""
    return CommitRecord(*(_decoded(row[name], _JSON_FIELDS[name]) if name in _JSON_FIELDS else row[name] for name in _RECORD_FIELDS))


# CommitRecord's fields in order, each the commit-index column of its name; those the index
# keeps as JSON text, with the value a record gets when the text is absent or unreadable.
_RECORD_FIELDS = tuple(f.name for f in dataclasses.fields(CommitRecord))
_JSON_FIELDS = {"operation_parameters": {}, "job": None, "notebook": None, "operation_metrics": None, "tags": None,
                "other_commit_info": None, "partitions_touched": [], "txn_app_ids": {}, "domains": []}


def _decoded(s: str | None, default: Any) -> Any:
    """`_loads`, the default a fresh copy for each record."""
    v = _loads(s, _ABSENT)
    if v is _ABSENT:
        return default.copy() if isinstance(default, (dict, list)) else default
    return v


_ABSENT = object()


def _loads(s: str | None, default: Any) -> Any:
    if s is None:
        return default
    if s == "{}":  # most commits: no txn ids, tags, job, ... (skip the JSON parser)
        return {}
    if s == "[]":
        return []
    try:
        return json.loads(s)
    except ValueError:
        return default


def _json_or_none(v: Any) -> str | None:
    return None if v is None else json.dumps(v)
