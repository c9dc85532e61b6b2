"""`explain TABLE VERSION`: the narrative of one version and the attempts it defeated."""

from __future__ import annotations

import argparse

from forensics.cli.common import add_table_arguments, check_rules, open_table, print_json, report_findings
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
    from forensics.evidence.defeated import defeated_attempts
    from forensics.analysis.explain import explain_version
    from forensics.sets.commit_sets import StateIndex

    check_rules(args.rules)
    log = open_table(args)
    log.record(args.version)  # NO_VERSION when absent
    state = StateIndex(log)
    defeated = defeated_attempts(log, args.version, state, error_file=args.error_file, use_evidence=not args.no_evidence)
    exp = explain_version(log, args.version, rules=args.rules, isolation_level=args.isolation_level, state=state, defeated=defeated)
    if args.json:
        print_json(exp.to_json())
    else:
        from rich.text import Text

        from forensics.cli.render import print_renderable

        t = Text()
        for style, line in exp.lines():
            t.append(line + "\n", style=style)
        print_renderable(t)
    return report_findings(args, log.findings)
