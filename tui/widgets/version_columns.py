"""How one version looks in the list: its columns, which of them fit, and each cell's text and style.

Plain functions over `Rows` (no Textual), so the list's render path and its tests share them.
Every value from the log is made inert.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size

from forensics import safe
from forensics.times import fmt_time, local_offset
from tui.data import Rows

BADGE = {"clean": ("✓ clean", "green"), "reordered": ("↺ reordered", "yellow"), "anomaly": ("✗ anomaly", "bold red"), "skipped": ("· skipped", "dim")}
ISO_SHORT = {"Serializable": "Serializable", "WriteSerializable": "WriteSerial.", "SnapshotIsolation": "Snapshot"}


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    width: int
    right: bool = False
    priority: int = 0  # lower = dropped last when the list is narrow


COLUMNS = (
    Column("version", "version", 8, True, 0),
    Column("time", "time", 20, False, 1),
    Column("operation", "operation", 18, False, 0),
    Column("read", "readVer", 8, True, 0),
    Column("isolation", "isolation", 12, False, 3),
    Column("blind", "blind", 5, False, 4),
    Column("adds", "+add", 6, True, 2),
    Column("removes", "-rm", 6, True, 2),
    Column("verdict", "verdict", 16, False, 0),
)


def columns_for(width: int) -> list[Column]:
    """The columns that fit, dropping the highest priority numbers first."""
    cols = list(COLUMNS)
    while sum(c.width + 1 for c in cols) > width and any(c.priority for c in cols):
        worst = max(c.priority for c in cols)
        cols = [c for c in cols if c.priority != worst]
    return cols


def header_text(width: int, utc: bool) -> str:
    tz = "UTC" if utc else f"local {local_offset()}"
    return " ".join(fit(f"time ({tz})" if c.key == "time" else c.title, c.width, c.right) for c in columns_for(width))


def cells(rows: Rows, i: int, width: int, *, utc: bool, replay_pending: bool) -> list[tuple[str, str]]:
    """(text, rich style) per shown column for column index `i`."""
    stale = rows.window_size(i)
    rv = rows.read_version[i]
    blind = rows.blind[i]
    iso = rows.isolation[i]
    vi = rows.verdict_of(i)
    if vi is not None:
        label, style = BADGE.get(vi.verdict, (safe.inert(vi.verdict, 12), ""))
        badge = label + (f" w{stale}" if stale else "")
    elif stale:
        badge, style = (f"w{stale}" + (" …" if replay_pending else "")), "yellow"
    else:
        badge, style = "", ""
    if rows.provisional:  # listed, not parsed yet: the commit file's time, nothing it did
        wait = ("…", "dim")
        out = {"version": (str(rows.version[i]), "bold"), "time": (fmt_time(rows.timestamp[i], utc, offset=False) or "…", "dim"),
               "operation": wait, "read": ("", ""), "isolation": ("", ""), "blind": ("", ""), "adds": wait,
               "removes": wait, "verdict": ("", "")}
        return [out[c.key] for c in columns_for(width)]
    out = {
        "version": (str(rows.version[i]), "bold"),
        "time": (fmt_time(rows.timestamp[i], utc, offset=False), ""),  # the offset is in the column title
        "operation": (safe.inert(rows.operation[i] or "—", 60), ""),
        "read": ("" if rv is None else str(rv), "yellow" if stale else ""),
        "isolation": (safe.inert(ISO_SHORT.get(iso or "", iso or ""), 30), "dim" if not iso else ""),
        "blind": ("" if blind is None else ("yes" if blind else "no"), ""),
        "adds": (str(rows.adds[i]), "green" if rows.adds[i] else "dim"),
        "removes": (str(rows.removes[i]), "red" if rows.removes[i] else "dim"),
        "verdict": (badge, style),
    }
    return [out[c.key] for c in columns_for(width)]


def fit(text: str, width: int, right: bool = False) -> str:
    """`text` cut with an ellipsis or padded to exactly `width` cells."""
    if cell_len(text) > width:
        return set_cell_size(text, width - 1) + "…" if width > 1 else set_cell_size(text, width)
    pad = width - cell_len(text)
    return (" " * pad + text) if right else (text + " " * pad)
