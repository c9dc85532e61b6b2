"""`explain TABLE VERSION`: the incident story of one version (who beat whom, by which rule, how
sure, what to change), then the evidence, checks folded unless `--verbose`."""

from __future__ import annotations

import argparse

from forensics.cli.common import add_table_arguments, open_table, print_json, report_findings
from forensics.model import ISOLATION_LEVELS


def add_parser(sub) -> None:
    p = sub.add_parser("explain", help="explain one version: who beat whom, by which rule, how sure, and what to change")
    add_table_arguments(p)
    p.add_argument("version", type=int, metavar="VERSION")
    p.add_argument("--rules", metavar="PROFILE", help="rule profile (default: from the commit's engineInfo)")
    p.add_argument("--isolation-level", choices=ISOLATION_LEVELS, help="counterfactual isolation level")
    p.add_argument("--error-file", metavar="FILE", help="an error text of a transaction this version may have beaten")
    p.add_argument("--no-evidence", action="store_true", help="do not look for aborted attempts (orphan files, stray commits)")
    p.add_argument("--verbose", "-v", action="store_true", help="show every check, not one line per winning commit")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    table = open_table(args)
    exp = table.explain(args.version, isolation_level=args.isolation_level, error_file=args.error_file, use_evidence=not args.no_evidence)
    if args.json:
        print_json(exp.to_dict(), "explain")
    else:
        from forensics.cli.render import print_lines

        print_lines(exp.lines(verbose=args.verbose))
    return report_findings(args, table.findings)
