"""`evidence TABLE`: orphan data files, stray commit files, and the aborted attempts they reveal."""

from __future__ import annotations

import argparse
import sys
import textwrap

from forensics.cli.columns import console_width
from forensics.cli.common import add_selection_arguments, add_table_arguments, open_table, print_json, report_findings, selection
from forensics.safe import inert
from forensics.times import fmt_time, utc_default


def add_parser(sub) -> None:
    p = sub.add_parser("evidence", help="find the traces of transactions that never reached the log", description=__doc__)
    add_table_arguments(p)
    p.add_argument("--rules", metavar="PROFILE", help="rule profile for replaying attempts (default: the table's latest writer)")
    p.add_argument("--no-replay", action="store_true", help="list files and attempts without replaying them")
    p.add_argument("-v", "--verbose", action="store_true", help="also print each attempt's whole reasoning")
    add_selection_arguments(p)
    p.set_defaults(func=run)


def _wrap(out, text: str, width: int, indent: str = "  ", rest: str = "    ") -> None:
    for line in textwrap.wrap(text, width=max(40, width), initial_indent=indent, subsequent_indent=rest,
                              break_long_words=True, break_on_hyphens=False) or [indent]:
        out(line + "\n")


def _attribution_lines(a, out, width: int) -> None:
    """The attempt's answer: one winner, or "one of" with the ranking and what would decide it."""
    cands = a.candidates
    if not cands:
        _wrap(out, f"winner: none found ({inert(a.why, 600)})", width)
        return
    if len(cands) == 1:
        c = cands[0]
        _wrap(out, f"winner: v{c.winning_version}, {c.exception} (inferred; {_reads(c)})", width)
    else:
        _wrap(out, f"winner: one of {len(cands)}, most likely first (inferred):", width)
        for c in cands[:MAX_SHOWN]:
            _wrap(out, f"{c.rank}. v{c.winning_version} {c.exception}: if it {inert(c.hypothesis, 200)}, {_reads(c)}",
                  width, "    ", "       ")
        if len(cands) > MAX_SHOWN:
            out(f"    ... {len(cands) - MAX_SHOWN} more (--json lists them all)\n")
        _wrap(out, "what would decide it: the failed job's error text (explain-error TABLE --error-file), "
                   "the version it read (--read-version) or its statement (--sql)", width)
    for b in (a.attribution.basis if a.attribution is not None else []):
        _wrap(out, f"- {inert(b, 600)}", width, "  ", "    ")


def _reads(c) -> str:
    lo, hi = c.read_versions
    return f"read v{lo}" if lo == hi else f"read v{lo}..v{hi}"


MAX_SHOWN = 5


def _within(ev, chosen):
    """The attempts that raced a chosen version (or that the evidence says lost to one) and their files;
    stray commit files by the version they name. The Table's cached Evidence is left as it is."""
    if chosen is None:
        return ev
    import dataclasses

    attempts = [a for a in ev.attempts if chosen.touches([*a.concurrent_versions, *a.landed_after, a.winning_version,
                                                          *(c.winning_version for c in a.candidates)])]
    kept = {f.path for a in attempts for f in a.files}
    return dataclasses.replace(ev, attempts=attempts, orphan_files=[f for f in ev.orphan_files if f.path in kept],
                               stray_commit_files=[s for s in ev.stray_commit_files if s.version in chosen])


def run(args: argparse.Namespace) -> int:
    sel = selection(args)
    table = open_table(args)
    chosen = table.select(sel)  # None: every version
    code = report_findings(args, table.findings)
    ev = _within(table.evidence(replay=not args.no_replay), chosen)
    if args.json:
        print_json(ev.to_dict(), "evidence")
        return code
    width = console_width() or 200
    out = sys.stdout.write
    out(f"orphan data files: {len(ev.orphan_files)}\n")
    for f in ev.orphan_files:
        _wrap(out, f"{inert(f.path)} ({f.size} bytes, modified {fmt_time(f.mtime_ms, utc_default())})", width)
    if ev.unknown_files:
        out(f"unknown (may predate log retention, v{ev.oldest_retained}): {len(ev.unknown_files)}\n")
        for f in ev.unknown_files[:50]:
            _wrap(out, inert(f.path), width)
    _wrap(out, f"file times: {'trusted' if ev.clock.trusted else 'not trusted'}: {inert(ev.clock.why)}", width, "", "  ")
    for i, a in enumerate(ev.attempts, 1):
        parts = "; ".join(", ".join(f"{k}={v}" for k, v in p.items()) or "(root)" for p in a.partitions)
        when = (f"written {fmt_time(a.first_seen, utc_default())} to {fmt_time(a.last_seen, utc_default())}" if ev.clock.trusted
                else "file times not trusted")
        out("\n")
        _wrap(out, f"attempt {i}: {len(a.files)} file(s) [{a.grouped_by}] in {inert(parts)}; {when}", width, "", "  ")
        for f in a.files:
            _wrap(out, inert(f.path), width)
        if a.content is not None:
            _wrap(out, f"its files show: {a.content.kind} ({inert(a.content.writer or '', 200)})", width)
        if args.no_replay:
            continue
        _attribution_lines(a, out, width)
        if getattr(args, "verbose", False):
            _wrap(out, f"why: {inert(a.why, 3000)}", width)
    if ev.stray_commit_files:
        out(f"\nstray commit files: {len(ev.stray_commit_files)}\n")
        for s in ev.stray_commit_files:
            _wrap(out, f"{inert(s.file)} [{s.kind}] version {s.version}: {inert(s.operation or '?')} readVersion {s.read_version}, "
                       f"{len(s.adds)} add(s), {len(s.removes)} remove(s); {inert(s.why)}", width)
    for f in ev.findings:
        sys.stderr.write(inert(f.one_line(), 1000) + "\n")
    return code
