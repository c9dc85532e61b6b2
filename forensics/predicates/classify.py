"""Which part of a predicate the conflict checker uses (conflict-rules §4.1, §8.2).

delta-spark (DELETE/UPDATE/replaceWhere planning, `DeltaTableUtils.splitMetadataAndDataPredicates`)
keeps only the *partition* part of a read predicate for the append check; MERGE reads the
target with the conjuncts of the ON condition that reference target columns only.
"""

from __future__ import annotations

from sqlglot import exp

from forensics.predicates.parse import (
    and_all,
    column_refs,
    conjuncts,
    from_expression,
    or_all,
    schema_key,
    split_and,
    to_sql,
)
from forensics.predicates.parsed import TRUE_PREDICATE, ParsedPredicate
from forensics.log.schema import TableSchema

# Alias names people use for the MERGE target / source (heuristic, labelled in `why`).
TARGET_ALIASES = {"target", "t", "tgt", "trg", "dest", "destination", "tar", "old", "olddata", "existing", "main", "sink"}
SOURCE_ALIASES = {"source", "s", "src", "updates", "update", "u", "new", "newdata", "staged", "stage", "stg", "incoming", "changes", "delta", "batch"}


# ---- partition vs data (conflict-rules §4.1) ------------------------------------------------------------


def _partition_only(tree: exp.Expression, schema: TableSchema) -> bool:
    """delta-spark isPredicatePartitionColumnsOnly: every referenced column is a partition
    column (no references counts as partition-only)."""
    return all(schema.is_partition_column(c.name) for c in column_refs(tree))


def _has_subquery(tree: exp.Expression) -> bool:
    return any(isinstance(n, (exp.Subquery, exp.Query, exp.Exists)) for n in tree.walk())


def _wrap(t: exp.Expression) -> exp.Expression:
    return exp.Paren(this=t) if isinstance(t, (exp.And, exp.Or)) else t


def _extract(tree: exp.Expression, schema: TableSchema) -> exp.Expression | None:
    """delta-spark extractMetadataPredicates: the strongest partition-only predicate implied by
    `tree`. AND keeps whichever sides yield one; OR needs both sides; a leaf only if it is
    partition-only. (The recursion depth is bounded by parse.MAX_DEPTH.)"""
    while isinstance(tree, exp.Paren):
        tree = tree.this
    if isinstance(tree, exp.And):
        parts = [p for p in (_extract(x, schema) for x in split_and(tree)) if p is not None]
        if not parts:
            return None
        out = parts[0]
        for p in parts[1:]:
            out = exp.And(this=_wrap(out), expression=_wrap(p))
        return out
    if isinstance(tree, exp.Or):
        lhs = _extract(tree.this, schema)
        if lhs is None:
            return None
        rhs = _extract(tree.expression, schema)
        if rhs is None:
            return None
        return exp.Or(this=_wrap(lhs), expression=_wrap(rhs))
    return tree.copy() if _partition_only(tree, schema) else None


def split_partition_and_data(
    preds: list[ParsedPredicate], schema: TableSchema, *, extract_from_or: bool = True
) -> tuple[ParsedPredicate, list[ParsedPredicate]]:
    """delta-spark splitMetadataAndDataPredicates as DELETE/UPDATE planning uses it (conflict-rules §4.1, §8.2).

    Per conjunct: partition-only (all refs are partition columns, no subquery) vs data. Then
    partition predicates implied by the data conjuncts are added (delta-spark's
    extractMetadataPredicates: `(p = 1 AND x > 0) OR (p = 2)` yields `p = 1 OR p = 2`; an OR
    with a side that has no partition part yields nothing). `extract_from_or=False` models
    writers before that extraction existed. Unparsed or truncated conjuncts count as data (they
    can only widen the read: conservative). Partition part = AND of partition conjuncts, or
    TRUE_PREDICATE if none.
    """
    meta: list[ParsedPredicate] = []
    data: list[ParsedPredicate] = []
    for p in preds:
        for c in conjuncts(p):
            if c._expr is None or c.truncated:
                data.append(c)
            elif _partition_only(c._expr, schema) and not _has_subquery(c._expr):
                meta.append(c)
            else:
                data.append(c)
    if extract_from_or and schema.partition_columns:
        reliable = [d for d in data if d._expr is not None and not d.truncated]
        tree = and_all(reliable)
        if tree is not None:
            extra = _extract(tree, schema)
            if extra is not None:
                key = schema_key(schema)
                meta.extend(from_expression(part.copy(), False, key) for part in split_and(extra))
    if not meta:
        return TRUE_PREDICATE, data
    if len(meta) == 1:
        return meta[0], data
    return from_expression(and_all(meta), False, schema_key(schema)), data


