"""Evaluate a parsed predicate against one file's partition values (and file statistics).

conflict-rules §5.6 c (delta-spark, all versions with partition-level conflict detection): every
partition column becomes CAST(partitionValues[<physical name>] AS <type>), SQL three-valued
logic, NULL => no match. conflict-rules §5.6 d (delta-spark >= 3.2, widening on by default):
non-deterministic sub-predicates are treated as TRUE under AND/OR/NOT. conflict-rules §9 (delta-rs): the
read predicate is checked against partition values AND min/max/nullCount statistics.

One evaluator does all three: it computes the *set of outcomes the predicate could have*
({TRUE, FALSE, NULL}) for the file. An exactly known partition value gives a single outcome; a
column known only by its [min, max] range, an unsupported function or a non-deterministic call
gives several. "May match" = TRUE is among the outcomes. For the final yes/no this equals
delta-spark's widening (a AND nd => a, a OR nd => TRUE, NOT nd => TRUE) and is conservative for
anything we cannot evaluate.
"""

from __future__ import annotations

import json
import math
import weakref
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, Callable

from sqlglot import exp

import forensics.predicates.casts as casts
from forensics.predicates.parse import is_deterministic_node, parse_predicate
from forensics.predicates.parsed import TRUNCATION_MARK, ParsedPredicate
from forensics.log.schema import TableSchema

from forensics.predicates.outcomes import (
    _CMP_OPS,
    ALL,
    _ONLY,
    UNKNOWN,
    Exact,
    F,
    N,
    Range,
    T,
    _and_sets,
    _arith,
    _not_set,
    _num,
    _or_sets,
    _truth_of,
    _Unsupported,
    compare_vals,
    is_null,
    literal_value,
    null_safe_eq,
    PredFn,
    ValFn,
)

# Data-skipping stats: delta-spark truncates string min/max to 32 characters by default and
# timestamps to milliseconds (conflict-rules §9 evaluation of delta-rs on the same stats).
STRING_STATS_PREFIX = 32


def _like_matcher(pattern: str, escape: str = "\\", case_insensitive: bool = False) -> Callable[[str], bool]:
    """Spark LIKE: `_` one character, `%` any run, `escape` quotes the next character.
    Compiled to a small matcher without regular expressions (patterns come from the log)."""
    parts: list[tuple[str, str]] = []  # ("lit", text) | ("one", "") | ("any", "")
    i = 0
    buf = []
    while i < len(pattern):
        ch = pattern[i]
        if ch == escape and i + 1 < len(pattern):
            buf.append(pattern[i + 1])
            i += 2
            continue
        if ch in "_%":
            if buf:
                parts.append(("lit", "".join(buf)))
                buf = []
            parts.append(("one" if ch == "_" else "any", ""))
        else:
            buf.append(ch)
        i += 1
    if buf:
        parts.append(("lit", "".join(buf)))
    if case_insensitive:
        parts = [(k, t.lower()) for k, t in parts]

    def match(s: str) -> bool:
        if case_insensitive:
            s = s.lower()
        # iterative backtracking over `%` (classic wildcard matching, linear memory)
        states = {0}
        for k, t in parts:
            nxt = set()
            for pos in states:
                if k == "lit":
                    if s.startswith(t, pos):
                        nxt.add(pos + len(t))
                elif k == "one":
                    if pos < len(s):
                        nxt.add(pos + 1)
                else:
                    nxt.update(range(min(states), len(s) + 1))
                    break
            states = nxt
            if not states:
                return False
        return len(s) in states

    return match


# ---- compilation ------------------------------------------------------------------------------------


