"""Find every predicate string a commit recorded in commitInfo.operationParameters (conflict-rules §8.1, §9).

delta-spark JSON-encodes each parameter value in memory and writes it raw, so list-valued
parameters (DELETE/UPDATE/MERGE/OPTIMIZE `predicate` from 2.4 on, the MERGE clause lists)
arrive as JSON strings holding JSON text and need one more decode. Older writers (<=2.3) and
delta-rs write plain strings. We accept both: values already decoded by the reader (lists,
dicts) and raw JSON text.
"""

from __future__ import annotations

import json
from typing import Any

from forensics.log.params import MAX_PARAM_CHARS, decode_value
from forensics.predicates.parsed import PredicateSource, Role


_CLAUSE_KEYS: tuple[tuple[str, Role], ...] = (
    ("matchedPredicates", "matched"),
    ("notMatchedPredicates", "not_matched"),
    ("notMatchedBySourcePredicates", "not_matched_by_source"),
)


def decode_param(value: Any) -> Any:
    """One extra JSON decode where the value is JSON array/object text (conflict-rules §8.1); else as is."""
    return decode_value(value)


def _salvage_cut_array(value: str) -> list[str] | None:
    """A JSON array of strings cut off mid-way (`["(id#1 = 5) AND (na`): keep the readable part.

    Complete elements are decoded normally; the cut element is decoded as far as it goes and
    gets a trailing ` ...`, which parse_predicate reads as elided text (truncated=True).
    """
    s = value.strip()
    if not s.startswith("[") or len(s) > MAX_PARAM_CHARS:
        return None
    dec = json.JSONDecoder()
    out: list[str] = []
    pos = 1
    while True:
        while pos < len(s) and s[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(s) or s[pos] != '"':
            return out or None
        try:
            item, pos = dec.raw_decode(s, pos)
        except ValueError:
            body = s[pos + 1 :]
            for end in range(len(body), max(len(body) - 8, -1), -1):
                try:
                    # the trailing `...` makes parse_predicate mark the element truncated
                    out.append(json.loads('"' + body[:end] + '"') + " ...")
                    break
                except ValueError:
                    continue
            return out or None
        if isinstance(item, str):
            out.append(item)


def _strings(value: Any) -> list[str]:
    """The predicate strings held by one `predicate`-style value: a list, JSON text, or a string."""
    decoded = decode_param(value)
    if isinstance(decoded, list):
        return [x if isinstance(x, str) else json.dumps(x) for x in decoded if x is not None]
    if isinstance(decoded, str):
        s = decoded.strip()
        if s.startswith("[") and s[1:].lstrip().startswith('"'):
            salvaged = _salvage_cut_array(s)
            if salvaged is not None:
                return salvaged
        return [decoded] if s else []
    if decoded is None:
        return []
    return [json.dumps(decoded)]


def _clauses(value: Any, role: Role, key: str) -> list[PredicateSource]:
    decoded = decode_param(value)
    if not isinstance(decoded, list):
        # Not a clause list: keep whatever text there is rather than dropping evidence.
        return [PredicateSource(text=t, role=role, key=key) for t in _strings(value)]
    out = []
    for clause in decoded:
        if isinstance(clause, dict):
            pred = clause.get("predicate")
            action = clause.get("actionType")
            out.append(
                PredicateSource(
                    text=pred if isinstance(pred, str) else "",
                    role=role,
                    action_type=str(action) if action is not None else None,
                    key=key,
                )
            )
        elif isinstance(clause, str):
            out.append(PredicateSource(text=clause, role=role, key=key))
    return out


def predicate_strings(operation: str | None, params: dict | None) -> list[PredicateSource]:
    """Every predicate string the commit recorded, with where it came from.

    An empty list for DELETE/UPDATE means no condition was recorded (delete/update all rows).
    MERGE clauses without a condition are returned with text "" so callers can still see that
    e.g. a WHEN NOT MATCHED BY SOURCE clause exists (conflict-rules §8.2: that makes the read TRUE).
    """
    if not isinstance(params, dict):
        return []
    op = (operation or "").strip().upper()
    out: list[PredicateSource] = []
    if op == "MERGE":
        # delta-rs (conflict-rules §9): `predicate` is the derived early filter, `mergePredicate` the ON clause.
        is_delta_rs = "mergePredicate" in params
        if "predicate" in params:
            role: Role = "condition" if is_delta_rs else "merge_condition"
            out += [PredicateSource(t, role, key="predicate") for t in _strings(params["predicate"])]
        if is_delta_rs:
            out += [
                PredicateSource(t, "merge_condition", key="mergePredicate")
                for t in _strings(params["mergePredicate"])
            ]
        for key, clause_role in _CLAUSE_KEYS:
            if key in params:
                out += _clauses(params[key], clause_role, key)
        return out
    if "predicate" not in params:
        return out
    value = params["predicate"]
    if op in ("WRITE", "CREATE OR REPLACE TABLE AS SELECT", "REPLACE TABLE AS SELECT"):
        # conflict-rules §8.1: WRITE `predicate` is the raw replaceWhere text as the user typed it.
        decoded = decode_param(value)
        if isinstance(decoded, list):
            return [PredicateSource(t, "replace_where") for t in _strings(decoded)]
        if isinstance(decoded, str) and decoded.strip():
            return [PredicateSource(decoded, "replace_where")]
        return out
    role = "optimize" if op.startswith("OPTIMIZE") or op.startswith("REORG") else "condition"
    return [PredicateSource(t, role) for t in _strings(value)]
