"""`conformance [--cases FILE]`: run engine test-suite scenarios through the reader and the rules."""

from __future__ import annotations

import argparse
from pathlib import Path

from forensics.cli.common import print_json
from forensics.errors import ExitCode, ForensicsError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "conformance",
        help="replay conflict scenarios from the engines' own test suites (shipped with delta-forensics)",
        description=(
            "Write each scenario as a real _delta_log, read it back with the Spark reader and check the "
            "current transaction against the winning commits with the rule profile of the scenario's engine. "
            "Without --cases the scenarios shipped in forensics/conformance/scenarios/ are run."
        ),
    )
    p.add_argument("--cases", metavar="FILE",
                   help="a scenario file (or a folder of them) in delta-forensics' format "
                        "(forensics/conformance/scenarios/README.md) instead of the shipped set")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--master", metavar="URL", help="Spark master (default local[2]), e.g. spark://host:7077")
    p.add_argument("--remote", metavar="URL", help="Spark Connect endpoint, e.g. sc://host:15002")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from forensics import run_conformance

    path = Path(args.cases) if args.cases else None
    if path is not None and not path.exists():
        raise ForensicsError(ExitCode.USAGE, f"no such file: {path}", file=str(path))
    try:
        report = run_conformance(path, master=args.master, remote=args.remote)
    except ValueError as e:  # load_scenarios: not our format, or a scenario that breaks it (names the file)
        raise ForensicsError(ExitCode.USAGE, str(e)) from e
    if args.json:
        print_json(report)
        return 0
    from rich.table import Table
    from rich.text import Text

    from forensics import safe
    from forensics.cli.render import print_renderable

    title = f"{report['agreed']} of {report['total']} cases agree"
    if report["known_differences"]:
        title += f" ({report['known_differences']} known difference{'s' * (report['known_differences'] > 1)})"
    t = Table(header_style="bold", pad_edge=False, title=title, title_justify="left")
    for c in ("case", "engine", "expected", "got", ""):
        t.add_column(c, overflow="fold")
    for c in report["cases"]:
        if c["agree"]:
            mark = Text("✓", style="green")
        elif c.get("known_difference"):
            mark = Text("known difference", style="yellow")
        else:
            mark = Text("✗", style="red")
        t.add_row(safe.text(c["id"], max_len=80), safe.text(c.get("engine") or "", max_len=20),
                  safe.text(c["expected"], max_len=60), safe.text(c["got"], max_len=40), mark)
    print_renderable(t)
    return 0
