"""`history TABLE`: one row per retained version, from the commit index."""

from __future__ import annotations

import argparse
import json
from typing import Any

import polars as pl

from forensics.commands._common import add_table_arguments, open_table, print_json, report_findings


def add_parser(sub) -> None:
    p = sub.add_parser("history", help="list the table's versions (commitInfo, readVersion, isolation, counts)")
    add_table_arguments(p)
    p.add_argument("--from", dest="from_version", type=int, metavar="V", help="first version to show")
    p.add_argument("--to", dest="to_version", type=int, metavar="V", help="last version to show")
    p.set_defaults(func=run)


def history_rows(commits: pl.DataFrame, start: int | None = None, end: int | None = None) -> list[dict[str, Any]]:
    """The `history --json` objects (README: JSON contract)."""
    df = commits
    if start is not None:
        df = df.filter(pl.col("version") >= start)
    if end is not None:
        df = df.filter(pl.col("version") <= end)
    out = []
    for r in df.sort("version").iter_rows(named=True):
        out.append(
            {
                "version": r["version"],
                "timestamp": r["timestamp"],
                "inCommitTimestamp": r["in_commit_timestamp"],
                "operation": r["operation"],
                "operationParameters": _loads(r["operation_parameters"]) if r["has_commit_info"] else None,
                "readVersion": r["read_version"],
                "isolationLevel": r["isolation_level"],
                "isBlindAppend": r["is_blind_append"],
                "txnId": r["txn_id"],
                "engineInfo": r["engine_info"],
                "userName": r["user_name"],
                "userId": r["user_id"],
                "job": _loads(r["job"]),
                "notebook": _loads(r["notebook"]),
                "clusterId": r["cluster_id"],
                "numAddFiles": r["num_add"],
                "numRemoveFiles": r["num_remove"],
                "numCdcFiles": r["num_cdc"],
                "partitionsTouched": _loads(r["partitions_touched"]),
                "hasMetadata": r["has_metadata"],
                "hasProtocol": r["has_protocol"],
                "hasTxn": r["has_txn"],
                "hasDomainMetadata": r["has_domain_metadata"],
                "txnAppIds": _loads(r["txn_app_ids"]),
                "source": r["source"],
            }
        )
    return out


def _loads(s: str | None) -> Any:
    if s is None:
        return None
    try:
        return json.loads(s)
    except ValueError:
        return None


def run(args: argparse.Namespace) -> int:
    log = open_table(args)
    rows = history_rows(log.commits, args.from_version, args.to_version)
    if args.json:
        print_json(rows)
    else:
        from forensics.render import history_table, print_renderable

        print_renderable(history_table(rows, title=f"{log.location}  ({len(rows)} of {log.commits.height} versions)"))
    return report_findings(args, log.findings)
