"""Advice helper: pin a MERGE to the partitions it touches (conflict-rules §8.2).

The usual fix for ConcurrentAppendException on MERGE is to add an explicit partition filter on
the target to the ON condition, so the target-only conjuncts (the read predicate) name the
partitions. We print the suggested condition; we never run it.
"""

from __future__ import annotations

from sqlglot import exp

import forensics.predicates.casts as casts
from forensics.predicates.classify import infer_target_alias
from forensics.predicates.parse import DIALECT, identifier, parse_predicate
from forensics.log.schema import TableSchema

_NUMERIC = {"int", "long", "short", "byte", "double", "float"}


def _literal(value: str, spark_type: str) -> exp.Expression:
    t = casts.normalize_type(spark_type)
    if t in _NUMERIC or t.startswith("decimal"):
        v = casts.cast_string(value, t)
        if v is not None and str(value).strip().lstrip("+-").replace(".", "", 1).isdigit():
            return exp.Literal.number(str(value).strip())
    if t == "boolean":
        b = casts.string_to_boolean(value)
        if b is not None:
            return exp.Boolean(this=b)
    return exp.Literal.string(value)


def rewrite_with_partition_literal(
    merge_condition: str, column: str, values: list[str | None], schema: TableSchema | None
) -> str:
    """`merge_condition AND target.col IN ('v1', 'v2')` (or `= 'v'`) as SQL text.

    The target alias is taken from the condition when it can be told (see
    classify.infer_target_alias), else `target`. NULL / __HIVE_DEFAULT_PARTITION__ values
    become `target.col IS NULL`. Never raises.
    """
    schema = schema or TableSchema(columns=(), partition_columns=())
    try:
        p = parse_predicate(merge_condition, schema)
        alias, _ = infer_target_alias(p)
        col = schema.column(column)
        name = col.name if col else column
        ctype = col.type if col else "string"
        alias = alias or "target"
        ref = exp.Column(this=identifier(name), table=identifier(alias))
        uniq: list[str] = []
        has_null = False
        for v in values:
            if casts.is_null_partition_value(v):
                has_null = True
            elif str(v) not in uniq:
                uniq.append(str(v))
        lits = [_literal(v, ctype) for v in uniq]
        parts: list[exp.Expression] = []
        if len(lits) == 1:
            parts.append(exp.EQ(this=ref.copy(), expression=lits[0]))
        elif lits:
            parts.append(exp.In(this=ref.copy(), expressions=lits))
        if has_null:
            parts.append(exp.Is(this=ref.copy(), expression=exp.Null()))
        if not parts:
            return p.sql if p.sql is not None else merge_condition
        added: exp.Expression = parts[0] if len(parts) == 1 else exp.Paren(this=exp.Or(this=parts[0], expression=parts[1]))
        if p._expr is None:
            return f"({merge_condition}) AND {added.sql(dialect=DIALECT)}"
        base = p._expr.copy()
        if isinstance(base, exp.Or):
            base = exp.Paren(this=base)
        return exp.And(this=base, expression=added).sql(dialect=DIALECT)
    except Exception:
        vals = ", ".join("'" + str(v).replace("\\", "\\\\").replace("'", "\\'") + "'" for v in values if v is not None)
        return f"({merge_condition}) AND target.`{column.replace('`', '``')}` IN ({vals})"


def _conjuncts(condition: str) -> list[exp.Expression]:
    """The top-level AND terms of a condition (parentheses dropped); [] when it does not parse."""
    import sqlglot

    try:
        tree = sqlglot.parse_one(condition, read=DIALECT)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return []
    while isinstance(tree, exp.Paren):
        tree = tree.this
    return list(tree.flatten()) if isinstance(tree, exp.And) else [tree]


def _pin(term: exp.Expression) -> tuple[str, set[str]] | None:
    """(column, values) when `term` is `col = 'v'` or `col IN ('v', ...)`, the column named without its alias."""
    while isinstance(term, exp.Paren):
        term = term.this
    if isinstance(term, exp.EQ):
        col, lit = term.this, term.expression
        if isinstance(lit, exp.Column) and isinstance(col, exp.Literal):
            col, lit = lit, col
        if isinstance(col, exp.Column) and isinstance(lit, exp.Literal):
            return col.name.lower(), {lit.this}
    if isinstance(term, exp.In) and isinstance(term.this, exp.Column) and term.expressions \
            and all(isinstance(e, exp.Literal) for e in term.expressions):
        return term.this.name.lower(), {e.this for e in term.expressions}
    return None


def pinned_values(condition: str | None, column: str) -> set[str] | None:
    """The values a condition's own AND terms pin `column` to (`date = 'x' AND ...` -> {'x'}), or None
    when it does not pin it: a condition that already names its partitions needs no literal added."""
    if not condition:
        return None
    out: set[str] | None = None
    for term in _conjuncts(condition):
        pin = _pin(term)
        if pin and pin[0] == column.lower():
            out = pin[1] if out is None else out & pin[1]
    return out


def contradiction(condition: str | None) -> str | None:
    """Why a condition cannot be meant as written, or None: a column pinned to two disjoint sets of
    values (`date = 'a' AND date = 'b'` matches no row) or a term that compares a column with itself
    (`id = id`, the log's MERGE condition without its aliases)."""
    if not condition:
        return None
    pins: dict[str, set[str]] = {}
    for term in _conjuncts(condition):
        inner = term
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.EQ) and isinstance(inner.this, exp.Column) and isinstance(inner.expression, exp.Column) \
                and inner.this.sql(dialect=DIALECT) == inner.expression.sql(dialect=DIALECT):
            return f"`{inner.sql(dialect=DIALECT)}` compares a column with itself"
        pin = _pin(term)
        if pin:
            col, vals = pin
            if col in pins and not (pins[col] & vals):
                return f"{col} is pinned to {sorted(pins[col])} and to {sorted(vals)}: no row matches both"
            pins[col] = pins.get(col, vals) & vals
    return None