class _Compiler:
    def __init__(self, schema: TableSchema, use_stats: bool):
        self.schema = schema
        self.use_stats = use_stats
        self.partition = {p.lower() for p in schema.partition_columns}

    # predicates -----------------------------------------------------------------------
    def pred(self, node: exp.Expression) -> PredFn:
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, (exp.And, exp.Or)):
            kind = type(node)
            parts: list[exp.Expression] = []
            stack = [node]
            while stack:
                n = stack.pop()
                while isinstance(n, exp.Paren):
                    n = n.this
                if type(n) is kind:
                    stack.append(n.expression)
                    stack.append(n.this)
                else:
                    parts.append(n)
            fns = [self.pred(p) for p in parts]
            combine = _and_sets if kind is exp.And else _or_sets

            def chain(env, fns=fns, combine=combine):
                acc = fns[0](env)
                for f in fns[1:]:
                    acc = combine(acc, f(env))
                return acc

            return chain
        if not is_deterministic_node(node):
            return lambda env: ALL  # conflict-rules §5.6 d: widened
        if isinstance(node, exp.Not):
            inner = self.pred(node.this)
            return lambda env: _not_set(inner(env))
        if isinstance(node, exp.Boolean):
            r = _ONLY[bool(node.this)]
            return lambda env: r
        if isinstance(node, exp.Null):
            return lambda env: _ONLY[N]
        op = type(node)
        if op in _CMP_OPS:
            a, b = self.val(node.this), self.val(node.expression)
            return lambda env: compare_vals(op, a(env), b(env))
        if isinstance(node, exp.NullSafeEQ):
            a, b = self.val(node.this), self.val(node.expression)
            return lambda env: null_safe_eq(a(env), b(env))
        if isinstance(node, exp.NullSafeNEQ):
            a, b = self.val(node.this), self.val(node.expression)
            return lambda env: _not_set(null_safe_eq(a(env), b(env)))
        if isinstance(node, exp.Is):
            a = self.val(node.this)
            if isinstance(node.expression, exp.Null):
                return lambda env: is_null(a(env))
            b = self.val(node.expression)
            return lambda env: null_safe_eq(a(env), b(env))
        if isinstance(node, exp.In):
            if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
                return lambda env: ALL
            a = self.val(node.this)
            items = [self.val(e) for e in node.expressions]

            def in_list(env, a=a, items=items):
                x = a(env)
                acc = _ONLY[F]
                for it in items:
                    acc = _or_sets(acc, compare_vals(exp.EQ, x, it(env)))
                    if acc == _ONLY[T]:
                        break
                return acc

            return in_list
        if isinstance(node, exp.Between):
            a, lo, hi = self.val(node.this), self.val(node.args["low"]), self.val(node.args["high"])
            return lambda env: _and_sets(
                compare_vals(exp.GTE, a(env), lo(env)), compare_vals(exp.LTE, a(env), hi(env))
            )
        if isinstance(node, (exp.Like, exp.ILike)) or (isinstance(node, exp.Escape) and isinstance(node.this, (exp.Like, exp.ILike))):
            return self._like(node)
        if isinstance(node, (exp.StartsWith, exp.EndsWith, exp.Contains)) or (
            isinstance(node, exp.Anonymous) and str(node.this).lower() in ("startswith", "endswith", "contains")
        ):
            return self._string_test(node)
        if isinstance(node, exp.Anonymous) and str(node.this).lower() in ("isnull", "isnotnull") and len(node.expressions) == 1:
            a = self.val(node.expressions[0])
            if str(node.this).lower() == "isnull":
                return lambda env: is_null(a(env))
            return lambda env: _not_set(is_null(a(env)))
        if isinstance(node, (exp.Subquery, exp.Exists, exp.Query)):
            return lambda env: ALL
        v = self.val(node)
        return lambda env: _truth_of(v(env))

    def _like(self, node: exp.Expression) -> PredFn:
        escape = "\\"
        if isinstance(node, exp.Escape):
            e = node.expression
            if isinstance(e, exp.Literal) and e.is_string and len(e.this) == 1:
                escape = e.this
            node = node.this
        ci = isinstance(node, exp.ILike)
        a = self.val(node.this)
        pat = node.expression
        if isinstance(pat, exp.Literal) and pat.is_string:
            m = _like_matcher(pat.this, escape, ci)

            def like(env, a=a, m=m):
                x = a(env)
                if isinstance(x, Exact):
                    if x.v is None:
                        return _ONLY[N]
                    return _ONLY[m(casts.to_text(x.v))]
                return ALL

            return like
        return lambda env: ALL

    def _string_test(self, node: exp.Expression) -> PredFn:
        if isinstance(node, exp.Anonymous):
            name = str(node.this).lower()
            args = node.expressions
            if len(args) != 2:
                return lambda env: ALL
            a, b = self.val(args[0]), self.val(args[1])
        else:
            name = type(node).__name__.lower()
            a, b = self.val(node.this), self.val(node.expression)
        test = {"startswith": str.startswith, "endswith": str.endswith, "contains": lambda s, t: t in s}[name]

        def run(env):
            x, y = a(env), b(env)
            if isinstance(x, Exact) and isinstance(y, Exact):
                if x.v is None or y.v is None:
                    return _ONLY[N]
                return _ONLY[test(casts.to_text(x.v), casts.to_text(y.v))]
            return ALL

        return run

    # values ----------------------------------------------------------------------------
    def val(self, node: exp.Expression) -> ValFn:
        while isinstance(node, exp.Paren):
            node = node.this
        if not is_deterministic_node(node):
            return lambda env: UNKNOWN
        if isinstance(node, exp.Literal):
            r = Exact(literal_value(node))
            return lambda env: r
        if isinstance(node, exp.Null):
            r = Exact(None)
            return lambda env: r
        if isinstance(node, exp.Boolean):
            r = Exact(bool(node.this))
            return lambda env: r
        if isinstance(node, exp.Neg):
            inner = self.val(node.this)

            def neg(env):
                x = inner(env)
                if isinstance(x, Exact):
                    n = _num(x.v)
                    return Exact(None if n is None else -n)
                return UNKNOWN

            return neg
        if isinstance(node, exp.Column):
            return self._column(node)
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return self._cast(node)
        if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv)):
            op = type(node)
            a, b = self.val(node.this), self.val(node.expression)

            def arith(env):
                x, y = a(env), b(env)
                if isinstance(x, Exact) and isinstance(y, Exact):
                    try:
                        return Exact(_arith(op, x.v, y.v))
                    except (_Unsupported, ArithmeticError, TypeError, ValueError, InvalidOperation):
                        return UNKNOWN
                return UNKNOWN

            return arith
        if isinstance(node, (exp.Lower, exp.Upper)):
            inner = self.val(node.this)
            f = str.lower if isinstance(node, exp.Lower) else str.upper
            return self._map_exact(inner, lambda v: f(casts.to_text(v)))
        if isinstance(node, exp.Length):
            inner = self.val(node.this)
            return self._map_exact(inner, lambda v: len(casts.to_text(v)))
        if isinstance(node, exp.Abs):
            inner = self.val(node.this)
            return self._map_exact(inner, lambda v: abs(_num(v)) if _num(v) is not None else None)
        if isinstance(node, exp.Coalesce):
            fns = [self.val(node.this)] + [self.val(e) for e in node.expressions]

            def coalesce(env):
                for f in fns:
                    x = f(env)
                    if not isinstance(x, Exact):
                        return UNKNOWN
                    if x.v is not None:
                        return x
                return Exact(None)

            return coalesce
        if isinstance(node, exp.Predicate) or isinstance(node, (exp.Not, exp.Connector)) or (
            isinstance(node, exp.Anonymous) and str(node.this).lower() in ("isnull", "isnotnull", "startswith", "endswith", "contains")
        ):
            p = self.pred(node)

            def as_value(env):
                s = p(env)
                return Exact(next(iter(s))) if len(s) == 1 else UNKNOWN

            return as_value
        return lambda env: UNKNOWN

    @staticmethod
    def _map_exact(inner: ValFn, f: Callable[[Any], Any]) -> ValFn:
        def run(env):
            x = inner(env)
            if isinstance(x, Exact):
                if x.v is None:
                    return x
                try:
                    return Exact(f(x.v))
                except (TypeError, ValueError, ArithmeticError):
                    return UNKNOWN
            return UNKNOWN

        return run

    def _cast(self, node: exp.Expression) -> ValFn:
        inner = self.val(node.this)
        target = _sqlglot_type(node.args.get("to"))
        if target is None:
            return lambda env: UNKNOWN
        widening = target in ("long", "double", "timestamp") or target.startswith("decimal")

        def cast(env):
            x = inner(env)
            if isinstance(x, Exact):
                try:
                    return Exact(casts.cast_value(x.v, target))
                except (TypeError, ValueError, ArithmeticError):
                    return UNKNOWN
            if isinstance(x, Range) and widening:
                # monotone widening casts keep the range (int -> bigint, date -> timestamp)
                lo = casts.cast_value(x.lo, target) if x.lo is not None else None
                hi = casts.cast_value(x.hi, target) if x.hi is not None else None
                if (x.lo is not None and lo is None) or (x.hi is not None and hi is None):
                    return UNKNOWN
                if isinstance(x.lo, str) or isinstance(x.hi, str):
                    return UNKNOWN  # string order is not numeric order
                return Range(lo, hi, x.can_null, x.can_value)
            return UNKNOWN

        return cast

    def _column(self, node: exp.Column) -> ValFn:
        name = node.name
        if name == TRUNCATION_MARK:
            return lambda env: UNKNOWN
        col = self.schema.column(name)
        if col is None:
            return lambda env: UNKNOWN
        phys = col.stored_name
        ctype = col.type
        if name.lower() in self.partition:
            logical = col.name

            def part(env):
                pv = env[0]
                raw = _lookup(pv, phys, logical)
                return Exact(casts.partition_value(raw, ctype))

            return part
        if not self.use_stats:
            return lambda env: UNKNOWN
        ntype = casts.normalize_type(ctype)

        def stat(env):
            stats = env[1]
            if not stats:
                return UNKNOWN
            return _range_from_stats(stats, phys, ntype)

        return stat


