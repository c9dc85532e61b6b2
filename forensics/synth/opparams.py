"""operationParameters exactly as delta-spark writes them to disk (conflict-rules §8.1).

Each parameter value is JSON-encoded in memory and written raw, so on disk a string
parameter is a JSON string, a boolean is raw JSON, and list-valued parameters (DELETE /
UPDATE / MERGE / OPTIMIZE `predicate`, MERGE clause lists, `partitionBy`, `zOrderBy`) are
JSON *strings holding JSON text*. Predicates are Catalyst `simpleString`s: attribute
references carry expression ids (`id#480L`), binary operators are parenthesised, string and
date literals are printed unquoted (delta-spark ≥2.4; conflict-rules §8.1).
Models delta-spark 3.2 – 4.0 (DeltaOperations.scala); key order follows the real commits
in ../shared/corpus (golden-basic-with-inserts-merge, golden-commit-info-containing-…).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from forensics.synth.actions import dumps


class ExprIds:
    """Catalyst expression ids: one increasing counter per Spark session."""

    def __init__(self, start: int = 1000, rng: random.Random | None = None):
        self._next = start
        self._rng = rng or random.Random(0)

    def take(self) -> int:
        # Every query allocates a burst of ids; jump ahead like a busy session does.
        self._next += self._rng.randint(3, 400)
        return self._next


@dataclass(frozen=True)
class Attr:
    """An attribute reference as Catalyst prints it: `name#id` + type suffix (`L` for long)."""

    name: str
    expr_id: int
    spark_type: str = "string"

    def __str__(self) -> str:
        suffix = "L" if self.spark_type == "long" else ""
        return f"{self.name}#{self.expr_id}{suffix}"


def eq(a: Attr | str, b: Attr | str | int | float) -> str:
    return f"({a} = {b})"


def and_(*terms: str) -> str:
    out = terms[0]
    for t in terms[1:]:
        out = f"({out} AND {t})"
    return out


def json_list(items: list[Any]) -> str:
    """A list parameter on disk: JSON text inside a JSON string (the caller dumps the dict)."""
    return dumps(items)


def write_params(mode: str = "Append", partition_by: list[str] | None = None, predicate: str | None = None) -> dict[str, Any]:
    # conflict-rules §8.1 WRITE: mode, partitionBy (JSON text), predicate = the raw replaceWhere text
    d: dict[str, Any] = {"mode": mode}
    if partition_by is not None:
        d["partitionBy"] = json_list(partition_by)
    if predicate is not None:
        d["predicate"] = predicate
    return d


def delete_params(predicates: list[str]) -> dict[str, Any]:
    return {"predicate": json_list(predicates)}


def update_params(predicates: list[str]) -> dict[str, Any]:
    return {"predicate": json_list(predicates)}


def merge_params(
    condition: str,
    matched: list[dict[str, str]] | None = None,
    not_matched: list[dict[str, str]] | None = None,
    not_matched_by_source: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    # conflict-rules §8.1 MERGE: clause lists are JSON text of [{"predicate"?, "actionType"}]
    return {
        "predicate": json_list([condition]),
        "matchedPredicates": json_list(matched if matched is not None else [{"actionType": "update"}]),
        "notMatchedPredicates": json_list(not_matched if not_matched is not None else [{"actionType": "insert"}]),
        "notMatchedBySourcePredicates": json_list(not_matched_by_source or []),
    }


def optimize_params(predicates: list[str], auto: bool = False) -> dict[str, Any]:
    # Order as in the Delta 3.x sample: predicate, zOrderBy, clusterBy, auto (raw boolean).
    return {"predicate": json_list(predicates), "zOrderBy": json_list([]), "clusterBy": json_list([]), "auto": auto}


def set_tblproperties_params(properties: dict[str, str]) -> dict[str, Any]:
    return {"properties": dumps(properties)}


def add_columns_params(columns: list[dict[str, Any]]) -> dict[str, Any]:
    return {"columns": json_list([{"column": c} for c in columns])}


def streaming_update_params(query_id: str, epoch_id: int, output_mode: str = "Append") -> dict[str, Any]:
    return {"outputMode": output_mode, "queryId": query_id, "epochId": str(epoch_id)}


def quirk_commit_info_json(commit_info_line: str) -> str:
    """The winner's commitInfo as delta-spark ≤4.0 prints it in "Conflicting commit:" (conflict-rules §7.4).

    The conflict checker reads the winner's commitInfo back from the log; before v4.1 the
    operationParameters map lost one level of encoding on that read and Jackson then writes
    each value raw: `"mode":Append`, `"predicate":["(id#1 = 5)"]`, `"auto":false`. All other
    fields keep their on-disk form and key order; there is no `version` key (observed).
    """
    obj = json.loads(commit_info_line)
    ci = obj.get("commitInfo", obj)
    parts = []
    for key, value in ci.items():
        if key == "operationParameters" and isinstance(value, dict):
            inner = []
            for k, v in value.items():
                raw = v if isinstance(v, str) else ("null" if v is None else dumps(v))
                inner.append(f"{dumps(k)}:{raw}")
            parts.append(f'"operationParameters":{{{",".join(inner)}}}')
        else:
            parts.append(f"{dumps(key)}:{dumps(value)}")
    return "{" + ",".join(parts) + "}"
