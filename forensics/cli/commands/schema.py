"""`schema [COMMAND]`: the JSON Schema (draft 2020-12) of a command's `--json` output, as shipped
with the package; without COMMAND, the commands that have one, then the JSON Lines documents
(`replay-jsonl`: each line of `replay --jsonl` and `watch --jsonl`). CHANGELOG.md: what a
schema_version change means."""

from __future__ import annotations

import argparse
import sys

from forensics.cli.common import add_utc_argument


def add_parser(sub) -> None:
    p = sub.add_parser("schema", help="print the JSON Schema of a command's --json output (no COMMAND: list them)",
                       description=__doc__)
    p.add_argument("name", metavar="COMMAND", nargs="?", help="a command with --json, e.g. explain-error, or replay-jsonl")
    add_utc_argument(p, prints_times=False)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from forensics import SCHEMA_NAMES, schema_text

    if args.name is None:
        sys.stdout.write("".join(f"{c}\n" for c in SCHEMA_NAMES))
        return 0
    sys.stdout.write(schema_text(args.name.replace("_", "-")))  # an unknown name: a usage error, one line
    return 0