def _lookup(pv: dict, phys: str, logical: str) -> Any:
    if not isinstance(pv, dict):
        return None
    if phys in pv:
        return pv[phys]
    if logical in pv:
        return pv[logical]
    low = {phys.lower(), logical.lower()}
    for k, v in pv.items():
        if isinstance(k, str) and k.lower() in low:
            return v
    return None  # Spark: a missing map key reads as NULL


def _stat_value(v: Any, ntype: str) -> Any:
    if v is None or isinstance(v, (dict, list)):
        return None
    if isinstance(v, str):
        return casts.cast_string(v, ntype)
    if isinstance(v, bool):
        return v
    if isinstance(v, float) and ntype not in ("double", "float"):
        return casts.cast_value(Decimal(str(v)), ntype)
    return casts.cast_value(v, ntype)


def _range_from_stats(stats: dict, phys: str, ntype: str) -> Any:
    mins, maxs, nulls = stats.get("minValues") or {}, stats.get("maxValues") or {}, stats.get("nullCount") or {}
    num = stats.get("numRecords")
    nc = nulls.get(phys) if isinstance(nulls, dict) else None
    nc = nc if isinstance(nc, int) and not isinstance(nc, bool) else None
    num = num if isinstance(num, int) and not isinstance(num, bool) else None
    can_null = nc is None or nc > 0
    can_value = not (nc is not None and num is not None and nc >= num)
    if not can_value:
        return Range(None, None, can_null, False)
    raw_lo = mins.get(phys) if isinstance(mins, dict) else None
    raw_hi = maxs.get(phys) if isinstance(maxs, dict) else None
    if raw_lo is None and raw_hi is None:
        return UNKNOWN
    lo, hi = _stat_value(raw_lo, ntype), _stat_value(raw_hi, ntype)
    if ntype == "string" and isinstance(raw_hi, str) and len(raw_hi) >= STRING_STATS_PREFIX:
        hi = None  # a truncated prefix is not an upper bound
    if ntype in ("timestamp", "timestamp_ntz") and isinstance(hi, datetime):
        hi = hi + timedelta(milliseconds=1)  # stats are truncated to milliseconds
    if ntype in ("double", "float"):
        if isinstance(lo, float) and math.isnan(lo) or isinstance(hi, float) and math.isnan(hi):
            return UNKNOWN
    return Range(lo, hi, can_null, True)


