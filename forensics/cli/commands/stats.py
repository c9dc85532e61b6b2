"""`stats TABLE [TABLE ...] [--window 1h]`: contention statistics (hot partitions and files, operation
pairs, concurrency over time, retry indications). JSON shape: forensics/analysis/stats.py docstring;
several tables: one document each under `tables`, and their totals summed under `combined`."""

from __future__ import annotations

import argparse
import copy

from forensics.cli.common import add_selection_arguments, add_table_arguments, open_table, print_json, report_findings, selected_versions, selection


def add_parser(sub) -> None:
    p = sub.add_parser("stats", help="contention statistics: hot partitions/files per window, operation-pair matrix, concurrency, retries")
    add_table_arguments(p, table=False)
    p.add_argument("table", nargs="+", metavar="TABLE", action=_Tables,
                   help="table path or URI (local path, file:, s3a://, abfss://, gs://); several: one block each and their totals")
    p.add_argument("--window", default="1h", help="time bucket (e.g. 30s, 15m, 1h, 1d; default 1h)")
    p.add_argument("--rules", metavar="PROFILE", help="rule profile for every commit (default: from each commit's engineInfo)")
    p.add_argument("--top", type=int, default=10, help="rows per ranking (default 10)")
    p.add_argument("--no-evidence", action="store_true", help="leave out aborted attempts (orphan files)")
    add_selection_arguments(p)
    p.set_defaults(func=run)


class _Tables(argparse.Action):
    """Every TABLE in `tables`; `table` stays the first, a string, as for every other command."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        namespace.tables = list(values)
        namespace.table = namespace.tables[0]


def run(args: argparse.Namespace) -> int:
    sel = selection(args)
    docs, codes = [], []
    for uri in args.tables:
        one = copy.copy(args)
        one.table = uri
        table = open_table(one)
        first, last = selected_versions(sel, table)
        st = table.stats_report(window=args.window, from_version=first, to_version=last, top=args.top,
                                with_evidence=not args.no_evidence)
        if args.json or len(args.tables) > 1:
            docs.append(st.to_dict())
        if not args.json:
            from forensics.cli.render import print_renderable, stats_view

            print_renderable(stats_view(st, utc=args.utc or None))
        codes.append(report_findings(args, table.findings + st.findings))
    if len(args.tables) > 1:
        combined = {"tables": len(docs), "totals": {k: sum(d["totals"][k] for d in docs) for k in docs[0]["totals"]}}
        if args.json:
            print_json({"tables": docs, "combined": combined}, "stats")
        else:
            print(combined_line(combined))
    elif args.json:
        print_json(docs[0], "stats")
    return max(codes)


def combined_line(combined: dict) -> str:
    """The tables' totals summed, in the words of each table's block."""
    t = combined["totals"]
    pairs = t["forgivenPairs"]
    return (f"all {combined['tables']} tables: commits: {t['commits']}  stale windows: {t['staleWindows']}  "
            f"conflicts: {t['conflicts']}  reordered commits: {t['reorderedCommits']} ({pairs} forgiven pair{'' if pairs == 1 else 's'})  "
            f"aborted attempts: {t['abortedAttempts']} (conflicts from them: {t['abortedConflicts']})  skipped windows: {t['skipped']}")
