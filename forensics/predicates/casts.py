"""Spark's CAST from string (non-ANSI mode) and the comparison coercions we need (conflict-rules §5.6 c).

delta-spark evaluates a partition predicate with every partition column replaced by
`CAST(partitionValues[<physical name>] AS <type>)`. With spark.sql.ansi.enabled=false (the
default up to Spark 3.5; Delta's conflict checker builds the cast without ANSI) an invalid cast
yields NULL, and NULL makes the predicate not match. Values here are plain Python values:
int, float, Decimal, bool, str, date, datetime (naive, UTC) or None for NULL.

Time zone: string -> timestamp uses the session time zone in Spark; the log does not record it,
so we assume UTC **[inferred]**.
"""

from __future__ import annotations

import math
import re
import struct
from datetime import date, datetime, timedelta, timezone
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

_INT_RANGES = {
    "byte": (-(2**7), 2**7 - 1),
    "short": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
}
_TYPE_ALIASES = {
    "integer": "int", "int": "int", "bigint": "long", "long": "long", "smallint": "short",
    "short": "short", "tinyint": "byte", "byte": "byte", "double": "double", "float": "float",
    "real": "float", "boolean": "boolean", "bool": "boolean", "string": "string", "varchar": "string",
    "char": "string", "text": "string", "date": "date", "timestamp": "timestamp",
    "timestamp_ltz": "timestamp", "timestamp_ntz": "timestamp_ntz", "timestampntz": "timestamp_ntz",
    "binary": "binary", "decimal": "decimal(10,0)", "numeric": "decimal(10,0)", "dec": "decimal(10,0)",
}

# Token-sized patterns (one value, never a whole predicate).
_INT_RE = re.compile(r"[+-]?\d+(\.\d*)?")
_DOUBLE_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[dDfF]?")
_DATE_RE = re.compile(r"([+-]?\d{4,})(?:-(\d{1,2})(?:-(\d{1,2}))?)?")
_TIME_RE = re.compile(r"(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{0,9}))?)?")
_ZONE_RE = re.compile(r"(?:Z|UTC|GMT|[+-]\d{1,2}(?::?\d{2})?)", re.IGNORECASE)
_DECIMAL_TYPE_RE = re.compile(r"decimal\s*\(\s*(\d+)\s*(?:,\s*(-?\d+)\s*)?\)")


def normalize_type(spark_type: str | None) -> str:
    """Spark/Delta type name to our canonical one: int, long, short, byte, double, float,
    boolean, string, date, timestamp, timestamp_ntz, binary, decimal(p,s); else as given."""
    if not spark_type:
        return "string"
    t = spark_type.strip().lower()
    m = _DECIMAL_TYPE_RE.fullmatch(t)
    if m:
        return f"decimal({m.group(1)},{m.group(2) or 0})"
    return _TYPE_ALIASES.get(t, t)


def decimal_params(t: str) -> tuple[int, int] | None:
    m = _DECIMAL_TYPE_RE.fullmatch(t)
    return (int(m.group(1)), int(m.group(2) or 0)) if m else None


def is_null_partition_value(raw: Any) -> bool:
    """null, `__HIVE_DEFAULT_PARTITION__` and "" all mean NULL in partitionValues (Delta protocol)."""
    return raw is None or raw == "" or raw == HIVE_DEFAULT_PARTITION


def _trim(s: str) -> str:
    # Spark trims ASCII whitespace and control characters (UTF8String.trimAll) before casting.
    return s.strip(" \t\n\r\f\v\x00\x1c\x1d\x1e\x1f")


def string_to_int(s: str, t: str = "long") -> int | None:
    s = _trim(s)
    if not _INT_RE.fullmatch(s):
        return None
    whole = s.split(".", 1)[0]  # Spark truncates a fractional part when casting to integral
    if whole in ("", "+", "-"):
        return None
    v = int(whole)
    lo, hi = _INT_RANGES.get(t, _INT_RANGES["long"])
    return v if lo <= v <= hi else None


def string_to_double(s: str, t: str = "double") -> float | None:
    s = _trim(s)
    low = s.lower()
    specials = {"nan": math.nan, "infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf,
                "inf": math.inf, "+inf": math.inf, "-inf": -math.inf}
    if low in specials:
        v = specials[low]
    elif _DOUBLE_RE.fullmatch(s):
        v = float(s.rstrip("dDfF"))
    else:
        return None
    if t == "float" and math.isfinite(v):
        try:
            v = struct.unpack("f", struct.pack("f", v))[0]
        except OverflowError:
            v = math.inf if v > 0 else -math.inf
    return v


