"""`evidence TABLE`: orphan data files, stray commit files, and the aborted attempts they reveal."""

from __future__ import annotations

import argparse
import sys

from forensics.cli.common import add_table_arguments, open_table, print_json, report_findings
from forensics.safe import inert
from forensics.times import fmt_time, utc_default


def add_parser(sub) -> None:
    p = sub.add_parser("evidence", help="find the traces of transactions that never reached the log", description=__doc__)
    add_table_arguments(p)
    p.add_argument("--rules", metavar="PROFILE", help="rule profile for replaying attempts (default: the table's latest writer)")
    p.add_argument("--no-replay", action="store_true", help="list files and attempts without replaying them")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    table = open_table(args)
    code = report_findings(args, table.findings)
    ev = table.evidence(replay=not args.no_replay)
    if args.json:
        print_json(ev.to_dict(), "evidence")
        return code
    out = sys.stdout.write
    out(f"orphan data files: {len(ev.orphan_files)}\n")
    for f in ev.orphan_files:
        out(f"  {inert(f.path)}  ({f.size} bytes, modified {fmt_time(f.mtime_ms, utc_default())})\n")
    if ev.unknown_files:
        out(f"unknown (may predate log retention, v{ev.oldest_retained}): {len(ev.unknown_files)}\n")
        for f in ev.unknown_files[:50]:
            out(f"  {inert(f.path)}\n")
    out(f"file times: {'trusted' if ev.clock.trusted else 'not trusted'}: {inert(ev.clock.why)}\n")
    for i, a in enumerate(ev.attempts, 1):
        parts = "; ".join(", ".join(f"{k}={v}" for k, v in p.items()) or "(root)" for p in a.partitions)
        out(f"\nattempt {i}: {len(a.files)} file(s) [{a.grouped_by}] in {inert(parts)}; written {fmt_time(a.first_seen, utc_default())} to {fmt_time(a.last_seen, utc_default())}\n")
        for f in a.files:
            out(f"  {inert(f.path)}\n")
        out(f"  concurrent versions: {a.concurrent_versions}" + (f"; landed just after: {a.landed_after}" if a.landed_after else "") + "\n")
        out(f"  likely exception: {inert(a.likely_exception or 'none found')}"
            + (f" against v{a.winning_version} (inferred)" if a.winning_version is not None else "") + "\n")
        out(f"  why: {inert(a.why, 3000)}\n")
    if ev.stray_commit_files:
        out(f"\nstray commit files: {len(ev.stray_commit_files)}\n")
        for s in ev.stray_commit_files:
            out(f"  {inert(s.file)} [{s.kind}] version {s.version}: {inert(s.operation or '?')} readVersion {s.read_version}, "
                f"{len(s.adds)} add(s), {len(s.removes)} remove(s); {inert(s.why)}\n")
    for f in ev.findings:
        sys.stderr.write(inert(f.one_line(), 1000) + "\n")
    return code
