"""`snapshot TABLE [--version V]`: the active files, protocol and metadata at a version."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from forensics.cli.common import add_table_arguments, open_table, report_findings

if TYPE_CHECKING:  # annotations only: not on the command line's start-up path
    from forensics.model import Snapshot


def add_parser(sub) -> None:
    p = sub.add_parser("snapshot", help="active files, protocol and metadata at a version (default: latest)")
    add_table_arguments(p)
    p.add_argument("--version", dest="at_version", type=int, metavar="V", help="version (default: latest)")
    p.set_defaults(func=run)


def snapshot_json(s: Snapshot) -> dict[str, Any]:
    """The `snapshot --json` document (without findings; `delta-forensics schema snapshot`): paths
    exactly as written in the log."""
    from forensics import SCHEMA_VERSION

    return {
        "schema_version": SCHEMA_VERSION,
        "version": s.version,
        "files": [
            {
                "path": f.path,
                "partitionValues": f.partition_values,
                "size": f.size,
                "deletionVector": (
                    {
                        "storageType": f.deletion_vector.storage_type,
                        "pathOrInlineDv": f.deletion_vector.path_or_inline_dv,
                        "offset": f.deletion_vector.offset,
                        "sizeInBytes": f.deletion_vector.size_in_bytes,
                        "cardinality": f.deletion_vector.cardinality,
                    }
                    if f.deletion_vector
                    else None
                ),
                # Files that come from the base checkpoint were added at some version <= it.
                "addedInVersion": None if s.base_checkpoint is not None and f.version == s.base_checkpoint else f.version,
            }
            for f in s.files
        ],
        "protocol": s.protocol.to_dict() if s.protocol else None,
        "metadata": s.metadata.to_dict() if s.metadata else None,
        "appTransactions": s.app_transactions,
        "domainMetadata": s.domain_metadata,
        "baseCheckpoint": s.base_checkpoint,
    }


def run(args: argparse.Namespace) -> int:
    table = open_table(args)
    if args.json:
        # Column-wise and without stats (the JSON has none): 1M files in seconds, not a
        # FileAction and a dict per file. Same text as print_json(snapshot_json(...)).
        from forensics.cli.commands._snapshot_json import write_snapshot_json

        frame, findings = table.snapshot_frame(args.at_version, stats=False)
        write_snapshot_json(frame, [f.to_dict() for f in table.findings + findings], sys.stdout)
    else:
        from forensics.cli.render import print_renderable, snapshot_view

        before = table.findings
        snap = table.snapshot(args.at_version)
        findings = [f for f in table.findings if f not in before]
        print_renderable(snapshot_view(snap, table.location))
    return report_findings(args, table.findings[: len(table.findings) - len(findings)] + findings)
