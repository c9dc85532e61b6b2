"""`find TABLE --txn-id ID | --app-id A [--txn-version N] | --user-metadata TEXT | --operation OP`: did my write land?

Exit 0 only when a retained commit matches; 14 when a checkpoint's txn action shows the app got there
but the commit is gone, 15 when it is not in the log (everything searched is retained), 16 when unknown
(the search reaches back past what the log retains). forensics/analysis/find.py has the rules.
"""

from __future__ import annotations

import argparse
import sys

from forensics.cli.common import add_selection_arguments, add_table_arguments, open_table, print_json, report_findings, selection


def add_parser(sub) -> None:
    p = sub.add_parser("find", help="did my write land? a commit by txnId, app transaction, userMetadata or operation",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_table_arguments(p)
    g = p.add_argument_group("what the writer knows of its commit (every one given must match)")
    g.add_argument("--txn-id", metavar="ID", help="commitInfo.txnId")
    g.add_argument("--app-id", metavar="A", help="txn appId (a streaming query's id, an idempotent writer's app id)")
    g.add_argument("--txn-version", type=int, metavar="N", help="with --app-id: the txn version (batch id) of the write")
    g.add_argument("--user-metadata", metavar="TEXT", help="text commitInfo.userMetadata contains")
    g.add_argument("--operation", metavar="OP", help="commitInfo.operation (WRITE, MERGE, STREAMING UPDATE, ...); "
                                                     "with --since: did one land since then?")
    add_selection_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from forensics.safe import inert
    from forensics.table import find_query

    query = find_query(txn_id=args.txn_id, app_id=args.app_id, txn_version=args.txn_version,
                       user_metadata=args.user_metadata, operation=args.operation)  # a usage error before the table is read
    sel = selection(args)
    table = open_table(args)
    res = table.find(query, selection=sel)
    if args.json:
        print_json(res.to_dict(), "find")
    else:
        sys.stdout.write(inert(res.line(), 2000) + "\n")
        if res.commit is not None:
            from forensics.times import fmt_time, utc_default

            c = res.commit
            who = c.get("userName") or c.get("engineInfo") or ""
            sys.stdout.write(inert(f"  {fmt_time(res.commit_time, args.utc or utc_default())}  {c.get('operation') or '?'}"
                                   f"  txnId {c.get('txnId') or '-'}  {who}", 2000) + "\n")
    code = report_findings(args, table.findings)
    return int(res.exit_code) if res.exit_code != 0 else code
