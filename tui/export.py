"""ctrl+e: write the current view to a file, never inside the table's directory."""

from __future__ import annotations

import csv
import datetime as _dt
import json
import os
import re
from pathlib import Path
from typing import Any


class ExportRefused(ValueError):
    """The path is not acceptable (inside the table, or a directory)."""


def default_path(view: str, table_location: str, fmt: str = "json") -> Path:
    """`./delta-forensics-<view>-<table name>-<UTC stamp>.<fmt>` in the current directory."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", table_location.rstrip("/").split("/")[-1] or "table")
    if name == "table":  # sample_logs/<name>/table: the parent names it better
        parts = [p for p in table_location.rstrip("/").split("/") if p]
        if len(parts) >= 2:
            name = re.sub(r"[^A-Za-z0-9_.-]+", "_", parts[-2])
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return Path.cwd() / f"delta-forensics-{view}-{name}-{stamp}.{fmt}"


def _local_table_dir(location: str) -> Path | None:
    if location.startswith("file:"):
        location = re.sub(r"^file:(//)?", "", location)
    elif re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", location):
        return None  # remote table: a local file can never be inside it
    return Path(location).resolve()


def check_path(path: Path, table_location: str) -> Path:
    """The resolved target; refuses a path inside the table (we never write under a table)."""
    target = path.expanduser()
    if not target.is_absolute():
        target = Path.cwd() / target
    target = target.resolve()
    table = _local_table_dir(table_location)
    if table is not None and (target == table or table in target.parents):
        raise ExportRefused(f"refusing to write inside the table directory {table}")
    if target.is_dir():
        raise ExportRefused(f"{target} is a directory")
    return target


def write_export(path: Path, payload: dict[str, Any], table_location: str) -> Path:
    """JSON always works; `.csv` writes the payload's `rows` (the version list) as a table."""
    target = check_path(path, table_location)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    if target.suffix.lower() == ".csv":
        rows = payload.get("rows") or payload.get("bars") or payload.get("cells") or []
        keys: list[str] = []
        for r in rows:
            for k in r:
                if k not in keys:
                    keys.append(k)
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
