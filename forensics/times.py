"""Times for people and for machines: the one place a commit's epoch milliseconds become text.

Human output shows local time with its offset (or UTC with `Z` when asked, `--utc` or
DELTA_FORENSICS_UTC=1); JSON keeps epoch milliseconds and adds ISO 8601 in UTC.
"""

from __future__ import annotations

import datetime as _dt
import os


def utc_default() -> bool:
    """Whether the environment asks for UTC (DELTA_FORENSICS_UTC=1/true/yes)."""
    return os.environ.get("DELTA_FORENSICS_UTC", "").strip().lower() in ("1", "true", "yes")


def fmt_time(ms: int | None, utc: bool = False, *, offset: bool = True) -> str:
    """`2024-06-20 10:02:14+0200` (local, with its offset unless `offset=False`) or `... Z` (UTC)."""
    if ms is None:
        return ""
    try:
        t = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    if utc:
        return t.strftime("%Y-%m-%d %H:%M:%S") + "Z"
    t = t.astimezone()
    return t.strftime("%Y-%m-%d %H:%M:%S") + (t.strftime("%z") if offset else "")


def iso_utc(ms: int | None) -> str | None:
    """ISO 8601 in UTC with milliseconds (`2024-06-20T08:02:14.200Z`), for JSON and exports."""
    if ms is None:
        return None
    try:
        t = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def local_offset() -> str:
    """This machine's current UTC offset, `+0200`."""
    return _dt.datetime.now().astimezone().strftime("%z")


def fmt_duration(ms: int | None) -> str:
    """`850 ms`, `2.4 s`, `3 min 5 s`, `2 h 10 min`, `3 d 4 h`: how long, for people."""
    if ms is None:
        return ""
    neg, ms = ms < 0, abs(int(ms))
    if ms < 1000:
        s = f"{ms} ms"
    elif ms < 60_000:
        s = f"{ms / 1000:.1f} s"
    elif ms < 3_600_000:
        s = f"{ms // 60_000} min {ms % 60_000 // 1000} s"
    elif ms < 86_400_000:
        s = f"{ms // 3_600_000} h {ms % 3_600_000 // 60_000} min"
    else:
        s = f"{ms // 86_400_000} d {ms % 86_400_000 // 3_600_000} h"
    return ("-" if neg else "") + s


def parse_time(text: str) -> int:
    """Epoch milliseconds from what a person types: `2024-06-20T10:02:14`, `2024-06-20 10:02:14+02:00`,
    `...Z`, or epoch ms/s digits. A time without an offset is local time. ValueError when unreadable."""
    s = text.strip()
    if s.isdigit():
        n = int(s)
        return n if n >= 10**11 else n * 1000  # seconds or milliseconds since the epoch
    t = _dt.datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith(("Z", "z")) else s)
    if t.tzinfo is None:
        t = t.astimezone()  # local time, as the user's clock showed it
    return (t - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)) // _dt.timedelta(milliseconds=1)