def _sqlglot_type(dt: Any) -> str | None:
    if not isinstance(dt, exp.DataType):
        return None
    name = dt.this.name if hasattr(dt.this, "name") else str(dt.this)
    name = name.upper()
    mapping = {
        "INT": "int", "BIGINT": "long", "SMALLINT": "short", "TINYINT": "byte", "DOUBLE": "double",
        "FLOAT": "float", "BOOLEAN": "boolean", "DATE": "date", "TIMESTAMP": "timestamp",
        "TIMESTAMPLTZ": "timestamp", "TIMESTAMPTZ": "timestamp", "TIMESTAMPNTZ": "timestamp_ntz",
        "DATETIME": "timestamp_ntz", "VARCHAR": "string", "CHAR": "string", "TEXT": "string",
        "NVARCHAR": "string", "NCHAR": "string", "BINARY": "binary", "VARBINARY": "binary",
    }
    if name == "DECIMAL":
        params = [e.this.this if isinstance(e.this, exp.Literal) else None for e in dt.expressions]
        try:
            p = int(params[0]) if params else 10
            s = int(params[1]) if len(params) > 1 else 0
        except (TypeError, ValueError):
            return None
        return f"decimal({p},{s})"
    return mapping.get(name)


# ---- cache and public entry points ------------------------------------------------------------

