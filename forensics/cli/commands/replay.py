"""`replay TABLE`: every concurrency window through the rules of the engine that wrote it."""

from __future__ import annotations

import argparse

from forensics.cli.common import add_table_arguments, open_table, print_json, report_findings
from forensics.model import ISOLATION_LEVELS


def add_parser(sub) -> None:
    p = sub.add_parser("replay", help="replay every window (readVersion < version-1): clean / reordered / anomaly")
    add_table_arguments(p)
    p.add_argument("--isolation-level", choices=ISOLATION_LEVELS, help="counterfactual: replay as if the table had this level")
    p.add_argument("--partition-by", metavar="COL", help="counterfactual: simulate partitioning by COL (values from file stats where min == max)")
    p.add_argument("--rules", metavar="PROFILE", help="rule profile for every commit (default: chosen from each commit's engineInfo)")
    p.add_argument("--all", action="store_true", help="also list skipped windows")
    p.add_argument("--no-evidence", action="store_true", help="leave out aborted attempts (orphan files)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    table = open_table(args)
    report = table.replay_report(isolation_level=args.isolation_level)
    cf = _counterfactual(args, table, report)
    silent = table.silent_log(isolation_level=args.isolation_level, with_evidence=not args.no_evidence)
    if args.json:
        d = {**report.to_dict(), **silent.to_dict()}
        if cf is not None:
            d["counterfactual"] = cf.to_dict()
        print_json(d, "replay")
    else:
        from forensics.cli.render import print_renderable, replay_view

        print_renderable(replay_view(report, show_skipped=args.all, durations=_window_lengths(table, args), silent=silent))
        if cf is not None:
            from forensics.cli.render import counterfactual_view

            print_renderable(counterfactual_view(cf))
    return report_findings(args, table.findings + report.findings)


def _counterfactual(args: argparse.Namespace, table, report):
    """Diff against the as-recorded replay (--isolation-level) or a simulated partitioning (--partition-by)."""
    if not args.isolation_level and not args.partition_by:
        return None
    recorded = table.replay_report() if args.isolation_level else report
    return table.counterfactual(isolation_level=args.isolation_level, partition_by=args.partition_by, baseline=recorded)


def _window_lengths(table, args: argparse.Namespace) -> dict[int, int | None]:
    """Read→commit time of each window, from the timeline (the same replay, no evidence needed)."""
    tl = table.timeline(isolation_level=args.isolation_level, with_evidence=False)
    return {s.version: s.duration_ms for s in tl.commits if s.start_source == "readVersion-commit-time"}
