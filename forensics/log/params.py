"""Decode commitInfo.operationParameters as delta-spark writes them (conflict-rules §8.1).

Each value is JSON-encoded in memory and written raw: string parameters are JSON strings,
booleans and numbers are raw JSON, and list-valued parameters (DELETE `predicate`, MERGE
clause lists, `partitionBy`, `zOrderBy`) are JSON strings that hold JSON text and need one
more decode. We decode that second level only where the string is JSON array/object text.
"""

from __future__ import annotations

import json
from typing import Any

MAX_PARAM_CHARS = 1 << 20


def decode_value(value: Any) -> Any:
    if isinstance(value, str):
        s = value.strip()
        if len(s) <= MAX_PARAM_CHARS and s[:1] in ("[", "{") and s[-1:] in ("]", "}"):
            try:
                return json.loads(s)
            except ValueError:
                return value
    return value


def decode_parameters(params: Any) -> dict[str, Any]:
    if not isinstance(params, dict):
        return {}
    return {str(k): decode_value(v) for k, v in params.items()}


def parse_commit_info(raw: str | None) -> dict[str, Any]:
    """The commitInfo object from its raw JSON text; {} when absent or not an object."""
    if not raw:
        return {}
    try:
        obj = json.loads(raw)
    except ValueError:
        return {}
    return obj if isinstance(obj, dict) else {}
