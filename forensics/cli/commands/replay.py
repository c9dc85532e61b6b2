"""`replay TABLE`: every concurrency window through the rules of the engine that wrote it."""

from __future__ import annotations

import argparse

from forensics.cli.common import add_table_arguments, check_rules, open_table, print_json, report_findings
from forensics.model import ISOLATION_LEVELS


def add_parser(sub) -> None:
    p = sub.add_parser("replay", help="replay every window (readVersion < version-1): clean / reordered / anomaly")
    add_table_arguments(p)
    p.add_argument("--isolation-level", choices=ISOLATION_LEVELS, help="counterfactual: replay as if the table had this level")
    p.add_argument("--partition-by", metavar="COL", help="counterfactual: simulate partitioning by COL (values from file stats where min == max)")
    p.add_argument("--rules", metavar="PROFILE", help="rule profile for every commit (default: chosen from each commit's engineInfo)")
    p.add_argument("--all", action="store_true", help="also list skipped windows")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from forensics.replay.windows import replay_table
    check_rules(args.rules)
    log = open_table(args)
    report = replay_table(log, rules=args.rules, isolation_level=args.isolation_level)
    cf = _counterfactual(args, log, report)
    if args.json:
        d = report.to_json()
        if cf is not None:
            d["counterfactual"] = cf.to_json()
        print_json(d)
    else:
        from forensics.cli.render import print_renderable, replay_view

        print_renderable(replay_view(report, show_skipped=args.all))
        if cf is not None:
            from forensics.analysis.counterfactual import counterfactual_view

            print_renderable(counterfactual_view(cf))
    return report_findings(args, log.findings + report.findings)


def _counterfactual(args: argparse.Namespace, log, report):
    """Diff against the as-recorded replay (--isolation-level) or a simulated partitioning (--partition-by)."""
    if not args.isolation_level and not getattr(args, "partition_by", None):
        return None
    from forensics.analysis.counterfactual import isolation_counterfactual, partition_counterfactual
    from forensics.replay.windows import replay_table

    recorded = replay_table(log, rules=args.rules) if args.isolation_level else report
    if getattr(args, "partition_by", None):
        return partition_counterfactual(log, args.partition_by, rules=args.rules, isolation_level=args.isolation_level, baseline=recorded)
    return isolation_counterfactual(log, args.isolation_level, rules=args.rules, baseline=recorded)
