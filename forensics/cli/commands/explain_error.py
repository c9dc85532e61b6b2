"""`explain-error [TABLE] (--error-file FILE | --error-file - | --event-log PATH)`: read a Delta
concurrency error text; with the table, find the winning commit, rebuild and replay the loser."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from forensics.cli.common import add_table_arguments, open_table, print_json, report_findings
from forensics.errors import ExitCode, ForensicsError
from forensics.safe import inert, inert_multiline
from forensics.times import fmt_time, utc_default

MAX_TEXT = 2 * 1024 * 1024


def add_parser(sub) -> None:
    p = sub.add_parser("explain-error", help="explain a Delta concurrency error text (and replay it against the table)",
                       description=__doc__)
    p.add_argument("table", metavar="TABLE", nargs="?", help="table path or URI (optional)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--error-file", metavar="FILE", help="file holding the error text, or - for stdin")
    src.add_argument("--event-log", metavar="PATH", help="Spark event log (file or rolled directory)")
    p.add_argument("--rules", metavar="PROFILE", help="rule profile of the losing writer (default: from the text's family)")
    known = p.add_argument_group("what you know of the failed transaction (each replaces a guess)")
    known.add_argument("--read-version", type=int, metavar="V", help="the table version it read")
    known.add_argument("--failed-at", metavar="TIME", help="when it failed: ISO 8601 (local time unless it has an offset) or epoch ms")
    known.add_argument("--operation", metavar="OP", help="what it was: DELETE, UPDATE, MERGE, WRITE, OPTIMIZE, ...")
    known.add_argument("--predicate", metavar="SQL", help="its condition, e.g. \"date = '2024-06-18'\"")
    known.add_argument("--sql", metavar="STATEMENT", help="its SQL statement (parsed for operation and condition, never run)")
    add_table_arguments(p, table=False)
    p.set_defaults(func=run)


def _remote(path: str) -> bool:
    from forensics import parse_location

    return parse_location(path).is_remote


def _read_remote(args: argparse.Namespace, uri: str, limit: int) -> bytes:
    """An error text or event log kept in an object store, with the table's storage settings."""
    from forensics import read_object
    from forensics.cli.common import pairs

    return read_object(uri, pairs(args.storage_option, "--storage-option"), profile=args.profile, limit=limit)


def _read_text(args: argparse.Namespace, path: str) -> str:
    if path == "-":
        return sys.stdin.read(MAX_TEXT)
    if _remote(path):
        return _read_remote(args, path, MAX_TEXT).decode("utf-8", errors="replace")
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(MAX_TEXT)
    except OSError as e:
        raise ForensicsError(ExitCode.USAGE, f"cannot read {path}: {e.strerror}") from e


def _facts(args: argparse.Namespace) -> dict[str, Any]:
    """The loser facts given on the command line, as Table.explain_error takes them."""
    failed_at = None
    if args.failed_at:
        from forensics.times import parse_time

        try:
            failed_at = parse_time(args.failed_at)
        except ValueError as e:
            raise ForensicsError(ExitCode.USAGE, f"--failed-at {inert(args.failed_at, 60)}: not a time ({e})") from e
    return {"read_version": args.read_version, "failed_at": failed_at, "operation": args.operation,
            "predicate": args.predicate, "sql": args.sql}