def string_to_decimal(s: str, precision: int, scale: int) -> Decimal | None:
    s = _trim(s)
    if not s or not _DOUBLE_RE.fullmatch(s) or s[-1:] in "dDfF":
        return None
    try:
        d = Decimal(s)
    except InvalidOperation:
        return None
    return fit_decimal(d, precision, scale)


def fit_decimal(d: Decimal, precision: int, scale: int) -> Decimal | None:
    """Round half-up to `scale`; NULL when the integral part does not fit (non-ANSI overflow)."""
    if not d.is_finite():
        return None
    try:
        q = d.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    except InvalidOperation:
        return None
    digits = len(q.as_tuple().digits) if q != 0 else 1
    int_digits = max(digits + q.as_tuple().exponent, 0) if q != 0 else 0
    if int_digits > precision - scale:
        return None
    return q


def string_to_boolean(s: str) -> bool | None:
    low = _trim(s).lower()
    if low in ("t", "true", "y", "yes", "1"):
        return True
    if low in ("f", "false", "n", "no", "0"):
        return False
    return None


def _date_part(s: str) -> tuple[date | None, str]:
    """Spark stringToDate: `yyyy`, `yyyy-[m]m`, `yyyy-[m]m-[d]d`, then optional ` …` / `T…`."""
    cut = len(s)
    for sep in (" ", "T"):
        k = s.find(sep)
        if k != -1:
            cut = min(cut, k)
    head, rest = s[:cut], s[cut:]
    m = _DATE_RE.fullmatch(head)
    if not m:
        return None, rest
    try:
        y = int(m.group(1))
        mo = int(m.group(2) or 1)
        d = int(m.group(3) or 1)
        return date(y, mo, d), rest
    except ValueError:  # out of range (month 13, year 0, year > 9999 in Python)
        return None, rest


def string_to_date(s: str) -> date | None:
    d, _ = _date_part(_trim(s))
    return d


def string_to_timestamp(s: str, ntz: bool = False) -> datetime | None:
    s = _trim(s)
    d, rest = _date_part(s)
    if d is None:
        return None
    hh = mm = ss = 0
    micros = 0
    zone = ""
    if rest:
        rest = rest[1:]  # the ' ' or 'T'
        m = _TIME_RE.match(rest)
        if m:
            hh, mm = int(m.group(1)), int(m.group(2))
            ss = int(m.group(3) or 0)
            frac = (m.group(4) or "")[:6]
            micros = int(frac.ljust(6, "0")) if frac else 0
            zone = rest[m.end():].strip()
        elif rest.strip():
            return None
    try:
        dt = datetime(d.year, d.month, d.day, hh, mm, ss, micros)
    except ValueError:
        return None
    if zone:
        if not _ZONE_RE.fullmatch(zone):
            return None
        if ntz:
            return dt  # Spark ignores the zone when casting to TIMESTAMP_NTZ
        offset = _zone_offset(zone)
        if offset is None:
            return None
        dt = (dt.replace(tzinfo=timezone(offset)).astimezone(timezone.utc)).replace(tzinfo=None)
    return dt


def _zone_offset(zone: str) -> timedelta | None:
    z = zone.upper()
    if z in ("Z", "UTC", "GMT"):
        return timedelta(0)
    sign = -1 if z[0] == "-" else 1
    digits = z[1:].replace(":", "")
    try:
        if len(digits) <= 2:
            h, m = int(digits), 0
        else:
            h, m = int(digits[:-2]), int(digits[-2:])
        if h > 18 or m > 59:
            return None
        return sign * timedelta(hours=h, minutes=m)
    except ValueError:
        return None


@lru_cache(maxsize=65536)
def cast_string(value: str, spark_type: str) -> Any:
    """CAST(value AS spark_type) for a string value, Spark non-ANSI semantics (NULL on failure)."""
    t = normalize_type(spark_type)
    if t in _INT_RANGES:
        return string_to_int(value, t)
    if t in ("double", "float"):
        return string_to_double(value, t)
    dp = decimal_params(t)
    if dp:
        return string_to_decimal(value, *dp)
    if t == "boolean":
        return string_to_boolean(value)
    if t == "date":
        return string_to_date(value)
    if t == "timestamp":
        return string_to_timestamp(value)
    if t == "timestamp_ntz":
        return string_to_timestamp(value, ntz=True)
    return value  # string, binary and anything we do not model compare as text


def partition_value(raw: Any, spark_type: str) -> Any:
    """CAST(partitionValues[col] AS type) (conflict-rules §5.6 c); None for NULL."""
    if is_null_partition_value(raw):
        return None
    return cast_string(str(raw), spark_type)


