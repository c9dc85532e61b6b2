"""`export TABLE --format F -o FILE [--redact]`: the conflict timeline for Perfetto, Markdown, notebooks, or as
the HTML post-mortem; `--redact` makes any of them shareable outside the team."""

from __future__ import annotations

import argparse
import sys

from forensics.cli.common import add_selection_arguments, add_table_arguments, open_table, print_json, report_findings, selected_versions, selection
from forensics.model import ISOLATION_LEVELS


# Kept here (not imported from forensics.export) so building the CLI parser stays cheap;
# tests/test_export.py checks it equals forensics.export.FORMATS.
FORMATS = ("json", "csv", "parquet", "chrome-trace", "mermaid", "html")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "export",
        help="export the conflict timeline: json, csv, parquet (tidy tables), chrome-trace (Perfetto), mermaid, html report",
    )
    add_table_arguments(p)
    p.add_argument("--format", "-f", required=True, choices=FORMATS, help="output format")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="output file (never inside the table directory); csv/parquet also write FILE.edges.<ext>")
    p.add_argument("--rules", metavar="PROFILE", help="rule profile for every commit (default: from each commit's engineInfo)")
    p.add_argument("--no-evidence", action="store_true", help="leave out aborted attempts (orphan files); faster on big tables")
    p.add_argument("--window", default="1h", help="html: statistics bucket size (e.g. 15m, 1h, 1d; default 1h)")
    p.add_argument("--isolation-level", choices=ISOLATION_LEVELS, action="append", dest="cf_levels",
                   help="html: counterfactual isolation level(s) (default: Serializable and WriteSerializable)")
    p.add_argument("--partition-by", metavar="COL", action="append", dest="cf_partition",
                   help="html: also simulate partitioning by COL (repeatable)")
    p.add_argument("--redact", action="store_true",
                   help="replace user names, e-mails, notebook/cluster/job ids, bucket and host names with stable "
                        "placeholders (user-1, cluster-1, bucket-1, ...) in every file written")
    add_selection_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from forensics import check_output_path

    sel = selection(args)  # --from after --to, a time it cannot read: usage errors before anything is read
    # Refuse a path under the table before reading anything (the table path is known already).
    check_output_path(args.output, args.table)
    table = open_table(args)
    first, last = selected_versions(sel, table)
    written, tl = table.export(args.format, args.output, from_version=first, to_version=last,
                               with_evidence=not args.no_evidence, window=args.window,
                               isolation_levels=args.cf_levels, partition_columns=args.cf_partition,
                               redact=args.redact, utc=args.utc or None)
    if args.json:
        print_json({"format": args.format, "files": [str(p) for p in written], "spans": len(tl.spans), "edges": len(tl.edges),
                    "timelineSchemaVersion": tl.schema_version, "notes": tl.notes}, "export")
    else:
        for p in written:
            sys.stdout.write(f"wrote {p}\n")
        if not args.quiet:
            for n in tl.notes:
                sys.stderr.write(f"note: {n}\n")
    return report_findings(args, table.findings + tl.findings)
