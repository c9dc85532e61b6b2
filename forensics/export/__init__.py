"""Exports of the one Timeline model (forensics.analysis.timeline): tables, Chrome trace, Mermaid, the
HTML post-mortem; and of a TUI view's rows (`write_view`). Any of them redacted for sharing outside
the team (`forensics.export.redact`: stable placeholders for users, clusters, buckets, hosts...).

Nothing here writes under a table directory: `check_output_path`, the one write guard, refuses such a path.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forensics.errors import ExitCode, ForensicsError
from forensics.analysis.timeline import Timeline

if TYPE_CHECKING:
    from forensics.export.postmortem import Postmortem

FORMATS = ("json", "csv", "parquet", "chrome-trace", "mermaid", "html")
EXPORT_FORMATS = FORMATS


def _local_table_dir(location: str) -> Path | None:
    if location.startswith("file:"):
        location = re.sub(r"^file:(//)?", "/", location)
        location = re.sub(r"^/+", "/", location)
    elif re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", location):
        return None  # remote table: a local file can never be inside it
    return Path(location).resolve()


def check_output_path(path: str | Path, table_location: str, *, make_parents: bool = False) -> Path:
    """The resolved output path; refuses (usage error) a path inside the table or a directory.

    `make_parents` creates a missing parent directory (the TUI's ctrl+e) instead of refusing it.
    """
    target = Path(path).expanduser()
    target = (target if target.is_absolute() else Path.cwd() / target).resolve()
    table = _local_table_dir(table_location)
    if table is not None and (target == table or table in target.parents):
        raise ForensicsError(ExitCode.USAGE, f"refusing to write {target}: it is inside the table directory {table} (the toolkit never writes under a table)")
    if target.is_dir():
        raise ForensicsError(ExitCode.USAGE, f"{target} is a directory; give a file name")
    if not target.parent.is_dir():
        if not make_parents:
            raise ForensicsError(ExitCode.USAGE, f"{target.parent} does not exist")
        target.parent.mkdir(parents=True, exist_ok=True)
    return target


def default_export_name(view: str, table_location: str, fmt: str = "json") -> Path:
    """`./delta-forensics-<view>-<table name>-<UTC stamp>.<fmt>` in the current directory."""
    parts = [p for p in table_location.rstrip("/").split("/") if p]
    name = parts[-1] if parts else "table"
    if name == "table" and len(parts) >= 2:  # sample_logs/<name>/table: the parent names it better
        name = parts[-2]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return Path.cwd() / f"delta-forensics-{view}-{name}-{stamp}.{fmt}"


def write_view(path: str | Path, payload: dict[str, Any], table_location: str, *, redact: bool = False) -> Path:
    """A view's payload as JSON, or its rows as CSV when the name ends in `.csv`; atomically.
    `redact`: identities replaced (those the payload's commitInfo fields name, e-mails, URIs, the location's)."""
    target = check_output_path(path, table_location, make_parents=True)
    if redact:
        from forensics.export.redact import Redactor

        payload = Redactor.for_table(location=table_location).apply(payload)
    tmp = target.with_name(target.name + ".tmp")
    if target.suffix.lower() == ".csv":
        rows = payload.get("rows") or payload.get("bars") or payload.get("cells") or []
        keys: list[str] = list(dict.fromkeys(k for r in rows for k in r))
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=keys)
            w.writeheader()
            for r in rows:
                w.writerow({k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in r.items()})
    else:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, ensure_ascii=False, indent=2, default=str)
            fh.write("\n")
    os.replace(tmp, target)
    return target


def write_export(tl: Timeline, fmt: str, path: Path, *, postmortem: "Postmortem | None" = None,
                 utc: bool | None = None) -> list[Path]:
    """Write `tl` as `fmt` to `path` (and a sibling `.edges` file for csv/parquet); the files written.
    html: `postmortem` holds the story, advice, statistics and counterfactuals; `utc` its times."""
    if fmt == "json":
        from forensics.export.tables import write_json

        return write_json(tl, path)
    if fmt == "csv":
        from forensics.export.tables import write_csv

        return write_csv(tl, path)
    if fmt == "parquet":
        from forensics.export.tables import write_parquet

        return write_parquet(tl, path)
    if fmt == "chrome-trace":
        from forensics.export.chrome import write_chrome_trace

        return write_chrome_trace(tl, path)
    if fmt == "mermaid":
        from forensics.export.mermaid import write_mermaid

        return write_mermaid(tl, path)
    if fmt == "html":
        from forensics.export.html import write_html

        return write_html(tl, path, postmortem, utc=utc)
    raise ForensicsError(ExitCode.USAGE, f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