_schema_keys: dict[int, tuple[Any, tuple]] = {}
_compiled: dict[tuple, PredFn] = {}
_MAX_COMPILED = 4096


def full_schema_key(schema: TableSchema) -> tuple:
    """What evaluating a predicate depends on in a schema (names, types, physical names,
    partition columns), hashable; remembered per schema object."""
    hit = _schema_keys.get(id(schema))
    if hit is not None and hit[0]() is schema:
        return hit[1]
    key = (
        tuple((c.name, c.type, c.physical_name) for c in schema.columns),
        tuple(schema.partition_columns),
    )
    try:
        ref = weakref.ref(schema)
    except TypeError:
        return key
    if len(_schema_keys) > 1024:
        _schema_keys.clear()
    _schema_keys[id(schema)] = (ref, key)
    return key


def compiled(p: ParsedPredicate, schema: TableSchema, use_stats: bool) -> PredFn:
    key = (p.sql, full_schema_key(schema), use_stats, p._schema_key)
    fn = _compiled.get(key)
    if fn is None:
        fn = _Compiler(schema, use_stats).pred(p._expr)
        if len(_compiled) >= _MAX_COMPILED:
            _compiled.clear()
        _compiled[key] = fn
    return fn


def _as_parsed(pred: ParsedPredicate | str, schema: TableSchema) -> ParsedPredicate:
    if isinstance(pred, ParsedPredicate):
        return pred
    return parse_predicate(pred if isinstance(pred, str) else str(pred), schema)


def matches_partition(pred: ParsedPredicate | str, partition_values: dict | None, schema: TableSchema) -> bool:
    """Could a file with these partition values match? (conflict-rules §5.6 c/d, delta-spark).

    Unparseable or truncated predicates match (conservative); never raises.
    """
    try:
        p = _as_parsed(pred, schema)
        if p._expr is None or p.truncated:
            return True
        return T in compiled(p, schema, False)((partition_values or {}, None))
    except Exception:
        return True


def matches_partition_as_written(pred: ParsedPredicate | str, partition_values: dict | None,
                                 schema: TableSchema) -> bool | None:
    """The same question with non-deterministic parts evaluated as written, not widened (delta-spark
    before 3.2, or widening switched off, conflict-rules §14.3): None when only such a part (rand(), a
    UDF, a subquery) could decide, which nothing in the log lets us evaluate. Never raises."""
    try:
        p = _as_parsed(pred, schema)
        if p._expr is None or p.truncated:
            return True
        outcomes = compiled(p, schema, False)((partition_values or {}, None))
    except Exception:
        return True
    if T not in outcomes:
        return False
    return True if p.deterministic or outcomes == _ONLY[T] else None


def parse_stats(stats: dict | str | None) -> dict | None:
    if isinstance(stats, dict):
        return stats
    if isinstance(stats, (str, bytes)) and stats:
        try:
            d = json.loads(stats)
        except (ValueError, TypeError):
            return None
        return d if isinstance(d, dict) else None
    return None


def may_match_stats(pred: ParsedPredicate | str, stats: dict | str | None, partition_values: dict | None, schema: TableSchema) -> bool:
    """delta-rs style file skipping (conflict-rules §9): partition values and min/max/nullCount stats.

    Missing stats (or a column without stats) => may match; never raises.
    """
    try:
        p = _as_parsed(pred, schema)
        if p._expr is None or p.truncated:
            return True
        return T in compiled(p, schema, True)((partition_values or {}, parse_stats(stats)))
    except Exception:
        return True

