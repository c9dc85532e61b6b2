"""Rich renderings for the terminal. Every value from a log goes through forensics.safe."""

from __future__ import annotations

import datetime as _dt
import os
from typing import Any, Iterable

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from forensics import safe
from forensics.model import Snapshot

VERDICT_STYLE = {"clean": "green", "reordered": "yellow", "anomaly": "bold red", "skipped": "dim", "abort": "bold red", "commit": "green"}


def console() -> Console:
    return Console(highlight=False, soft_wrap=False, width=None if os.isatty(1) else 200)


def print_renderable(r: RenderableType) -> None:
    console().print(r)


def fmt_time(ms: int | None, utc: bool = False) -> str:
    if ms is None:
        return ""
    try:
        t = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    if not utc:
        t = t.astimezone()
    return t.strftime("%Y-%m-%d %H:%M:%S") + ("Z" if utc else t.strftime("%z"))


def _b(v: Any) -> str:
    return "" if v is None else ("yes" if v else "no")


def history_table(rows: list[dict[str, Any]], title: str = "", utc: bool = False) -> Table:
    t = Table(title=safe.inert(title, 300), title_justify="left", header_style="bold", pad_edge=False, expand=False)
    for col, just in (
        ("version", "right"),
        ("time", "left"),
        ("operation", "left"),
        ("readVersion", "right"),
        ("isolation", "left"),
        ("blind", "left"),
        ("+add", "right"),
        ("-rm", "right"),
        ("partitions", "left"),
        ("engine", "left"),
        ("user", "left"),
    ):
        t.add_column(col, justify=just, no_wrap=col not in ("partitions",), overflow="ellipsis")
    for r in rows:
        parts = r.get("partitionsTouched") or []
        ptxt = ", ".join(",".join(f"{k}={v}" for k, v in p.items()) for p in parts[:3]) + (f" +{len(parts) - 3}" if len(parts) > 3 else "")
        stale = r.get("readVersion") is not None and r["readVersion"] < r["version"] - 1
        t.add_row(
            str(r["version"]),
            fmt_time(r.get("timestamp"), utc),
            safe.text(r.get("operation") or "—", max_len=40),
            Text(str(r["readVersion"]) if r.get("readVersion") is not None else "", style="yellow" if stale else ""),
            safe.text(r.get("isolationLevel") or "", max_len=20),
            _b(r.get("isBlindAppend")),
            str(r.get("numAddFiles", "")),
            str(r.get("numRemoveFiles", "")),
            safe.text(ptxt, max_len=60),
            safe.text(r.get("engineInfo") or "", max_len=40),
            safe.text(r.get("userName") or "", max_len=24),
        )
    return t


def snapshot_view(s: Snapshot, location: str, limit: int = 200) -> RenderableType:
    head = Text()
    head.append(f"Snapshot of {safe.inert(location, 300)} at version {s.version}\n", style="bold")
    base = f"checkpoint {s.base_checkpoint}" if s.base_checkpoint is not None else "commit 0"
    head.append(f"replayed from {base}; {len(s.files)} active file(s)\n")
    if s.protocol:
        p = s.protocol
        feats = sorted(set((p.reader_features or ()) + (p.writer_features or ())))
        head.append(f"protocol: reader {p.min_reader_version}, writer {p.min_writer_version}")
        head.append(f"; features: {safe.inert(', '.join(feats), 400)}\n" if feats else "\n")
    if s.metadata:
        m = s.metadata
        head.append(f"table id: {safe.inert(m.id)}; partition columns: {safe.inert(', '.join(m.partition_columns) or '(none)')}\n")
        iso = m.configuration.get("delta.isolationLevel")
        if iso:
            head.append(f"delta.isolationLevel = {safe.inert(iso)}\n")
    if s.app_transactions:
        head.append("app transactions: " + safe.inert(", ".join(f"{k}={v}" for k, v in sorted(s.app_transactions.items())), 400) + "\n")
    t = Table(header_style="bold", pad_edge=False)
    t.add_column("path", overflow="fold")
    t.add_column("partition", overflow="fold")
    t.add_column("size", justify="right")
    t.add_column("DV", justify="left")
    t.add_column("added in", justify="right")
    for f in s.files[:limit]:
        t.add_row(
            safe.text(f.path, max_len=300),
            safe.text(", ".join(f"{k}={v}" for k, v in f.partition_values.items()), max_len=200),
            "" if f.size is None else f"{f.size:,}",
            safe.text(f.deletion_vector.unique_id if f.deletion_vector else "", max_len=40),
            f"≤{f.version}" if s.base_checkpoint is not None and f.version == s.base_checkpoint else str(f.version),
        )
    parts: list[RenderableType] = [head, t]
    if len(s.files) > limit:
        parts.append(Text(f"… {len(s.files) - limit} more file(s); use --json for all", style="dim"))
    return Group(*parts)


def findings_block(findings: Iterable[Any]) -> Text:
    out = Text()
    for f in findings:
        style = {"error": "red", "warning": "yellow"}.get(f.severity, "dim")
        out.append(safe.inert(f.one_line(), 1000) + "\n", style=style)
    return out
