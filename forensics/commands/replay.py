"""`replay TABLE`: every concurrency window through the rules of the engine that wrote it."""

from __future__ import annotations

import argparse

from forensics.commands._common import add_table_arguments, check_rules, open_table, print_json, report_findings
from forensics.model import ISOLATION_LEVELS


def add_parser(sub) -> None:
    p = sub.add_parser("replay", help="replay every window (readVersion < version-1): clean / reordered / anomaly")
    add_table_arguments(p)
    p.add_argument("--isolation-level", choices=ISOLATION_LEVELS, help="counterfactual: replay as if the table had this level")
    p.add_argument("--rules", metavar="PROFILE", help="rule profile for every commit (default: chosen from each commit's engineInfo)")
    p.add_argument("--all", action="store_true", help="also list skipped windows")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from forensics.replay import replay_table
    check_rules(args.rules)
    log = open_table(args)
    report = replay_table(log, rules=args.rules, isolation_level=args.isolation_level)
    if args.json:
        print_json(report.to_json())
    else:
        from forensics.render import print_renderable, replay_view

        print_renderable(replay_view(report, show_skipped=args.all))
    return report_findings(args, log.findings + report.findings)
