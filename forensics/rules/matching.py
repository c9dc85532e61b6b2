"""Evaluate read predicates on a file's partitionValues / statistics.

Delegates to `forensics.predicates` (Spark-dialect parsing, casts, three-valued logic).
While that package is unavailable a tiny fallback handles `TRUE` and conjunctions of
`col = 'v'`; anything else is conservatively treated as a match and labelled inferred
(the same direction Spark itself widens undecidable predicates, conflict-rules §5.6.d).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from forensics.model import FileAction
from forensics.log.schema import TableSchema


@dataclass(frozen=True)
class Match:
    matched: bool
    exact: bool  # False when the fallback had to assume a match
    note: str = ""
    undecided: bool = False  # matched only through a non-deterministic part evaluated as written


def _api():
    try:
        from forensics.predicates import matches_partition, matches_partition_as_written, may_match_stats  # type: ignore
    except Exception:  # not landed yet, or broken: use the fallback
        return None
    return matches_partition, may_match_stats, matches_partition_as_written


_EQ = re.compile(r"""^\s*`?([A-Za-z_][\w.]*)`?\s*=\s*(?:'((?:[^']|'')*)'|"([^"]*)"|(-?[\w.]+))\s*$""")


def _fallback_partition(pred: str, pv: dict[str, str | None], schema: TableSchema) -> Match:
    text = pred.strip()
    while text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    if text.upper() in ("TRUE", ""):
        return Match(True, True)
    parts = re.split(r"\s+AND\s+", text, flags=re.IGNORECASE)
    for part in parts:
        part = part.strip()
        while part.startswith("(") and part.endswith(")"):
            part = part[1:-1].strip()
        m = _EQ.match(part)
        if not m:
            return Match(True, False, f"predicate {pred!r} not evaluable without forensics.predicates; assumed to match")
        col = m.group(1)
        lit = next(g for g in m.groups()[1:] if g is not None)
        key = schema.physical_name(col)
        v = pv.get(key, pv.get(col))
        if v is None or str(v) != lit.replace("''", "'"):
            return Match(False, True)
    return Match(True, True)


def partition_match(pred: str, pv: dict[str, str | None], schema: TableSchema, *, widen: bool = True) -> Match:
    """Would Spark's partition predicate select a file with these partitionValues (conflict-rules §5.6.c)?

    `widen=False`: non-deterministic parts are evaluated as written, not widened (conflict-rules §14.3);
    a match that only they could decide comes back `undecided`."""
    api = _api()
    if api is not None:
        try:
            if not widen:
                hit = api[2](pred, pv, schema)
                return Match(hit is not False, True, undecided=hit is None)
            return Match(bool(api[0](pred, pv, schema)), True)
        except Exception as e:  # unparseable: Spark would not have recorded it; be conservative
            return Match(True, False, f"predicate {pred!r} could not be evaluated ({type(e).__name__}); assumed to match")
    return _fallback_partition(pred, pv, schema)


def stats_match(pred: str, f: FileAction, schema: TableSchema) -> Match:
    """delta-rs: can a file's partition values + min/max statistics satisfy the predicate (conflict-rules §9)?"""
    api = _api()
    if api is not None:
        try:
            return Match(bool(api[1](pred, f.stats, f.partition_values, schema)), True)
        except Exception as e:
            return Match(True, False, f"predicate {pred!r} could not be evaluated on stats ({type(e).__name__}); assumed to match")
    m = _fallback_partition(pred, f.partition_values, schema)
    if not m.matched or not m.exact:
        return m
    # the fallback cannot read stats: a partition-level match is only an upper bound
    return Match(True, bool(schema.partition_columns) and _only_partition_refs(pred, schema), m.note)


def _only_partition_refs(pred: str, schema: TableSchema) -> bool:
    cols = {m.group(1) for m in _EQ.finditer(pred)}
    return all(schema.is_partition_column(c) for c in cols)


def parse_stats(stats: str | dict[str, Any] | None) -> dict[str, Any] | None:
    if stats is None or isinstance(stats, dict):
        return stats
    try:
        v = json.loads(stats)
    except ValueError:
        return None
    return v if isinstance(v, dict) else None
