"""`replay TABLE`: every concurrency window through the rules of the engine that wrote it."""

from __future__ import annotations

import argparse

from forensics.cli.common import add_selection_arguments, add_table_arguments, open_table, print_json, report_findings, selection
from forensics.model import ISOLATION_LEVELS


def add_parser(sub) -> None:
    p = sub.add_parser("replay", help="replay every window (readVersion < version-1): clean / reordered / anomaly")
    add_table_arguments(p)
    p.add_argument("--isolation-level", choices=ISOLATION_LEVELS, help="counterfactual: replay as if the table had this level")
    p.add_argument("--partition-by", metavar="COL", help="counterfactual: simulate partitioning by COL (values from file stats where min == max)")
    p.add_argument("--rules", metavar="PROFILE", help="rule profile for every commit (default: chosen from each commit's engineInfo)")
    p.add_argument("--all", action="store_true", help="also list skipped windows")
    p.add_argument("--no-evidence", action="store_true", help="leave out aborted attempts (orphan files)")
    add_gate_arguments(p)
    p.add_argument("--jsonl", action="store_true",
                   help="print one JSON object per line: each replayed window, then each aborted attempt "
                        "(the schema: delta-forensics schema replay-jsonl)")
    add_selection_arguments(p)
    p.set_defaults(func=run)


def add_gate_arguments(p: argparse.ArgumentParser) -> None:
    """--fail-on (and --strict's help saying what it does not cover): replay and watch."""
    from forensics import GATE_PRECEDENCE

    p.add_argument("--fail-on", metavar="CLASSES",
                   help="exit non-zero when a verdict is of these classes, a comma list of "
                        f"{','.join(GATE_PRECEDENCE)}: reorder 17, anomaly 18, aborted 19 (an aborted attempt the "
                        "orphan files reveal); when several match, the first in the order anomaly, aborted, reorder")
    p._option_string_actions["--strict"].help = (  # noqa: SLF001 - the shared flag, said for this command
        "exit 1 if the log has any warning or error finding (the log's findings only: verdicts never; use --fail-on)")


def run(args: argparse.Namespace) -> int:
    from forensics import parse_fail_on
    from forensics.errors import ExitCode, ForensicsError

    fail_on = parse_fail_on(args.fail_on)
    if args.json and args.jsonl:
        raise ForensicsError(ExitCode.USAGE, "--json and --jsonl: choose one (--jsonl prints one verdict per line)")
    if args.jsonl and args.partition_by:
        raise ForensicsError(ExitCode.USAGE, "--partition-by is a counterfactual diff, which --jsonl does not print: use --json")
    if "aborted" in fail_on and args.no_evidence:
        raise ForensicsError(ExitCode.USAGE, "--fail-on aborted needs the evidence (orphan files): drop --no-evidence")
    sel = selection(args)
    table = open_table(args)
    chosen = table.select(sel)  # None: every version
    versions = [v for v in table.versions if v in chosen] if chosen is not None else None
    report = table.replay_report(isolation_level=args.isolation_level, versions=versions)
    cf = _counterfactual(args, table, report) if not args.jsonl else None
    silent = table.silent_log(isolation_level=args.isolation_level, with_evidence=not args.no_evidence)
    if chosen is not None:
        silent.attempts = [a for a in silent.attempts if chosen.touches([*a.winners, *(a.read_versions or ())])]
    args.chosen = chosen
    if "aborted" in fail_on and (silent.attempts_why or "").startswith("not looked for"):
        table.evidence()  # the gate cannot pass what it could not look at: the store's own error and exit code
    lines = table.verdict_lines(isolation_level=args.isolation_level, versions=versions, attempts=silent.attempts)
    if args.jsonl:
        for line in lines:
            print_json(line, "replay-jsonl")
    elif args.json:
        d = {**report.to_dict(), **silent.to_dict()}
        if cf is not None:
            d["counterfactual"] = cf.to_dict()
        print_json(d, "replay")
    else:
        from forensics.cli.render import print_renderable, replay_view

        print_renderable(replay_view(report, show_skipped=args.all, durations=_window_lengths(table, args), silent=silent))
        if cf is not None:
            from forensics.cli.render import counterfactual_view

            print_renderable(counterfactual_view(cf))
    strict = report_findings(args, table.findings + report.findings)
    return gate_exit(args, lines, fail_on, strict)


def gate_exit(args: argparse.Namespace, lines: list[dict], fail_on: tuple[str, ...], otherwise: int) -> int:
    """--fail-on's exit code when a verdict matches (one line on stderr saying which), else `otherwise`."""
    import sys

    from forensics import GATE_CODES, gate_match, line_class
    from forensics.safe import inert

    cls = gate_match(lines, fail_on)
    if cls is None:
        return otherwise
    code = GATE_CODES[cls]
    if not getattr(args, "quiet", False):
        hits = [x for x in lines if line_class(x) == cls]
        named = ", ".join(f"v{x['version']}" if x["kind"] == "window" else str(x["id"]) for x in hits[:5])
        more = f" and {len(hits) - 5} more" if len(hits) > 5 else ""
        sys.stderr.write(inert(f"--fail-on {cls}: {named}{more} (exit {int(code)})", 500) + "\n")
    return int(code)


def _counterfactual(args: argparse.Namespace, table, report):
    """Diff against the as-recorded replay (--isolation-level) or a simulated partitioning (--partition-by)."""
    if not args.isolation_level and not args.partition_by:
        return None
    recorded = table.replay_report() if args.isolation_level else report
    return table.counterfactual(isolation_level=args.isolation_level, partition_by=args.partition_by, baseline=recorded)


def _window_lengths(table, args: argparse.Namespace) -> dict[int, int | None]:
    """Read→commit time of each window, from the timeline (the same replay, no evidence needed)."""
    chosen = getattr(args, "chosen", None)
    tl = table.timeline(isolation_level=args.isolation_level, with_evidence=False,
                        from_version=chosen.first if chosen else None, to_version=chosen.last if chosen else None)
    return {s.version: s.duration_ms for s in tl.commits if s.start_source == "readVersion-commit-time"}
