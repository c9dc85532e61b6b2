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
