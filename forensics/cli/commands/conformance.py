"""`conformance [--cases FILE] [--strict]`: engine test-suite scenarios answered by explain and by whatif."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from forensics.cli.common import add_utc_argument, print_json
from forensics.errors import ExitCode, ForensicsError

# statuses as the runner names them (forensics/conformance/runner.py)
_DOCUMENTED = ("not expressible", "known difference")
_FINDINGS = ("disagree", "known difference no longer reproduces")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "conformance",
        help="answer conflict scenarios from the engines' own test suites with explain and whatif",
        description=(
            "Write each scenario as the log its engine would leave (setup, winning commits, then the current "
            "transaction as the commit it would have written), read it back with the Spark reader and answer it "
            "twice with the code users run: `explain` of the transaction's version and `whatif` from its read "
            "version. Every answer must agree with the engine test, or the scenario says why it cannot "
            "(not expressible) or why ours differs (known difference). Without --cases the scenarios shipped in "
            "forensics/conformance/scenarios/ are run."
        ),
        epilog="Exit codes: 0 done (disagreements are printed, not failed), 1 --strict and at least one "
               "disagreement or a known difference that no longer reproduces, 2 usage.",
    )
    p.add_argument("--cases", metavar="FILE",
                   help="a scenario file (or a folder of them) in delta-forensics' format "
                        "(forensics/conformance/scenarios/README.md) instead of the shipped set")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_utc_argument(p, prints_times=False)
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when a scenario disagrees without a documented reason, or a known difference "
                        "no longer reproduces")
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
    code = ExitCode.STRICT if (getattr(args, "strict", False) and report["findings"]) else ExitCode.OK
    if args.json:
        print_json(report, "conformance")
        return int(code)
    _print(report)
    return int(code)


def _mark(status: str):
    from rich.text import Text

    if status == "agree":
        return Text("✓", style="green")
    if status in _DOCUMENTED:
        return Text("reason" if status == "not expressible" else "known", style="yellow")
    return Text("✗", style="bold red")


def _answer(path: dict[str, Any]):
    from rich.text import Text

    from forensics import safe

    t = Text(safe.inert(path.get("answer") or "", 60) + " ")
    t.append_text(_mark(path["status"]))
    return t


def _print(report: dict[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    from forensics import safe
    from forensics.cli.render import print_renderable

    t = Table(header_style="bold", pad_edge=False, title=safe.inert(report["summary"], 300), title_justify="left")
    for c in ("case", "engine", "expected", "explain", "whatif"):
        t.add_column(c, overflow="fold")
    for c in report["cases"]:
        exp = c["expected"] + (f" v{c['expectedWinner']}" if c.get("expectedWinner") else "")
        t.add_row(safe.text(c["id"], max_len=80), safe.text(c.get("engine") or "", max_len=20),
                  safe.text(exp, max_len=60), _answer(c["explain"]), _answer(c["whatif"]))
    print_renderable(t)

    by = Table(header_style="bold", pad_edge=False, title="per engine", title_justify="left")
    for col in ("engine", "scenarios", "agree through explain", "agree through whatif", "documented reason",
                "disagreements"):
        by.add_column(col)
    for engine, n in report["byEngine"].items():
        by.add_row(engine, str(n["total"]), str(n["explainAgree"]), str(n["whatifAgree"]), str(n["documented"]),
                   Text(str(n["findings"]), style="bold red" if n["findings"] else ""))
    print_renderable(by)

    findings = [(c, p) for c in report["cases"] for p in ("explain", "whatif") if c[p]["status"] in _FINDINGS]
    if findings:
        print_renderable(Text(f"{len(findings)} DISAGREEMENT(S) without a documented reason:", style="bold red"))
        for c, p in findings:
            d = c[p]
            line = (f"  {c['id']} [{c['engine']}] {p}: engine test {c['expected']}"
                    f"{' v' + str(c['expectedWinner']) if c.get('expectedWinner') else ''}, ours {d.get('answer')}")
            if d["status"] != "disagree":
                line += f" — {d['status']}: {d.get('reason')}"
            elif d.get("why"):
                line += f" — {d['why']}"
            print_renderable(safe.text(line, style="red", max_len=1200))
    else:
        print_renderable(Text("No disagreements without a documented reason.", style="green"))

    documented = [(c, p) for c in report["cases"] for p in ("explain", "whatif") if c[p]["status"] in _DOCUMENTED]
    if documented:
        print_renderable(Text("Documented reasons:", style="bold"))
        for c, p in documented:
            d = c[p]
            print_renderable(safe.text(f"  {c['id']} {p} ({d['status']}): {d.get('reason')}", style="yellow",
                                       max_len=1200))
    print_renderable(Text(report["summary"], style="bold"))
