"""The records this package hands out: a parsed predicate and where a predicate string came from.

A `ParsedPredicate` keeps the input text, the canonical Spark SQL we print for it, the logical
columns and table qualifiers it references, and whether it can be trusted for evaluation
(`deterministic`, `truncated`, `error`). The sqlglot tree is kept privately (`_expr`) and is
never mutated after construction; every transformation works on a copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal[
    "condition",  # DELETE / UPDATE (and delta-rs MERGE early filter) condition
    "merge_condition",  # MERGE ... ON <condition>
    "matched",  # WHEN MATCHED [AND cond]
    "not_matched",  # WHEN NOT MATCHED [AND cond]
    "not_matched_by_source",  # WHEN NOT MATCHED BY SOURCE [AND cond]
    "replace_where",  # WRITE ... replaceWhere
    "optimize",  # OPTIMIZE / REORG ... WHERE
]

# The placeholder we splice in where text was cut off or elided (`... 5 more fields`).
# It parses as a column reference, evaluates to "unknown" (so evaluation stays conservative)
# and is never reported in `columns`.
TRUNCATION_MARK = "__truncated__"


@dataclass(frozen=True)
class PredicateSource:
    """One predicate string recorded in commitInfo.operationParameters (conflict-rules §8.1).

    `text` is "" for a MERGE clause recorded without a condition (unconditional clause);
    parse_predicate("") gives TRUE for it.
    """

    text: str
    role: Role
    action_type: str | None = None
    key: str = "predicate"  # the operationParameters key it was read from


@dataclass(frozen=True)
class ParsedPredicate:
    text: str  # the input as given
    sql: str | None  # canonical Spark SQL, literals quoted; None if unparsed
    columns: frozenset[str] = frozenset()  # referenced logical column names (schema case)
    qualifiers: frozenset[str] = frozenset()  # table qualifiers seen, lower-cased
    deterministic: bool = True  # False for rand(), uuid(), UDF-looking calls, subqueries (§5.6 d)
    truncated: bool = False
    error: str | None = None  # why it could not be parsed (one line), else None
    # private: the sqlglot expression (Spark dialect); not part of equality/hash
    _expr: Any = field(default=None, compare=False, hash=False, repr=False)
    # private: how column references were resolved (schema key used at parse time)
    _schema_key: Any = field(default=None, compare=False, hash=False, repr=False)

    @property
    def parsed(self) -> bool:
        return self._expr is not None

    @property
    def is_true(self) -> bool:
        """True when the predicate is the literal TRUE (reads the whole table)."""
        return self.sql == "TRUE"

    def __str__(self) -> str:
        return self.sql if self.sql is not None else self.text


def _true_predicate() -> ParsedPredicate:
    from sqlglot import exp

    return ParsedPredicate(text="TRUE", sql="TRUE", _expr=exp.true())


TRUE_PREDICATE: ParsedPredicate = _true_predicate()