# ---- MERGE: target-only conjuncts (conflict-rules §8.2) -------------------------------------------------


def _is_long_type(t: str | None) -> bool:
    return (t or "").strip().lower() in ("long", "bigint")


def _attr_ids(preds: list[ParsedPredicate]) -> set[tuple[str, int]]:
    out: set[tuple[str, int]] = set()
    for p in preds:
        if p._expr is None:
            continue
        for c in column_refs(p._expr):
            eid = c.meta.get("expr_id")
            if eid is not None:
                out.add((c.name.lower(), eid))
    return out


def infer_target_alias(p: ParsedPredicate, target_alias: str | None = None) -> tuple[str | None, str]:
    """The qualifier naming the MERGE target in `p`, and how we know. None when unknown."""
    if target_alias:
        return target_alias.lower(), f"target alias `{target_alias}` given"
    quals = set(p.qualifiers)
    if not quals:
        return None, ""
    named_t = quals & TARGET_ALIASES
    named_s = quals & SOURCE_ALIASES
    if len(named_t) == 1:
        q = next(iter(named_t))
        return q, f"qualifier `{q}` taken as the target alias (by its name) [inferred]"
    if len(quals) == 2 and len(named_s) == 1:
        q = next(iter(quals - named_s))
        return q, f"qualifier `{q}` taken as the target alias (the other, `{next(iter(named_s))}`, reads as the source) [inferred]"
    # Databricks writes the target fully qualified (spark_catalog.db.tbl.col) and the source by alias
    if p._expr is not None:
        full = {c.meta.get("qualifier") for c in column_refs(p._expr) if (c.meta.get("full_qualifier") or "").count(".") >= 1}
        full.discard(None)
        if len(full) == 1 and len(quals) >= 2:
            q = next(iter(full))
            return q, f"fully qualified `{q}` taken as the target table [inferred]"
    return None, ""


def target_only_conjuncts(
    merge_condition: ParsedPredicate,
    schema: TableSchema,
    target_alias: str | None = None,
    *,
    not_matched_by_source: list[ParsedPredicate] | tuple = (),
    not_matched: list[ParsedPredicate] | tuple = (),
) -> tuple[list[ParsedPredicate], str]:
    """Conjuncts of the MERGE ON condition that reference only target columns (conflict-rules §8.2).

    Which side a column belongs to is often not in the log: Catalyst text has no qualifiers,
    only expression ids (`(id#480L = cast(id#482 as bigint))`). Evidence used, in order: the
    given/inferred target alias; expression ids seen in WHEN NOT MATCHED BY SOURCE conditions
    (target only) and WHEN NOT MATCHED conditions (source only); the `L` type suffix against the
    target schema type; finally an unqualified column of the target schema is *assumed* target.
    Returns (conjuncts, why) where `why` states every assumption in words.
    """
    notes: list[str] = []
    if merge_condition._expr is None:
        return [], f"merge condition not parsed ({merge_condition.error}); no target-only conjuncts"
    tq, how = infer_target_alias(merge_condition, target_alias)
    if how:
        notes.append(how)
    target_ids = _attr_ids(list(not_matched_by_source))
    source_ids = _attr_ids(list(not_matched)) - target_ids
    refs = column_refs(merge_condition._expr)
    ids_by_name: dict[str, set[int]] = {}
    for c in refs:
        if c.meta.get("expr_id") is not None and not c.meta.get("qualifier"):
            ids_by_name.setdefault(c.name.lower(), set()).add(c.meta["expr_id"])

    side_cache: dict[tuple, str] = {}

    def side(c: exp.Column) -> str:
        q = c.meta.get("qualifier")
        eid = c.meta.get("expr_id")
        name = c.name
        key = (q, name.lower(), eid)
        if key in side_cache:
            return side_cache[key]
        result = _side(q, name, eid, c.meta.get("long", False))
        side_cache[key] = result
        return result

    def _side(q, name, eid, is_long) -> str:
        in_schema = schema.column(name) is not None
        if q:
            if tq is None:
                if q in SOURCE_ALIASES:
                    notes.append(f"qualifier `{q}` taken as the source (by its name) [inferred]")
                    return "source"
                if q in TARGET_ALIASES:
                    return "target"
                if in_schema:
                    notes.append(f"which table `{q}` is cannot be told from the log; `{q}.{name}` assumed target")
                    return "target"
                return "source"
            return "target" if q == tq else "source"
        if eid is not None:
            low = name.lower()
            if (low, eid) in target_ids:
                notes.append(f"`{name}#{eid}` is target (it appears in a WHEN NOT MATCHED BY SOURCE condition)")
                return "target"
            if (low, eid) in source_ids:
                notes.append(f"`{name}#{eid}` is source (it appears in a WHEN NOT MATCHED condition)")
                return "source"
            if not in_schema:
                return "source"
            others = ids_by_name.get(low, set())
            if len(others) > 1:
                if any((low, o) in target_ids for o in others if o != eid):
                    notes.append(f"`{name}#{eid}` is source (another `{name}` attribute appears in a WHEN NOT MATCHED BY SOURCE condition)")
                    return "source"
                stype = schema.type_of(name)
                consistent = [o for o in others if _is_long_type(stype) == _suffix_long(refs, low, o)]
                if len(consistent) == 1:
                    which = "target" if consistent[0] == eid else "source"
                    notes.append(
                        f"`{name}#{eid}` taken as {which}: its type suffix {'matches' if which == 'target' else 'does not match'} the target column type `{stype}` [inferred]"
                    )
                    return which
                notes.append(f"two attributes named `{name}` (ids {sorted(others)}): which is the target cannot be told from the log; conjuncts using them are left out")
                return "ambiguous"
            notes.append(f"which side `{name}` belongs to cannot be told from the log; assumed target")
            return "target"
        if in_schema:
            notes.append(f"which side `{name}` belongs to cannot be told from the log; assumed target")
            return "target"
        return "source"

    out: list[ParsedPredicate] = []
    for conj in conjuncts(merge_condition):
        if conj._expr is None or conj.truncated or not conj.deterministic:
            continue
        crefs = column_refs(conj._expr)
        if all(side(c) == "target" for c in crefs):
            out.append(conj)
    if not notes:
        notes.append("every column reference was resolved from its qualifier" if refs else "no column references")
    if merge_condition.truncated:
        notes.append("merge condition was truncated in the log; only complete conjuncts considered")
    # de-duplicate, keep order
    seen: set[str] = set()
    why = "; ".join(n for n in notes if not (n in seen or seen.add(n)))
    return out, why


