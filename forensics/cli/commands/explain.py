"""`explain TABLE VERSION`: the narrative of one version and the attempts it defeated."""

from __future__ import annotations

import argparse

from forensics.cli.common import add_table_arguments, open_table, print_json, report_findings
from forensics.model import ISOLATION_LEVELS


def add_parser(sub) -> None:
    p = sub.add_parser("explain", help="explain one version: its reads, its window, each check, the verdict and advice")
    add_table_arguments(p)
    p.add_argument("version", type=int, metavar="VERSION")
    p.add_argument("--rules", metavar="PROFILE", help="rule profile (default: from the commit's engineInfo)")
    p.add_argument("--isolation-level", choices=ISOLATION_LEVELS, help="counterfactual isolation level")
    p.add_argument("--error-file", metavar="FILE", help="an error text of a transaction this version may have beaten")
    p.add_argument("--no-evidence", action="store_true", help="do not look for aborted attempts (orphan files, stray commits)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    table = open_table(args)
    exp = table.explain(args.version, isolation_level=args.isolation_level, error_file=args.error_file, use_evidence=not args.no_evidence)
    if args.json:
        print_json(exp.to_dict())
    else:
        from rich.text import Text

        from forensics.cli.render import print_renderable

        t = Text()
        for style, line in exp.lines():
            t.append(line + "\n", style=style)
        print_renderable(t)
    return report_findings(args, table.findings)
