"""The per-commit index, built with polars from the tables the Spark reader returns.

One row per version: what `history` prints and what every later stage starts from. Built
once per new commit and kept in the cache, so this code runs on small, already-parsed data.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from forensics.log.params import decode_metrics, decode_parameters, finite_json, other_commit_info, parse_commit_info
from forensics.model import CommitRecord, Finding

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
    """One row per version in `versions` (commits with no readable line still get a row)."""
    findings: list[Finding] = []
    counts: dict[int, dict[str, int]] = {}
    parts: dict[int, list[str]] = {}
    if actions.height:
        agg = actions.group_by(["version", "kind"]).agg(pl.len().alias("n"))
        for v, k, n in agg.iter_rows():
            counts.setdefault(v, {})[k] = n
        pt = (
            actions.filter(pl.col("kind").is_in(["add", "remove"]) & pl.col("partition_values").is_not_null())
            .select(["version", "partition_values"])
            .unique()
            .sort(["version", "partition_values"])
        )
        for v, pv in pt.iter_rows():
            if pv and pv != "{}":
                parts.setdefault(v, []).append(pv)

    by_version: dict[int, dict[str, Any]] = {}
    for row in others.sort(["version", "line"]).iter_rows(named=True):
        v = row["version"]
        d = by_version.setdefault(v, {"kinds": set(), "ci": None, "txns": {}, "domains": [], "ci_count": 0})
        k = row["kind"]
        d["kinds"].add(k)
        if k == "commitInfo":
            d["ci_count"] += 1
            if d["ci"] is None:
                d["ci"] = row
        elif k == "txn" and row["app_id"] is not None:
            d["txns"][row["app_id"]] = row["txn_version"]
        elif k == "domainMetadata" and row["domain"] is not None:
            d["domains"].append(row["domain"])

    rows = []
    for v in versions:
        d = by_version.get(v, {"kinds": set(), "ci": None, "txns": {}, "domains": [], "ci_count": 0})
        ci_row = d["ci"]
        raw = ci_row["payload"] if ci_row else None
        ci = parse_commit_info(raw)
        c = counts.get(v, {})
        mtime = mtimes.get(v)
        ts = ci_row["ci_timestamp"] if ci_row else None
        rows.append(
            {
                "version": v,
                "source": sources.get(v, "commit"),
                "timestamp": ts if ts is not None else mtime,
                "in_commit_timestamp": ci_row["ci_ict"] if ci_row else None,
                "file_modification_time": mtime,
                "operation": ci_row["ci_operation"] if ci_row else None,
                "operation_parameters": json.dumps(decode_parameters(ci.get("operationParameters")), sort_keys=False),
                "read_version": ci_row["ci_read_version"] if ci_row else None,
                "isolation_level": ci_row["ci_isolation_level"] if ci_row else None,
                "is_blind_append": ci_row["ci_is_blind_append"] if ci_row else None,
                "txn_id": ci_row["ci_txn_id"] if ci_row else None,
                "engine_info": ci_row["ci_engine_info"] if ci_row else None,
                "user_id": _str(ci.get("userId")),
                "user_name": _str(ci.get("userName")),
                "job": _json_or_none(ci.get("job")),
                "notebook": _json_or_none(ci.get("notebook")),
                "cluster_id": _str(ci.get("clusterId")),
                "operation_metrics": _json_or_none(decode_metrics(ci.get("operationMetrics"))),
                "user_metadata": _str(ci.get("userMetadata")),
                "tags": _json_or_none(finite_json(ci["tags"]) if isinstance(ci.get("tags"), dict) else None),
                "client_version": _str(ci.get("clientVersion")),
                "other_commit_info": _json_or_none(other_commit_info(ci)) if ci_row else None,
                "num_add": c.get("add", 0),
                "num_remove": c.get("remove", 0),
                "num_cdc": c.get("cdc", 0),
                "partitions_touched": "[" + ",".join(parts.get(v, [])) + "]",
                "has_metadata": "metaData" in d["kinds"],
                "has_protocol": "protocol" in d["kinds"],
                "has_txn": "txn" in d["kinds"],
                "has_domain_metadata": "domainMetadata" in d["kinds"],
                "has_commit_info": ci_row is not None,
                "txn_app_ids": json.dumps(d["txns"]),
                "domains": json.dumps(d["domains"]),
                "commit_info_raw": raw,
            }
        )
    df = pl.DataFrame(rows, schema=COMMIT_SCHEMA) if rows else pl.DataFrame(schema=COMMIT_SCHEMA)
    return df, findings


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


def record_from_row(row: dict[str, Any]) -> CommitRecord:
    """A typed CommitRecord from one row of the commit index."""
    return CommitRecord(
        version=row["version"],
        timestamp=row["timestamp"],
        in_commit_timestamp=row["in_commit_timestamp"],
        file_modification_time=row["file_modification_time"],
        operation=row["operation"],
        operation_parameters=_loads(row["operation_parameters"], {}),
        read_version=row["read_version"],
        isolation_level=row["isolation_level"],
        is_blind_append=row["is_blind_append"],
        txn_id=row["txn_id"],
        engine_info=row["engine_info"],
        user_id=row["user_id"],
        user_name=row["user_name"],
        job=_loads(row["job"], None),
        notebook=_loads(row["notebook"], None),
        cluster_id=row["cluster_id"],
        operation_metrics=_loads(row["operation_metrics"], None),
        user_metadata=row["user_metadata"],
        tags=_loads(row["tags"], None),
        client_version=row["client_version"],
        other_commit_info=_loads(row["other_commit_info"], None),
        num_add=row["num_add"],
        num_remove=row["num_remove"],
        num_cdc=row["num_cdc"],
        partitions_touched=_loads(row["partitions_touched"], []),
        has_metadata=row["has_metadata"],
        has_protocol=row["has_protocol"],
        has_txn=row["has_txn"],
        has_domain_metadata=row["has_domain_metadata"],
        has_commit_info=row["has_commit_info"],
        txn_app_ids=_loads(row["txn_app_ids"], {}),
        domains=_loads(row["domains"], []),
        source=row["source"],
        commit_info_raw=row["commit_info_raw"],
    )


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


def _str(v: Any) -> str | None:
    return None if v is None else str(v)
