"""Options and plumbing shared by the subcommands that read a table."""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import TYPE_CHECKING, Any, Iterable

from forensics.errors import ExitCode, ForensicsError

if TYPE_CHECKING:  # forensics.model is not needed to parse a command line (the warm engine's client)
    from forensics.model import Finding
    from forensics.table import Selection, Table


def add_table_arguments(p: argparse.ArgumentParser, *, table: bool = True, json: bool = True) -> None:
    """`json=False`: a command that prints a stream (`watch`) has --jsonl of its own instead of --json."""
    if table:
        p.add_argument("table", metavar="TABLE", help="table path or URI (local path, file:, s3a://, abfss://, gs://)")
    if json:
        p.add_argument("--json", action="store_true", help="print JSON (the schema: delta-forensics schema COMMAND)")
    p.add_argument("--no-cache", action="store_true", help="read the log afresh; neither use nor update the cache")
    p.add_argument("--strict", action="store_true", help="exit 1 if the log has any warning or error finding")
    p.add_argument("--master", metavar="URL", help="Spark master (default local[2]), e.g. spark://host:7077")
    p.add_argument("--remote", metavar="URL", help="Spark Connect endpoint, e.g. sc://host:15002")
    p.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                   help="object-store setting in delta-rs's key names (AWS_ENDPOINT_URL, AZURE_STORAGE_ACCOUNT_NAME, ...); repeatable")
    p.add_argument("--profile", metavar="NAME", help="named profile of storage options and Spark settings in the config file")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark setting for the tool's own session; repeatable")
    p.add_argument("--writer-conf", action="append", default=[], metavar="KEY=VALUE",
                   help="session setting of the writer being modelled, not of this tool (e.g. spark.databricks.delta."
                   "conflictChecker.enforceConcurrentFeatureEnablement.enabled=true); used when replaying; repeatable")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print findings to stderr")
    add_utc_argument(p)


def add_utc_argument(p: argparse.ArgumentParser, *, prints_times: bool = True) -> None:
    """Every command takes --utc, so a script can pass it to all of them."""
    p.add_argument("--utc", action="store_true",
                   help="show times in UTC (default: local time with its offset; also DELTA_FORENSICS_UTC=1)" if prints_times
                   else "accepted by every command; this one prints no times")


def add_selection_arguments(p: argparse.ArgumentParser) -> None:
    """--from/--to (versions), --since/--until (commit times), --last N: the one way every command that
    reads history picks its versions (forensics/log/select.py)."""
    g = p.add_argument_group("which versions (docs/commands.md: Choosing versions)")
    g.add_argument("--from", dest="from_version", type=int, metavar="V", help="first version (inclusive)")
    g.add_argument("--to", dest="to_version", type=int, metavar="V", help="last version (inclusive)")
    g.add_argument("--since", metavar="TIME",
                   help="from the first commit at or after TIME: ISO 8601 (2024-06-20T09:00), a time of day today (09:00), "
                        "relative (2h, 30m, 1d), today, yesterday; local time unless --utc or an offset")
    g.add_argument("--until", metavar="TIME", help="to the last commit at or before TIME (the forms of --since)")
    g.add_argument("--last", type=int, metavar="N", help="only the last N versions of the selection")


def selection(args: argparse.Namespace) -> "Selection":
    """The versions the command was asked for (a usage error, exit 2, for a time it cannot read)."""
    from forensics.table import parse_selection as parsed
    from forensics.times import utc_default

    return parsed(from_version=getattr(args, "from_version", None), to_version=getattr(args, "to_version", None),
                        since=getattr(args, "since", None), until=getattr(args, "until", None), last=getattr(args, "last", None),
                        utc=bool(getattr(args, "utc", False)) or utc_default())


def selected_versions(sel: "Selection", table: "Table") -> tuple[int | None, int | None]:
    """(first, last) version the selection holds in the table, None where unbounded; RangeOutsideLog (exit 13)
    when it holds none."""
    r = table.select(sel)
    return (r.first, r.last) if r is not None else (None, None)


def open_table(args: argparse.Namespace) -> "Table":
    """The front object for the command's table; on a terminal, a spinner shows what the
    (possibly long) read is doing. An unknown --rules profile fails before anything is read."""
    from forensics.table import Table

    def _open(say=None) -> Table:
        return Table(args.table, rules=getattr(args, "rules", None), use_cache=not args.no_cache,
                     master=getattr(args, "master", None), remote=getattr(args, "remote", None),
                     storage_options=pairs(args.storage_option, "--storage-option"), profile=args.profile,
                     spark_conf=pairs(args.conf, "--conf"), writer_conf=pairs(args.writer_conf, "--writer-conf"),
                     progress=say)

    if getattr(args, "quiet", False) or not sys.stderr.isatty():
        return _said_writer_conf(args, _open())
    from rich.console import Console

    console = Console(stderr=True)
    with console.status("listing _delta_log …", spinner="dots") as status:
        table = _open(lambda msg: status.update(f"{msg} …"))
    return _said_writer_conf(args, table)


def _said_writer_conf(args: argparse.Namespace, table: "Table") -> "Table":
    """One line on stderr for each writer setting no rule reads (conflict-rules §14), or, on a command
    that replays nothing (no --rules), that the settings change nothing here."""
    conf = table.writer_conf
    if conf and not getattr(args, "quiet", False):
        from forensics.safe import inert, scrub

        notes = conf.not_modelled_notes() if hasattr(args, "rules") else [
            f"--writer-conf has no effect on {getattr(args, 'command', 'this command')}: it replays no transaction"]
        for note in notes:
            sys.stderr.write("note: " + inert(scrub(note), 1000) + "\n")
    return table


# A setting's name as people write them (AWS_SECRET_ACCESS_KEY, sas_token, spark.hadoop.fs.s3a.secret.key):
# only text of this shape is ever repeated back in a usage error.
_KEY_SHAPE = re.compile(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)+|[a-z][a-z0-9]*(_[a-z0-9]+)+|[a-z][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)+")


def pairs(values: list[str], flag: str) -> dict[str, str]:
    """`KEY=VALUE` arguments as a dict; a value may itself hold `=`. A malformed one is a usage
    error naming the flag and the key, never the value (it is often a credential)."""
    out: dict[str, str] = {}
    for v in values or []:
        key, eq, val = v.partition("=")
        if not eq:
            head, colon, _ = v.partition(":")
            named = colon and len(head) <= 100 and _KEY_SHAPE.fullmatch(head.strip())
            got = f"{head.strip()} followed by ':'" if named else "text without '='"
            raise ForensicsError(ExitCode.USAGE, f"{flag} takes KEY=VALUE, got {got} (the value is not shown)")
        if not key.strip():
            raise ForensicsError(ExitCode.USAGE, f"{flag} takes KEY=VALUE, got an empty KEY (the value is not shown)")
        out[key.strip()] = val
    return out


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


def print_json(obj: Any, command: str) -> None:
    """Print `command --json`: `obj` as the document its shipped schema describes (schema_version
    first, deprecated aliases of renamed keys; `delta-forensics schema COMMAND`), ASCII-escaped."""
    from forensics import json_document

    sys.stdout.write(json.dumps(json_document(command, obj), ensure_ascii=True, indent=None, default=str) + "\n")
