"""The value domain of predicate evaluation: outcome sets under three-valued logic.

A predicate's result for one file is the *set* of outcomes it could have ({TRUE, FALSE, NULL}):
one outcome when every referenced value is known exactly (partition values, literals), several
when a column is known only by its [min, max] statistics (`Range`) or not at all (`UNKNOWN`).
Comparisons follow Spark's non-ANSI coercions (casts.compare); AND/OR/NOT follow SQL
three-valued logic applied to every combination (conflict-rules §5.6 c).
"""

from __future__ import annotations

import math
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Callable

from sqlglot import exp

import forensics.predicates.casts as casts

T, F, N = True, False, None
ALL = frozenset({T, F, N})
_ONLY = {T: frozenset({T}), F: frozenset({F}), N: frozenset({N})}



class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


class Exact:
    __slots__ = ("v",)

    def __init__(self, v: Any):
        self.v = v


class Range:
    """A column known only by its statistics: lo <= value <= hi (None = unbounded)."""

    __slots__ = ("lo", "hi", "can_null", "can_value")

    def __init__(self, lo: Any, hi: Any, can_null: bool, can_value: bool):
        self.lo, self.hi, self.can_null, self.can_value = lo, hi, can_null, can_value


Env = tuple  # (partition_values: dict, stats: dict | None)
ValFn = Callable[[Env], Any]
PredFn = Callable[[Env], frozenset]


# ---- three-valued logic over outcome sets ---------------------------------------------------------


def _and3(a, b):
    if a is F or b is F:
        return F
    if a is N or b is N:
        return N
    return T


def _or3(a, b):
    if a is T or b is T:
        return T
    if a is N or b is N:
        return N
    return F


def _and_sets(x: frozenset, y: frozenset) -> frozenset:
    return frozenset(_and3(a, b) for a in x for b in y)


def _or_sets(x: frozenset, y: frozenset) -> frozenset:
    return frozenset(_or3(a, b) for a in x for b in y)


def _not_set(x: frozenset) -> frozenset:
    return frozenset(N if a is N else (not a) for a in x)


def _truth_of(val: Any) -> frozenset:
    """A scalar used as a predicate (boolean column, literal TRUE, function result)."""
    if isinstance(val, Exact):
        v = val.v
        if v is None:
            return _ONLY[N]
        if isinstance(v, bool):
            return _ONLY[v]
        b = casts.cast_value(v, "boolean")
        return _ONLY[N] if b is None else _ONLY[bool(b)]
    if isinstance(val, Range):
        out = set()
        if val.can_null:
            out.add(N)
        if val.can_value:
            out.update((T, F))
        return frozenset(out) or ALL
    return ALL


# ---- comparisons -------------------------------------------------------------------------------

_CMP_OPS: dict[type, Callable[[int], bool]] = {
    exp.EQ: lambda c: c == 0,
    exp.NEQ: lambda c: c != 0,
    exp.GT: lambda c: c > 0,
    exp.GTE: lambda c: c >= 0,
    exp.LT: lambda c: c < 0,
    exp.LTE: lambda c: c <= 0,
}
_FLIP = {exp.EQ: exp.EQ, exp.NEQ: exp.NEQ, exp.GT: exp.LT, exp.GTE: exp.LTE, exp.LT: exp.GT, exp.LTE: exp.GTE}


def _cmp_bound(bound: Any, v: Any, unbounded: int) -> int | None:
    if bound is None:
        return unbounded
    return casts.compare(bound, v)


def _range_vs_value(op: type, r: Range, v: Any) -> frozenset:
    """Outcomes of `x op v` for x in [r.lo, r.hi] (x may also be NULL)."""
    out: set = set()
    if r.can_null:
        out.add(N)
    if not r.can_value:
        return frozenset(out)
    lo_c = _cmp_bound(r.lo, v, -1)
    hi_c = _cmp_bound(r.hi, v, 1)
    if lo_c is None or hi_c is None:
        out.update((T, F))
        return frozenset(out)
    if op is exp.EQ or op is exp.NEQ:
        can_eq = lo_c <= 0 <= hi_c
        can_ne = not (lo_c == 0 and hi_c == 0)
        t, f = (can_eq, can_ne) if op is exp.EQ else (can_ne, can_eq)
    elif op is exp.LT:
        t, f = lo_c < 0, hi_c >= 0
    elif op is exp.LTE:
        t, f = lo_c <= 0, hi_c > 0
    elif op is exp.GT:
        t, f = hi_c > 0, lo_c <= 0
    else:  # GTE
        t, f = hi_c >= 0, lo_c < 0
    if t:
        out.add(T)
    if f:
        out.add(F)
    return frozenset(out)