def _print_text(d: dict[str, Any], excerpt: str | None = None) -> None:
    out = sys.stdout.write
    out(f"exception:   {inert(d['exception'])}\n")
    if d.get("error_class"):
        out(f"error class: {inert(d['error_class'])}\n")
    out(f"family:      {inert(d['family'])}   rule: {inert(d['rule'])}\n")
    if d.get("partition") is not None:
        part = d["partition"]
        out(f"partition:   {'the root of the table' if part == {} else inert(', '.join(f'{k}={v}' for k, v in part.items()))}\n")
    if d.get("file"):
        out(f"file:        {inert(d['file'])}\n")
    w = d.get("winner")
    if w:
        keys = [("version", "version"), ("txnId", "txnId"), ("timestamp", "timestamp"), ("operation", "operation"),
                ("readVersion", "readVersion"), ("isolationLevel", "isolationLevel"), ("isBlindAppend", "isBlindAppend"),
                ("engineInfo", "engineInfo")]
        shown = ", ".join(f"{label}={fmt_time(w[k], utc_default()) if k == 'timestamp' else inert(w.get(k), 120)}"
                          for k, label in keys if w.get(k) is not None)
        out(f"winner hint: {shown or 'none'}{'' if w.get('jsonComplete', True) else ' (JSON incomplete)'}\n")
    if d.get("winner_match"):
        m = d["winner_match"]
        out(f"winning commit: {('v' + str(d['winning_version'])) if d.get('winning_version') is not None else 'not found'} "
            f"(by {m['how']}{'; ambiguous: ' + ', '.join('v' + str(c) for c in m['candidates']) if m['ambiguous'] else ''})\n")
    rp = d.get("replay")
    if rp:
        out(f"replay:      {inert(rp['verdict'])} {inert(rp.get('exception') or '')} against v{rp.get('winning_version')} "
            f"[{inert(rp.get('profile'))}, {inert(rp.get('certainty'))}] rule {inert(rp.get('rule'))}\n")
        if rp.get("message"):
            out("engine would print:\n  " + inert_multiline(rp["message"]).replace("\n", "\n  ") + "\n")
    if d.get("why"):
        out(f"why:         {inert(d['why'], 3000)}\n")
    for a in d.get("advice") or []:
        out(f"advice:      {inert(a, 2000)}\n")


def run(args: argparse.Namespace) -> int:
    from forensics import check_profile, parse_error_text, parse_event_log, text_only_explanation

    check_profile(args.rules)  # an unknown --rules fails before anything is read
    if args.event_log:
        try:
            source = _read_remote(args, args.event_log, 0).splitlines() if _remote(args.event_log) else args.event_log
            failures = parse_event_log(source)
        except (OSError, ValueError) as e:
            raise ForensicsError(ExitCode.USAGE, f"cannot read event log {args.event_log}: {inert(str(e), 200)}") from e
        items = [(f.report, (f.start_ms, f.end_ms) if f.start_ms is not None and f.end_ms is not None else None, f) for f in failures]
        items = [i for i in items if i[0].recognized]
        if not items:
            raise ForensicsError(ExitCode.NOT_RECOGNIZED, f"no failed execution in the event log ended with a Delta concurrency error ({len(failures)} failure(s) seen)")
    else:
        report = parse_error_text(_read_text(args, args.error_file))
        if not report.recognized:
            raise ForensicsError(ExitCode.NOT_RECOGNIZED, f"not a Delta concurrency error: {inert(report.why_not or 'no conflict text found', 300)}")
        items = [(report, None, None)]

    results: list[dict[str, Any]] = []
    code = int(ExitCode.OK)
    table = open_table(args) if args.table else None
    if table is not None:
        code = report_findings(args, table.findings)
    for report, window, failure in items:
        d = (table.explain_error(report, window=window, **_facts(args)).to_dict() if table is not None
             else text_only_explanation(report))
        if failure is not None:
            d["execution"] = {"id": failure.execution_id, "description": failure.description, "start_ms": failure.start_ms, "end_ms": failure.end_ms}
        results.append(d)

    if args.json:
        print_json(results[0] if not args.event_log else {"failures": results})
    else:
        for i, d in enumerate(results):
            if args.event_log:
                e = d["execution"]
                sys.stdout.write(f"{'' if i == 0 else chr(10)}execution {e['id']}: {inert(e['description'], 200)} ({fmt_time(e['start_ms'], utc_default())} to {fmt_time(e['end_ms'], utc_default())})\n")
            _print_text(d)
    return code
