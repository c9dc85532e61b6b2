"""Decode a commitInfo as the engines write it: operationParameters (below), operationMetrics
(`metric_value`) and the keys without a field of their own (`other_commit_info`).

operationParameters as delta-spark writes them (conflict-rules §8.1).

Each value is JSON-encoded in memory and written raw: string parameters are JSON strings,
booleans and numbers are raw JSON, and list-valued parameters (DELETE `predicate`, MERGE
clause lists, `partitionBy`, `zOrderBy`) are JSON strings that hold JSON text and need one
more decode. We decode that second level only where the string is JSON array/object text.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Callable, TypeVar

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


# ---- commitInfo beyond the parameters -------------------------------------------------------

# The commitInfo keys that have a field of their own in `history` (and CommitRecord); every other
# key an engine wrote (delta-rs' flattened custom metadata such as `writer`, a future field) is
# kept as written under `otherCommitInfo`, so nothing of the commitInfo is dropped.
COMMIT_INFO_KEYS = frozenset((
    "timestamp", "inCommitTimestamp", "operation", "operationParameters", "readVersion", "isolationLevel",
    "isBlindAppend", "txnId", "engineInfo", "userName", "userId", "job", "notebook", "clusterId",
    "operationMetrics", "userMetadata", "tags", "clientVersion",
))
# The keys whose value must be a JSON object to be shown in their own field.
_OBJECT_KEYS = ("operationMetrics", "tags")

# A whole JSON number (RFC 8259 §6), ASCII digits only: "10", "-3", "2.5", "1e3".
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_MAX_NUMBER_CHARS = 64
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def metric_value(value: Any) -> Any:
    """One operationMetrics value as a number when it is one, whatever the writer.

    delta-spark and Databricks write every metric as a JSON string ("10"; SQLMetric values go
    through a Map[String, String]); delta-rs writes JSON numbers, and on OPTIMIZE also booleans,
    text (`plannerStrategy`) and JSON text (`filesAdded`). A string that is a whole JSON number
    becomes that integer (within 64 bits) or finite float; anything else is kept as written."""
    if type(value) is str:
        if value.isdigit() and value.isascii() and len(value) <= 18 and (value[0] != "0" or len(value) == 1):
            return int(value)  # the common case, cheaply: ASCII digits, no leading zero, within 64 bits
        m = _JSON_NUMBER.fullmatch(value) if len(value) <= _MAX_NUMBER_CHARS else None
        if m is not None:
            if m.group(1) is None and m.group(2) is None:
                n = int(value)
                return n if INT64_MIN <= n <= INT64_MAX else value
            f = float(value)
            return f if math.isfinite(f) else value
        return value
    if type(value) is int or type(value) is bool or value is None:
        return value
    return finite_json(value)


def decode_metrics(metrics: Any, seen: "Remembered[str, Any] | None" = None) -> dict[str, Any] | None:
    """commitInfo.operationMetrics with numbers as numbers (`metric_value`); None unless an object.
    `seen`: `Remembered(metric_value)`, shared by a loop (`commit_info_columns`; "0" and "1" recur)."""
    if not isinstance(metrics, dict):
        return None
    if seen is None:
        return {k: metric_value(v) for k, v in metrics.items()}  # JSON object keys are strings
    # Strings only go through `seen`: a key of True would find the entry of 1.
    return {k: seen[v] if type(v) is str else metric_value(v) for k, v in metrics.items()}


def parameters_text(params: Any, seen: "Remembered[tuple[tuple[str, str], ...], str]") -> str:
    """`decode_parameters(params)` as JSON text, each distinct set of string parameters decoded
    once per loop (`seen`: `Remembered(parameters_json)`): an append's `mode` and `partitionBy`
    recur in most commits of a log."""
    if type(params) is not dict or not all(type(v) is str for v in params.values()):
        return json.dumps(decode_parameters(params))  # strings only: a key holding True would find the entry of 1
    return seen[tuple(params.items())]


def parameters_json(items: tuple[tuple[str, str], ...]) -> str:
    """The JSON text of string parameters given as their (key, value) pairs."""
    return json.dumps(decode_parameters(dict(items)))


# Distinct parameter sets and metric strings a loop remembers; past it each is decoded afresh
# (a streaming query's epochId never repeats: a lookup more per commit, no memory).
MEMO_ENTRIES = 4096

K = TypeVar("K")
V = TypeVar("V")


class Remembered(dict[K, V]):
    """`compute(key)` for `self[key]`, remembered for the first MEMO_ENTRIES keys asked: a hit is
    a plain dict lookup, only a miss runs Python (`__missing__`)."""

    def __init__(self, compute: Callable[[K], V]) -> None:
        super().__init__()
        self.compute = compute
        self.room = MEMO_ENTRIES  # read now: a test may set the module's figure

    def __missing__(self, key: K) -> V:
        value = self.compute(key)
        if len(self) < self.room:
            self[key] = value
        return value


def other_commit_info(ci: dict[str, Any]) -> dict[str, Any]:
    """The commitInfo keys without a field of their own, values as written (operationMetrics or
    tags that are not JSON objects land here too, rather than being dropped)."""
    return {k: finite_json(v) for k, v in ci.items()
            if k not in COMMIT_INFO_KEYS or (k in _OBJECT_KEYS and v is not None and not isinstance(v, dict))}


def finite_json(value: Any) -> Any:
    """`value` with every non-finite float (Python's JSON reader accepts NaN and Infinity, and
    reads 1e400 as inf) replaced by its text, so that it can be written back as strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite_json(v) for v in value]
    return value


