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


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_MIN_MS, _MAX_MS = -62_135_596_800_000, 253_402_300_799_999  # 0001-01-01 .. 9999-12-31T23:59:59.999


def iso_utc(ms: int | None) -> str | None:
    """ISO 8601 in UTC with milliseconds (`2024-06-20T08:02:14.200Z`), for JSON and exports."""
    if ms is None:
        return None
    try:
        t = _EPOCH + _dt.timedelta(milliseconds=int(ms))  # exact: no float seconds
    except (OverflowError, OSError, ValueError, TypeError):
        return None
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def iso_key(key: str) -> str:
    """The JSON key of a timestamp's ISO 8601 twin: `timestamp` -> `timestampIso`, `startMs` -> `startIso`."""
    return (key[:-2] if key.endswith("Ms") else key) + "Iso"


def with_iso(d: dict, *keys: str) -> dict:
    """`d` with `<key>Iso` (iso_utc) right after each epoch-ms `key`: the JSON contract keeps both."""
    out: dict = {}
    for k, v in d.items():
        out[k] = v
        if k in keys:
            out[iso_key(k)] = iso_utc(v)
    return out


def iso_utc_expr(ms):  # polars Expr -> Expr
    """iso_utc as a polars expression (column-wise JSON writers); same text, null stays null."""
    import polars as pl

    text = pl.from_epoch(ms, time_unit="ms").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
    return pl.when(ms.is_between(_MIN_MS, _MAX_MS)).then(text)  # years 1..9999, as datetime allows


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
