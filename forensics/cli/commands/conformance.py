"""`conformance CASES.json`: run engine test-suite scenarios through the reader and the rules."""

from __future__ import annotations

import argparse
from pathlib import Path

from forensics.cli.common import print_json, spark_factory
from forensics.errors import ExitCode, ForensicsError


def add_parser(sub) -> None:
    p = sub.add_parser("conformance", help="replay conflict scenarios (../shared/conformance/cases.json format)")
    p.add_argument("cases", metavar="CASES.json")
    p.add_argument("--json", action="store_true")
    p.add_argument("--master", metavar="URL")
    p.add_argument("--remote", metavar="URL")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from forensics.conformance.runner import run_conformance

    path = Path(args.cases)
    if not path.is_file():
        raise ForensicsError(ExitCode.USAGE, f"no such file: {path}")
    try:
        report = run_conformance(path, spark_factory=spark_factory(args))
    except (ValueError, KeyError) as e:
        raise ForensicsError(ExitCode.USAGE, f"{path} is not a conformance case file: {e}") from e
    if args.json:
        print_json(report)
    else:
        from rich.table import Table
        from rich.text import Text

        from forensics import safe
        from forensics.cli.render import print_renderable

        t = Table(header_style="bold", pad_edge=False, title=f"{report['agreed']} of {report['total']} cases agree", title_justify="left")
        for c in ("case", "engine", "expected", "got", ""):
            t.add_column(c, overflow="fold")
        for c in report["cases"]:
            mark = Text("✓", style="green") if c["agree"] else Text("known difference" if c.get("known_difference") else "✗", style="yellow" if c.get("known_difference") else "red")
            t.add_row(safe.text(c["name"], max_len=80), safe.text(c.get("engine") or "", max_len=20), safe.text(c["expected"], max_len=60), safe.text(c["got"], max_len=40), mark)
        print_renderable(t)
    return 0
