"""Times for people and for machines: the one place a commit's epoch milliseconds become text.

Human output shows local time with its offset (or UTC with `Z` when asked, `--utc` or
DELTA_FORENSICS_UTC=1); JSON keeps epoch milliseconds and adds ISO 8601 in UTC.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import time as _time


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


def as_datetime(ms: int | None) -> _dt.datetime | None:
    """Epoch milliseconds as an aware UTC `datetime` (what the Python API returns; JSON keeps the ms)."""
    if ms is None:
        return None
    try:
        return _EPOCH + _dt.timedelta(milliseconds=int(ms))
    except (OverflowError, ValueError, TypeError):
        return None


def epoch_ms(value: "_dt.datetime | _dt.date | str | int | float") -> int:
    """Epoch milliseconds from what a caller has: an aware or naive (local) `datetime`, a `date`
    (its local midnight), an ISO 8601 string or epoch digits (`parse_time`), or a number of epoch ms.
    ValueError when it is none of those."""
    if isinstance(value, bool):
        raise ValueError(f"not a time: {value!r}")
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, _dt.datetime):
        t = value if value.tzinfo is not None else value.astimezone()
        return (t - _EPOCH) // _dt.timedelta(milliseconds=1)
    if isinstance(value, _dt.date):
        return epoch_ms(_dt.datetime(value.year, value.month, value.day))
    if isinstance(value, str):
        return parse_time(value)
    raise ValueError(f"not a time: {type(value).__name__}")


# ---- times a person types for --since / --until --------------------------------------------

_UNIT_MS = {"ms": 1, "s": 1000, "sec": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "hr": 3_600_000,
            "d": 86_400_000, "day": 86_400_000, "days": 86_400_000, "w": 604_800_000, "wk": 604_800_000}
_DURATION_PART = re.compile(r"(\d+)\s*(ms|sec|min|hr|days|day|wk|s|m|h|d|w)", re.I)
_DURATION = re.compile(r"(?:\d+\s*(?:ms|sec|min|hr|days|day|wk|s|m|h|d|w)\s*)+(?:ago)?", re.I)
_TIME_OF_DAY = re.compile(r"\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d{1,6})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?", re.I)


def parse_duration(text: str) -> int | None:
    """Milliseconds of a relative time (`2h`, `30m`, `1d`, `1w`, `90s`, `1h30m`, `2h ago`); None when
    `text` is not one."""
    s = text.strip()
    if not _DURATION.fullmatch(s):
        return None
    return sum(int(n) * _UNIT_MS[u.lower()] for n, u in _DURATION_PART.findall(s))


def _now_ms() -> int:
    return _time.time_ns() // 1_000_000


def _midnight(now_ms: int, utc: bool, days_back: int = 0) -> int:
    """Epoch ms of the start of the day `days_back` before the day `now_ms` falls on (local, or UTC)."""
    now = _EPOCH + _dt.timedelta(milliseconds=now_ms)
    day = (now if utc else now.astimezone()).date() - _dt.timedelta(days=days_back)
    return _ms(_dt.datetime.combine(day, _dt.time()), utc)


def _ms(t: _dt.datetime, utc: bool) -> int:
    """Epoch ms of `t`; a time without an offset is UTC under `utc`, else the machine's local time."""
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc) if utc else t.astimezone()
    return (t - _EPOCH) // _dt.timedelta(milliseconds=1)


def parse_moment(text: str, *, utc: bool = False, now_ms: int | None = None) -> int:
    """Epoch milliseconds of a `--since` / `--until` time, as a person types it:

    - ISO 8601, date or date and time (`2024-06-20`, `2024-06-20T09:00`, `2024-06-20 09:00:00+02:00`, `...Z`),
      read by python-dateutil's ISO 8601 parser;
    - a time of day, today (`09:00`, `09:00:30`, `09:00Z`);
    - a relative time before now (`2h`, `30m`, `1d`, `1w`, `1h30m`, `2h ago`); `now`, `today` (its
      start), `yesterday` (its start);
    - epoch milliseconds or seconds (digits, as `history --json` prints them).

    A time without an offset is local time, or UTC when `utc` (`--utc`). ValueError when unreadable.
    """
    s = " ".join(str(text).split())
    if not s:
        raise ValueError("an empty time")
    if s.isdigit():
        return parse_time(s)
    now = _now_ms() if now_ms is None else now_ms
    word = s.lower()
    if word == "now":
        return now
    if word in ("today", "yesterday"):
        return _midnight(now, utc, 1 if word == "yesterday" else 0)
    rel = parse_duration(s)
    if rel is not None:
        return now - rel
    from dateutil.parser import isoparse, isoparser

    try:
        if _TIME_OF_DAY.fullmatch(s):
            tod = isoparser().parse_isotime(s.replace(",", "."))
            start = _EPOCH + _dt.timedelta(milliseconds=now)
            if tod.tzinfo is not None:  # a time of day with an offset: today where that offset is
                day = start.astimezone(tod.tzinfo).date()
            else:
                day = (start if utc else start.astimezone()).date()
            return _ms(_dt.datetime.combine(day, tod.replace(tzinfo=None), tzinfo=tod.tzinfo), utc)
        return _ms(isoparse(s[:-1] + "+00:00" if s[-1:] in "zZ" and len(s) > 10 else s), utc)
    except (ValueError, OverflowError) as e:
        raise ValueError("not a time (use ISO 8601 like 2024-06-20T09:00, a time of day like 09:00, a relative time "
                         "like 2h, 30m, 1d, or yesterday; the value is not shown)") from e
