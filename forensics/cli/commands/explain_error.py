"""`explain-error [TABLE] (--error-file FILE | --error-file - | --event-log PATH)`: read a Delta
concurrency error text; with the table, find the winning commit, rebuild and replay the loser."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from forensics.cli.common import add_table_arguments, open_table, print_json, report_findings
from forensics.errors import ExitCode, ForensicsError
from forensics.safe import inert, inert_multiline
from forensics.times import fmt_time, utc_default, with_iso

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
    p.add_argument("--verbose", "-v", action="store_true", help="also show the message the engine would print")
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


def _lines(d: dict[str, Any], story: list[Any], verbose: bool) -> list[tuple[str, str]]:
    """The story first (from the library), then the evidence it rests on; the engine's message with --verbose."""
    from forensics import bound_in_words, clauses, in_words, rule_in_words

    out: list[tuple[str, str]] = [(ln.style, ln.text) for ln in story]
    out += [("", ""), ("bold", "Evidence" + ("" if verbose else " (--verbose adds the engine's message)"))]
    out.append(("", f"  the error text: {d['exception']}" + (f" ({d['errorClass']})" if d.get("errorClass") else "")
                + f"; writer family {d['family']}; rule: {rule_in_words(d['rule'])}"))
    if d.get("partition") is not None:
        part = d["partition"]
        out.append(("", f"  partition: {'the root of the table' if part == {} else ', '.join(f'{k}={v}' for k, v in part.items())}"))
    if d.get("file"):
        out.append(("", f"  file: {d['file']}"))
    w = d.get("winner")
    if w:
        keys = ("version", "txnId", "timestamp", "operation", "readVersion", "isolationLevel", "isBlindAppend", "engineInfo")
        shown = ", ".join(f"{k}={fmt_time(w[k], utc_default()) if k == 'timestamp' else inert(w.get(k), 120)}"
                          for k in keys if w.get(k) is not None)
        out.append(("", f"  the text's winner: {shown or 'none'}{'' if w.get('jsonComplete', True) else ' (JSON incomplete)'}"))
    if d.get("winnerMatch"):
        m = d["winnerMatch"]
        out.append(("", f"  winning commit: {('v' + str(d['winningVersion'])) if d.get('winningVersion') is not None else 'not found'} "
                    f"(by {m['how']}{'; ambiguous: ' + ', '.join('v' + str(c) for c in m['candidates']) if m['ambiguous'] else ''})"))
    rp = d.get("replay")
    if rp:
        out.append(("", f"  replay: {rp['verdict']} {rp.get('exception') or ''} against v{rp.get('winningVersion')} "
                    f"(rules of {rp.get('profile')}; {rule_in_words(rp.get('rule'))}; files read: "
                    f"{bound_in_words(rp.get('certainty'))})"))
    if d.get("why"):
        out.append(("bold", "Why"))
        out += [("dim", f"  · {c}") for c in clauses(d["why"])]
    if rp and rp.get("message") and verbose:
        out.append(("bold", "The engine would print"))
        out += [("", "  " + ln) for ln in inert_multiline(rp["message"]).splitlines()]
    if d.get("advice"):
        out.append(("bold", "What to change"))
        for a in d["advice"]:
            out.append(("cyan", f"  • {a['title']}"))
            if a.get("detail"):
                out.append(("", f"    {in_words(a['detail'])}"))
            if a.get("evidence"):
                out.append(("dim", f"    evidence: {in_words(a['evidence'])}"))
    return [(st, inert(t, 4000)) for st, t in out]


def run(args: argparse.Namespace) -> int:
    from forensics import check_profile, parse_error_text, parse_event_log, text_only_explanation, text_story

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
    stories: list[list[Any]] = []
    code = int(ExitCode.OK)
    table = open_table(args) if args.table else None
    if table is not None:
        code = report_findings(args, table.findings)
    for report, window, failure in items:
        if table is not None:
            exp = table.explain_error(report, window=window, **_facts(args))
            d, story = exp.to_dict(), exp.story()
        else:
            d, story = text_only_explanation(report), text_story(report)
            d["story"] = [ln.text for ln in story]
        stories.append(story)
        if failure is not None:
            d["execution"] = with_iso({"id": failure.execution_id, "description": failure.description,
                                       "startMs": failure.start_ms, "endMs": failure.end_ms}, "startMs", "endMs")
        results.append(d)

    if args.json:
        print_json(results[0] if not args.event_log else {"failures": results}, "explain-error")
    else:
        from forensics.cli.render import print_lines

        for i, (d, story) in enumerate(zip(results, stories)):
            head: list[tuple[str, str]] = [("", "")] if i else []
            if args.event_log:
                e = d["execution"]
                head.append(("bold", inert(f"execution {e['id']}: {inert(e['description'], 200)} "
                                           f"({fmt_time(e['startMs'], utc_default())} to {fmt_time(e['endMs'], utc_default())})", 400)))
            print_lines(head + _lines(d, story, args.verbose))
    return code