def concat_columns(a: dict[str, list[Any]], b: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """`commit_info_columns` of two halves, joined (forensics/runtime/halves.py)."""
    for name, col in b.items():
        a[name].extend(col)
    return a


def commit_info_columns(raws: list[str | None], has_ci: list[bool | None]) -> dict[str, list[Any]]:
    """The commit index's columns read from each commitInfo's JSON text (the typed ones come from
    Spark). Plain Python over plain lists: a long log's second half runs in another process.

    Parameter sets and metric strings that recur are decoded once (`parameters_text`,
    `decode_metrics`)."""
    names = ("operation_parameters", "user_id", "user_name", "job", "notebook", "cluster_id", "operation_metrics",
             "user_metadata", "tags", "client_version", "other_commit_info")
    cols: dict[str, list[Any]] = {n: [] for n in names}
    appends = [cols[n].append for n in names]
    dumps = json.dumps
    plain_keys = COMMIT_INFO_KEYS
    params_seen: Remembered[tuple[tuple[str, str], ...], str] = Remembered(parameters_json)
    metric_seen: Remembered[str, Any] = Remembered(metric_value)
    for raw, present in zip(raws, has_ci):
        ci = parse_commit_info(raw)
        get = ci.get
        params = get("operationParameters")
        metrics = get("operationMetrics")
        tags = get("tags")
        if present and (not plain_keys.issuperset(ci) or not isinstance(metrics, (dict, type(None)))
                        or not isinstance(tags, (dict, type(None)))):
            other: str | None = dumps(other_commit_info(ci))
        else:
            other = "{}" if present else None
        params_text = parameters_text(params, params_seen) if params else "{}"
        metrics_text = dumps(decode_metrics(metrics, metric_seen)) if isinstance(metrics, dict) else None
        job, notebook = get("job"), get("notebook")
        values = (
            params_text,
            _str(get("userId")),
            _str(get("userName")),
            None if job is None else dumps(job),
            None if notebook is None else dumps(notebook),
            _str(get("clusterId")),
            metrics_text,
            _str(get("userMetadata")),
            dumps(finite_json(tags)) if isinstance(tags, dict) else None,
            _str(get("clientVersion")),
            other,
        )
        for append, value in zip(appends, values):
            append(value)
    return cols


def _str(v: Any) -> str | None:
    return None if v is None else str(v)
