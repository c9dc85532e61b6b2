"""`sets TABLE [--version V]`: per-commit read and write sets with their certainty labels."""

from __future__ import annotations

import argparse

from forensics.cli.common import add_table_arguments, open_table, print_json, report_findings


def add_parser(sub) -> None:
    p = sub.add_parser("sets", help="what each commit read (predicates, files, labelled exact/inferred) and wrote")
    add_table_arguments(p)
    p.add_argument("--version", dest="at_version", type=int, metavar="V", help="only this version")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    table = open_table(args)
    versions = [args.at_version] if args.at_version is not None else table.versions
    out = [table.commit_sets(v).to_dict() for v in versions]
    if args.json:
        print_json(out, "sets")
    else:
        from forensics.cli.render import print_renderable, sets_view

        print_renderable(sets_view(out))
    return report_findings(args, table.findings + table.state.lifetimes.findings)
