"""`watch TABLE`: follow a table as commits land, printing each new window's verdict and each new
aborted attempt (orphan files) until Ctrl+C (exit 130) or, with --fail-on, the first match (its
exit code). The following itself: forensics/analysis/watch.py."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from forensics.cli.commands.replay import add_gate_arguments, gate_exit
from forensics.cli.common import add_table_arguments, open_table, print_json, report_findings
from forensics.errors import ExitCode, ForensicsError
from forensics.model import ISOLATION_LEVELS


def add_parser(sub) -> None:
    p = sub.add_parser("watch", help="follow new commits and orphan files, printing each verdict as it lands (Ctrl+C stops)",
                       description="Follow a table as commits land: each new commit's window verdict and each new aborted "
                                   "attempt (orphan files), one line each, until Ctrl+C (exit 130) or, with --fail-on, the "
                                   "first match (its exit code: reorder 17, anomaly 18, aborted 19).")
    add_table_arguments(p, json=False)
    p.add_argument("--interval", type=float, default=5.0, metavar="SECONDS", help="seconds between looks (default 5)")
    p.add_argument("--jsonl", action="store_true",
                   help="print one JSON object per line, as replay --jsonl (the schema: delta-forensics schema replay-jsonl)")
    p.add_argument("--settle", type=float, default=60.0, metavar="SECONDS",
                   help="call unreferenced files an aborted attempt once their newest is this old (a running "
                        "transaction's files look the same until it commits; default 60)")
    p.add_argument("--isolation-level", choices=ISOLATION_LEVELS, help="replay as if the table had this level")
    p.add_argument("--rules", metavar="PROFILE", help="rule profile for every commit (default: chosen from each commit's engineInfo)")
    p.add_argument("--no-evidence", action="store_true", help="follow commits only, not orphan files")
    add_gate_arguments(p)
    p._option_string_actions["--strict"].help = (  # noqa: SLF001 - the shared flag, said for this command
        "exit 1 at the first warning or error finding about the log (findings only: verdicts never; use --fail-on)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from forensics import Follower, follow, parse_fail_on
    from forensics.times import utc_default

    fail_on = parse_fail_on(args.fail_on)
    if not args.interval > 0 or args.settle < 0:
        raise ForensicsError(ExitCode.USAGE, "--interval takes a number of seconds above 0, --settle one of 0 or more")
    if args.no_cache:
        raise ForensicsError(ExitCode.USAGE, "watch reads each new commit once through the cache; --no-cache would re-read "
                                             "the whole log at every commit")
    if "aborted" in fail_on and args.no_evidence:
        raise ForensicsError(ExitCode.USAGE, "--fail-on aborted needs the evidence (orphan files): drop --no-evidence")
    table = open_table(args)
    seen = set(table.findings)
    code = report_findings(args, table.findings)
    if code:
        return code
    follower = Follower(table, isolation_level=args.isolation_level, with_evidence=not args.no_evidence,
                        settle_ms=int(args.settle * 1000))
    _say(args, f"watching {table.location} from v{follower.last_version} every {args.interval:g} s; Ctrl+C stops")

    def emit(tick: Any) -> int | None:
        for line in tick.lines:
            if args.jsonl:
                print_json(line, "replay-jsonl")
            else:
                sys.stdout.write(_text(line, args.utc or utc_default()) + "\n")
        sys.stdout.flush()
        if tick.quiet:
            _say(args, f"committed: {', '.join(f'v{v}' for v in tick.quiet)} (no concurrent winner)")
        new = [f for f in follower.table.findings if f not in seen]
        seen.update(new)
        return report_findings(args, new) or (gate_exit(args, tick.lines, fail_on, 0) or None)

    stop = threading.Event()

    def on_sigint(_sig, _frame) -> None:
        if stop.is_set():
            raise KeyboardInterrupt  # a second Ctrl+C does not wait for the look in progress
        stop.set()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        code = follow(follower, interval=args.interval, stop=stop, emit=emit)
    finally:
        signal.signal(signal.SIGINT, previous)
    if code is not None:
        return code
    sys.stderr.write(f"watch: stopped (Ctrl+C) at v{follower.last_version}\n")
    return int(ExitCode.INTERRUPTED)


def _say(args: argparse.Namespace, text: str) -> None:
    if not args.quiet:
        from forensics.safe import inert, scrub

        sys.stderr.write(inert(scrub(text), 1000) + "\n")
        sys.stderr.flush()


def _text(line: dict[str, Any], utc: bool) -> str:
    """One verdict line for the terminal: when, what, the verdict, and its detail (untrusted text made inert)."""
    from forensics.safe import inert
    from forensics.times import fmt_time

    if line["kind"] == "attempt":
        parts = [fmt_time(line["lastSeen"], utc), line["id"], line["operation"] or "?", "aborted",
                 f"lost to {line['answer']}; {', '.join(line['partitions'])} ({line['files']} file(s), {line['certainty']})"]
    else:
        v = line["verdict"]
        if v == "reordered":
            detail = f"forgiven: {', '.join(f'v{w}' for w in line['reorderedBefore'])} ({line['isolationLevel']})"
        elif v == "anomaly":
            detail = (f"{line['exception']} against v{line['winningVersion']} ({line['rule']}) yet committed; "
                      f"likely {line['likelyReason']}")
        elif v == "clean":
            detail = f"checked against {', '.join(f'v{w}' for w in line['window']) or 'no winner'}"
        else:
            detail = line["why"]
        parts = [fmt_time(line["timestamp"], utc), f"v{line['version']}", line["operation"] or "?", v, detail]
    return inert("  ".join(str(p) for p in parts), 2000)
