"""Options and plumbing shared by the subcommands that read a table."""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any, Iterable

from forensics.errors import ExitCode, ForensicsError
from forensics.model import Finding


def add_table_arguments(p: argparse.ArgumentParser, *, table: bool = True) -> None:
    if table:
        p.add_argument("table", metavar="TABLE", help="table path or URI (local path, file:, s3a://, abfss://, gs://)")
    p.add_argument("--json", action="store_true", help="print JSON (stable schema, see README)")
    p.add_argument("--no-cache", action="store_true", help="read the log afresh; neither use nor update the cache")
    p.add_argument("--strict", action="store_true", help="exit 1 if the log has any warning or error finding")
    p.add_argument("--master", metavar="URL", help="Spark master (default local[2]), e.g. spark://host:7077")
    p.add_argument("--remote", metavar="URL", help="Spark Connect endpoint, e.g. sc://host:15002")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print findings to stderr")


def spark_factory(args: argparse.Namespace):
    def make():
        from forensics.runtime.spark import get_spark

        return get_spark(master=getattr(args, "master", None), remote=getattr(args, "remote", None))

    return make


def open_table(args: argparse.Namespace):
    """Open the table's log; on a terminal, a spinner shows what the (possibly long) read is doing."""
    from forensics.log.delta_log import DeltaLog

    def _open(say=None):
        return DeltaLog.open(args.table, use_cache=not args.no_cache, spark_factory=spark_factory(args), progress=say)

    if getattr(args, "quiet", False) or not sys.stderr.isatty():
        return _open()
    from rich.console import Console

    console = Console(stderr=True)
    with console.status("listing _delta_log …", spinner="dots") as status:
        return _open(lambda msg: status.update(f"{msg} …"))


def report_findings(args: argparse.Namespace, findings: Iterable[Finding]) -> int:
    """Print findings to stderr (one line each) and return the exit code --strict implies."""
    findings = list(findings)
    if not getattr(args, "quiet", False):
        from forensics.safe import inert

        for f in findings:
            sys.stderr.write(inert(f.one_line(), 1000) + "\n")
    if getattr(args, "strict", False) and any(f.severity in ("warning", "error") for f in findings):
        return int(ExitCode.STRICT)
    return int(ExitCode.OK)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=True, indent=None, default=str) + "\n")


# Like json.dumps(ensure_ascii=True): everything past "~" (DEL, C1 controls, bidi overrides, any
# non-ASCII) becomes \uXXXX; JSON encoders already escape the C0 controls.
_NON_ASCII = re.compile(r"[^\x00-\x7e]")


def _escape(m: re.Match) -> str:
    n = ord(m.group())
    if n < 0x10000:
        return f"\\u{n:04x}"
    n -= 0x10000
    return f"\\u{0xD800 + (n >> 10):04x}\\u{0xDC00 + (n & 0x3FF):04x}"


def ascii_json(text: str) -> str:
    """What `json.dumps(..., ensure_ascii=True)` does to non-ASCII characters, on finished JSON
    text: C1 controls and bidi overrides in a log never reach the terminal raw."""
    return _NON_ASCII.sub(_escape, text)


def check_rules(name: str | None) -> None:
    """An unknown --rules profile is a usage error, said in one line."""
    if not name:
        return
    from forensics.rules import get_profile

    try:
        get_profile(name)
    except KeyError as e:
        raise ForensicsError(ExitCode.USAGE, str(e).strip("'\"")) from e