def _suffix_long(refs: list[exp.Column], low: str, eid: int) -> bool:
    for c in refs:
        if c.name.lower() == low and c.meta.get("expr_id") == eid:
            return bool(c.meta.get("long"))
    return False


def merge_read_filters(
    condition: ParsedPredicate,
    matched: list[ParsedPredicate | None],
    schema: TableSchema,
    *,
    matched_only: bool,
    narrows_by_clause: bool,
) -> tuple[list[ParsedPredicate], str]:
    """The filters a delta-spark MERGE hands to `filterFiles` (conflict-rules §4.7, §8.2).

    `MergeIntoCommandBase.getTargetOnlyPredicates`: the ON condition's target-only conjuncts; on
    releases that narrow by clause (3.0+) and when every clause is WHEN MATCHED, also the OR over
    the matched clauses of each clause's target-only conjuncts (a clause without a condition, or
    with no target-only conjunct, contributes TRUE, which makes the OR TRUE and adds nothing).
    `matched` holds each WHEN MATCHED clause's condition (None: the clause has none). The caller
    splits the result conjunct by conjunct, without pulling partition terms out of an OR.
    """
    target, why = target_only_conjuncts(condition, schema)
    notes = [why] if why else []
    if not (narrows_by_clause and matched_only and matched):
        if matched and not narrows_by_clause:
            notes.append("this release does not narrow the read by WHEN MATCHED conditions (before delta-spark 3.0)")
        return target, "; ".join(notes)
    tq, _ = infer_target_alias(condition)
    per_clause: list[ParsedPredicate] = []
    for clause in matched:
        if clause is None or clause._expr is None or clause.truncated:
            notes.append("a WHEN MATCHED clause without a usable condition makes the clause filter TRUE")
            return target, "; ".join(notes)
        own, _ = target_only_conjuncts(clause, schema, tq)
        if not own:
            notes.append("a WHEN MATCHED condition with no target-only term makes the clause filter TRUE")
            return target, "; ".join(notes)
        per_clause.append(own[0] if len(own) == 1 else from_expression(and_all(own), False, schema_key(schema)))
    either = or_all(per_clause, schema_key(schema))
    if either is None:
        return target, "; ".join(notes)
    notes.append(f"only WHEN MATCHED clauses: their target-only conditions are read too ({to_sql(either)})")
    return [*target, either], "; ".join(notes)
