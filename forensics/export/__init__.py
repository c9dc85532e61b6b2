"""Exports of the one Timeline model (forensics.analysis.timeline): tables, Chrome trace, Mermaid, HTML.

`write_export` never writes under a table directory: `check_output_path` refuses such a path.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from forensics.errors import ExitCode, ForensicsError
from forensics.analysis.timeline import Timeline

FORMATS = ("json", "csv", "parquet", "chrome-trace", "mermaid", "html")


def _local_table_dir(location: str) -> Path | None:
    if location.startswith("file:"):
        location = re.sub(r"^file:(//)?", "/", location)
        location = re.sub(r"^/+", "/", location)
    elif re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", location):
        return None  # remote table: a local file can never be inside it
    return Path(location).resolve()


def check_output_path(path: str | Path, table_location: str) -> Path:
    """The resolved output path; refuses (usage error) a path inside the table or a directory."""
    target = Path(path).expanduser()
    target = (target if target.is_absolute() else Path.cwd() / target).resolve()
    table = _local_table_dir(table_location)
    if table is not None and (target == table or table in target.parents):
        raise ForensicsError(ExitCode.USAGE, f"refusing to write {target}: it is inside the table directory {table} (the toolkit never writes under a table)")
    if target.is_dir():
        raise ForensicsError(ExitCode.USAGE, f"{target} is a directory; give a file name")
    if not target.parent.is_dir():
        raise ForensicsError(ExitCode.USAGE, f"{target.parent} does not exist")
    return target


def write_export(tl: Timeline, fmt: str, path: Path, *, stats: dict[str, Any] | None = None,
                 counterfactuals: list[dict[str, Any]] | None = None) -> list[Path]:
    """Write `tl` as `fmt` to `path` (and a sibling `.edges` file for csv/parquet); the files written."""
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

        return write_html(tl, path, stats, counterfactuals)
    raise ForensicsError(ExitCode.USAGE, f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
