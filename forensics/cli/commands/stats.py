"""`stats TABLE [--window 1h]`: contention statistics (hot partitions and files, operation pairs,
concurrency over time, retry indications). JSON shape: forensics/analysis/stats.py docstring."""

from __future__ import annotations

import argparse

from forensics.cli.common import add_table_arguments, open_table, print_json, report_findings


def add_parser(sub) -> None:
    p = sub.add_parser("stats", help="contention statistics: hot partitions/files per window, operation-pair matrix, concurrency, retries")
    add_table_arguments(p)
    p.add_argument("--window", default="1h", help="time bucket (e.g. 30s, 15m, 1h, 1d; default 1h)")
    p.add_argument("--from", dest="from_v", type=int, metavar="V", help="first version (inclusive)")
    p.add_argument("--to", dest="to_v", type=int, metavar="V", help="last version (inclusive)")
    p.add_argument("--rules", metavar="PROFILE", help="rule profile for every commit (default: from each commit's engineInfo)")
    p.add_argument("--top", type=int, default=10, help="rows per ranking (default 10)")
    p.add_argument("--no-evidence", action="store_true", help="leave out aborted attempts (orphan files)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    table = open_table(args)
    st = table.stats_report(window=args.window, from_version=args.from_v, to_version=args.to_v, top=args.top,
                            with_evidence=not args.no_evidence)
    if args.json:
        print_json(st.to_dict(), "stats")
    else:
        from forensics.cli.render import print_renderable, stats_view

        print_renderable(stats_view(st, utc=args.utc or None))
    return report_findings(args, table.findings + st.findings)