def compare_vals(op: type, a: Any, b: Any) -> frozenset:
    if isinstance(a, Exact) and isinstance(b, Exact):
        c = casts.compare(a.v, b.v)
        return _ONLY[N] if c is None else _ONLY[_CMP_OPS[op](c)]
    if isinstance(a, Range) and isinstance(b, Exact):
        if b.v is None:
            return _ONLY[N]
        return _range_vs_value(op, a, b.v)
    if isinstance(a, Exact) and isinstance(b, Range):
        if a.v is None:
            return _ONLY[N]
        return _range_vs_value(_FLIP[op], b, a.v)
    return ALL


def null_safe_eq(a: Any, b: Any) -> frozenset:
    if isinstance(a, Exact) and isinstance(b, Exact):
        if a.v is None or b.v is None:
            return _ONLY[a.v is None and b.v is None]
        c = casts.compare(a.v, b.v)
        return _ONLY[F] if c is None else _ONLY[c == 0]
    if isinstance(b, Range) and isinstance(a, Exact):
        a, b = b, a
    if isinstance(a, Range) and isinstance(b, Exact):
        if b.v is None:
            out = set()
            if a.can_null:
                out.add(T)
            if a.can_value:
                out.add(F)
            return frozenset(out)
        out = {x for x in _range_vs_value(exp.EQ, a, b.v) if x is not N}
        if a.can_null:
            out.add(F)
        return frozenset(out)
    return frozenset({T, F})


def is_null(val: Any) -> frozenset:
    if isinstance(val, Exact):
        return _ONLY[val.v is None]
    if isinstance(val, Range):
        out = set()
        if val.can_null:
            out.add(T)
        if val.can_value:
            out.add(F)
        return frozenset(out)
    return frozenset({T, F})


# ---- scalar helpers -------------------------------------------------------------------------------


def literal_value(node: exp.Literal) -> Any:
    s = node.this
    if node.is_string:
        return s
    text = str(s)
    try:
        if text.isdigit():
            return int(text)
        if "e" in text.lower():
            return float(text)
        return Decimal(text)
    except (ValueError, InvalidOperation):
        return None


def _num(v: Any) -> Any:
    if isinstance(v, str):
        return casts.string_to_double(v)
    if isinstance(v, bool):
        return int(v)
    return v if isinstance(v, (int, float, Decimal)) else None


def _arith(op: type, a: Any, b: Any) -> Any:
    """Spark non-ANSI arithmetic on exact values: NULL in, NULL out; x/0 and x%0 are NULL."""
    if isinstance(a, (date, datetime)) or isinstance(b, (date, datetime)):
        raise _Unsupported("date arithmetic")
    a, b = _num(a), _num(b)
    if a is None or b is None:
        return None
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
    elif isinstance(a, Decimal) or isinstance(b, Decimal):
        a, b = Decimal(a), Decimal(b)
    if op is exp.Add:
        return a + b
    if op is exp.Sub:
        return a - b
    if op is exp.Mul:
        return a * b
    if op is exp.Div:
        if b == 0:
            return None
        if isinstance(a, int) and isinstance(b, int):
            return a / b  # Spark `/` on integers yields DOUBLE
        return a / b
    if op is exp.Mod:
        if b == 0:
            return None
        if isinstance(a, float):
            return math.fmod(a, b)
        r = abs(a) % abs(b)  # Java remainder: sign of the dividend
        return r if a >= 0 else -r
    if op is exp.IntDiv:
        if b == 0:
            return None
        q = abs(a) // abs(b)
        return int(q if (a >= 0) == (b >= 0) else -q)
    raise _Unsupported(op.__name__)


class _Unsupported(Exception):
    pass
