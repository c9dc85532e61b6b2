"""`history TABLE`: one row per retained version, from the commit index."""

from __future__ import annotations

import argparse
import sys

from forensics.cli.common import add_selection_arguments, add_table_arguments, open_table, report_findings, selected_versions, selection


def add_parser(sub) -> None:
    p = sub.add_parser("history", help="list the table's versions (commitInfo, readVersion, isolation, counts)")
    add_table_arguments(p)
    add_selection_arguments(p)
    p.add_argument("--full", action="store_true",
                   help="every version's whole commitInfo (operationMetrics, userMetadata, tags, clientVersion, other keys), "
                        "one block per version, instead of the table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    sel = selection(args)  # a time it cannot read fails before the table is read
    table = open_table(args)
    start, end = selected_versions(sel, table)
    if args.json:
        for part in table.history_json_parts(start, end):
            sys.stdout.write(part)
        sys.stdout.write("\n")
        return report_findings(args, table.findings)
    from forensics.cli.render import history_details, history_table, print_renderable

    rows = table.history_rows(start, end)
    what = "" if sel.everything else f": {sel.describe().removeprefix('versions ')}"  # (41 of 405 versions: ..40)
    title = f"{table.location}  ({len(rows)} of {len(table.versions)} versions{what})"
    print_renderable(history_details(rows, title=title) if args.full else history_table(rows, title=title))
    return report_findings(args, table.findings)
