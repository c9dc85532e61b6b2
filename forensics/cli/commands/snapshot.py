"""`snapshot TABLE [--version V]`: the active files, protocol and metadata at a version."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from forensics.cli.common import add_table_arguments, open_table, report_findings
from forensics.model import Snapshot


def add_parser(sub) -> None:
    p = sub.add_parser("snapshot", help="active files, protocol and metadata at a version (default: latest)")
    add_table_arguments(p)
    p.add_argument("--version", dest="at_version", type=int, metavar="V", help="version (default: latest)")
    p.set_defaults(func=run)


def snapshot_json(s: Snapshot) -> dict[str, Any]:
    """The `snapshot --json` object (README: JSON contract); paths exactly as written in the log."""
    return {
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
        "protocol": s.protocol.to_json() if s.protocol else None,
        "metadata": s.metadata.to_json() if s.metadata else None,
        "appTransactions": s.app_transactions,
        "domainMetadata": s.domain_metadata,
        "baseCheckpoint": s.base_checkpoint,
    }


def run(args: argparse.Namespace) -> int:
    log = open_table(args)
    if args.json:
        # Column-wise and without stats (the JSON has none): 1M files in seconds, not a
        # FileAction and a dict per file. Same text as print_json(snapshot_json(...)).
        from forensics.cli.commands._snapshot_json import write_snapshot_json
        from forensics.log.snapshot import snapshot_frame

        frame, findings = snapshot_frame(log, args.at_version, stats=False)
        write_snapshot_json(frame, [f.to_json() for f in log.findings + findings], sys.stdout)
    else:
        from forensics.log.snapshot import snapshot
        from forensics.cli.render import print_renderable, snapshot_view

        snap, findings = snapshot(log, args.at_version)
        print_renderable(snapshot_view(snap, log.location))
    return report_findings(args, log.findings + findings)
