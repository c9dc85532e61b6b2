"""`history TABLE`: one row per retained version, from the commit index."""

from __future__ import annotations

import argparse
import sys

from forensics.cli.common import add_table_arguments, open_table, report_findings


def add_parser(sub) -> None:
    p = sub.add_parser("history", help="list the table's versions (commitInfo, readVersion, isolation, counts)")
    add_table_arguments(p)
    p.add_argument("--from", dest="from_version", type=int, metavar="V", help="first version to show")
    p.add_argument("--to", dest="to_version", type=int, metavar="V", help="last version to show")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    table = open_table(args)
    if args.json:
        sys.stdout.write(table.history_json(args.from_version, args.to_version) + "\n")
        return report_findings(args, table.findings)
    from forensics.cli.render import history_table, print_renderable

    rows = table.history_rows(args.from_version, args.to_version)
    print_renderable(history_table(rows, title=f"{table.location}  ({len(rows)} of {len(table.versions)} versions)"))
    return report_findings(args, table.findings)
