"""`whatif TABLE --read-version R --operation OP ...`: would this transaction have committed?"""

from __future__ import annotations

import argparse

from forensics.cli.common import add_table_arguments, open_table, print_json, report_findings
from forensics.model import ISOLATION_LEVELS


def _partition(text: str) -> dict[str, str]:
    out = {}
    for part in text.split(","):
        if "=" not in part:
            raise argparse.ArgumentTypeError(f"expected COL=VAL, got {text!r}")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def add_parser(sub) -> None:
    p = sub.add_parser("whatif", help="replay a hypothetical transaction that read version R against what landed after it")
    add_table_arguments(p)
    p.add_argument("--read-version", type=int, required=True, metavar="R")
    p.add_argument("--operation", required=True, metavar="OP", help="INSERT, OVERWRITE, DELETE, UPDATE, MERGE, OPTIMIZE, SET TBLPROPERTIES, STREAMING UPDATE")
    p.add_argument("--predicate", metavar="SQL", help="the condition (DELETE/UPDATE/MERGE/OPTIMIZE) or replaceWhere (OVERWRITE)")
    p.add_argument("--mode", choices=("Append", "Overwrite"), help="WRITE mode")
    p.add_argument("--partition", action="append", default=[], type=_partition, metavar="COL=VAL", help="partition(s) the new files go to (repeatable)")
    p.add_argument("--isolation-level", choices=ISOLATION_LEVELS)
    p.add_argument("--rules", metavar="PROFILE", help="rule profile (default: the table's latest writer)")
    p.add_argument("--until", type=int, metavar="V", help="replay against R+1..V (default: latest)")
    p.add_argument("--app-id", metavar="ID", help="txn appId (streaming query id) the transaction writes")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    table = open_table(args)
    res = table.whatif(
        read_version=args.read_version,
        operation=args.operation,
        predicate=args.predicate,
        mode=args.mode,
        partitions=args.partition,
        isolation_level=args.isolation_level,
        rules=args.rules,
        until=args.until,
        app_id=args.app_id,
    )
    if args.json:
        print_json(res.to_dict(), "whatif")
    else:
        from forensics.cli.render import print_renderable, whatif_view

        print_renderable(whatif_view(res))
    return report_findings(args, table.findings)