def to_text(v: Any) -> str | None:
    """CAST(v AS STRING) for our Python values."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, date):
        return v.isoformat()
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return repr(v)
    return str(v)


def cast_value(v: Any, spark_type: str) -> Any:
    """CAST between our Python values (non-ANSI; NULL when Spark would give NULL)."""
    if v is None:
        return None
    t = normalize_type(spark_type)
    if isinstance(v, str):
        return cast_string(v, t)
    if t in ("string", "binary"):
        return to_text(v)
    if t in _INT_RANGES:
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, (int, Decimal)):
            n = int(v)
        elif isinstance(v, float):
            if math.isnan(v):
                return 0
            if math.isinf(v):
                return None
            n = int(v)
        else:
            return None
        lo, hi = _INT_RANGES[t]
        return n if lo <= n <= hi else None  # Spark wraps long->int; we give NULL [inferred]
    if t in ("double", "float"):
        if isinstance(v, (bool, int, float, Decimal)):
            return float(v)
        return None
    dp = decimal_params(t)
    if dp:
        if isinstance(v, bool):
            v = int(v)
        if isinstance(v, (int, float, Decimal)):
            try:
                return fit_decimal(Decimal(str(v)) if isinstance(v, float) else Decimal(v), *dp)
            except InvalidOperation:
                return None
        return None
    if t == "boolean":
        if isinstance(v, (int, float, Decimal)):
            return v != 0
        return None
    if t == "date":
        if isinstance(v, datetime):
            return v.date()
        if isinstance(v, date):
            return v
        return None
    if t in ("timestamp", "timestamp_ntz"):
        if isinstance(v, datetime):
            return v
        if isinstance(v, date):
            return datetime(v.year, v.month, v.day)
        return None
    return v


def value_type(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "long"
    if isinstance(v, float):
        return "double"
    if isinstance(v, Decimal):
        return "decimal"
    if isinstance(v, datetime):
        return "timestamp"
    if isinstance(v, date):
        return "date"
    return "string"


def coerce_pair(a: Any, b: Any) -> tuple[Any, Any]:
    """Spark 3+ implicit coercion for a comparison (TypeCoercion.findCommonTypeForBinaryComparison,
    non-ANSI): string vs X casts the string to X; date vs timestamp compares as timestamp;
    numeric kinds widen. Returns values that Python can compare (either may become None)."""
    ta, tb = value_type(a), value_type(b)
    if ta == tb:
        return a, b
    if ta == "string":
        return _string_to(a, tb, b), b
    if tb == "string":
        return a, _string_to(b, ta, a)
    numeric = ("long", "double", "decimal", "boolean")
    if ta in numeric and tb in numeric:
        if "double" in (ta, tb):
            return float(a), float(b)
        if "decimal" in (ta, tb):
            return Decimal(int(a)) if isinstance(a, bool) else a, Decimal(int(b)) if isinstance(b, bool) else b
        return int(a), int(b)
    if {ta, tb} == {"date", "timestamp"}:
        return cast_value(a, "timestamp"), cast_value(b, "timestamp")
    # anything else: compare as text
    return to_text(a), to_text(b)


def _string_to(s: str, target: str, other: Any) -> Any:
    if target == "long":
        return string_to_int(s, "long")
    if target == "double":
        return string_to_double(s)
    if target == "decimal":
        # Spark casts to the decimal type of the other side; we keep full precision [inferred]
        s2 = _trim(s)
        if not _DOUBLE_RE.fullmatch(s2) or s2[-1:] in "dDfF":
            return None
        try:
            return Decimal(s2)
        except InvalidOperation:
            return None
    if target == "boolean":
        return string_to_boolean(s)
    if target == "date":
        return string_to_date(s)
    if target == "timestamp":
        return string_to_timestamp(s)
    return s


def compare(a: Any, b: Any) -> int | None:
    """-1/0/1 after coercion; None when either side is NULL or the values cannot be ordered."""
    if a is None or b is None:
        return None
    a, b = coerce_pair(a, b)
    if a is None or b is None:
        return None
    try:
        if isinstance(a, float) and isinstance(b, float) and (math.isnan(a) or math.isnan(b)):
            # Spark orders NaN above every other double and NaN = NaN
            if math.isnan(a) and math.isnan(b):
                return 0
            return 1 if math.isnan(a) else -1
        if isinstance(a, float) and math.isnan(a):
            return 1
        if isinstance(b, float) and math.isnan(b):
            return -1
        return (a > b) - (a < b)
    except TypeError:
        return None
