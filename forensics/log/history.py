"""The `history` rows: one per retained version, from the commit index, in the JSON contract's names.

The whole commitInfo is there: its fields by name, operationMetrics with numbers as numbers
whatever the writer (forensics.log.params.metric_value), and every key without a field of its
own under `otherCommitInfo`, so nothing a user needs is only in DESCRIBE HISTORY.

Built column-wise in polars (the index already holds every field), so 100k versions need no
per-row Python; `history_rows` decodes the same objects for views that render rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import polars as pl

from forensics.log.params import INT64_MAX, INT64_MIN
from forensics.safe import ascii_json
from forensics.times import iso_key, iso_utc, iso_utc_expr

# (JSON key, index column, how the value is written): "str"/"int"/"bool" are encoded by polars,
# "json" columns already hold JSON text (written by json.dumps or Spark) and go out as they are,
# "iso" is the epoch-ms column as ISO 8601 UTC (forensics.times.iso_utc).
_FIELDS: list[tuple[str, str, str]] = [
    ("version", "version", "int"),
    ("timestamp", "timestamp", "int"),
    (iso_key("timestamp"), "timestamp", "iso"),
    ("inCommitTimestamp", "in_commit_timestamp", "int"),
    (iso_key("inCommitTimestamp"), "in_commit_timestamp", "iso"),
    ("operation", "operation", "str"),
    ("operationParameters", "operation_parameters", "json"),
    ("readVersion", "read_version", "int"),
    ("isolationLevel", "isolation_level", "str"),
    ("isBlindAppend", "is_blind_append", "bool"),
    ("txnId", "txn_id", "str"),
    ("engineInfo", "engine_info", "str"),
    ("userName", "user_name", "str"),
    ("userId", "user_id", "str"),
    ("job", "job", "json"),
    ("notebook", "notebook", "json"),
    ("clusterId", "cluster_id", "str"),
    ("operationMetrics", "operation_metrics", "json"),
    ("userMetadata", "user_metadata", "str"),
    ("tags", "tags", "json"),
    ("clientVersion", "client_version", "str"),
    ("otherCommitInfo", "other_commit_info", "json"),
    ("numAddFiles", "num_add", "int"),
    ("numRemoveFiles", "num_remove", "int"),
    ("numCdcFiles", "num_cdc", "int"),
    ("partitionsTouched", "partitions_touched", "json"),
    ("hasMetadata", "has_metadata", "bool"),
    ("hasProtocol", "has_protocol", "bool"),
    ("hasTxn", "has_txn", "bool"),
    ("hasDomainMetadata", "has_domain_metadata", "bool"),
    ("txnAppIds", "txn_app_ids", "json"),
    ("source", "source", "str"),
]


def _in_range(commits: pl.DataFrame, start: int | None, end: int | None) -> pl.DataFrame:
    df = commits
    if start is not None:
        df = df.filter(pl.col("version") >= start)
    if end is not None:
        df = df.filter(pl.col("version") <= end)
    return df.sort("version")


def history_rows(commits: pl.DataFrame, start: int | None = None, end: int | None = None) -> list[dict[str, Any]]:
    """The `history --json` objects (docs/json.md), for the table view and callers."""
    out = []
    for r in _in_range(commits, start, end).iter_rows(named=True):
        row = {}
        for key, col, how in _FIELDS:
            v = r[col]
            if how == "json":
                v = _loads(v) if (col != "operation_parameters" or r["has_commit_info"]) else None
            elif how == "iso":
                v = iso_utc(v)
            row[key] = v
        out.append(row)
    return out


# Rows encoded per piece of `history --json`: a million versions make a 1 GB document, built
# whole it took several times that in memory (the rows, their list, the joined text).
HISTORY_JSON_ROWS = 50_000


def history_json(commits: pl.DataFrame, start: int | None = None, end: int | None = None,
                 schema_version: str | None = None) -> str:
    """The `history --json` text (`history_json_parts` joined)."""
    return "".join(history_json_parts(commits, start, end, schema_version))


def history_json_parts(commits: pl.DataFrame, start: int | None = None, end: int | None = None,
                       schema_version: str | None = None, *, rows_per_part: int = HISTORY_JSON_ROWS) -> Iterator[str]:
    """The `history --json` text in pieces of `rows_per_part` rows, built column-wise: the same
    objects as `history_rows`, without decoding and re-encoding every stored JSON value in Python
    (4x faster on 20k versions). `schema_version` (the JSON contract's) leads each object when given."""
    parts: list[pl.Expr] = []
    head = "{" if schema_version is None else "{" + json.dumps("schema_version") + ": " + json.dumps(schema_version) + ", "
    for i, (key, col, how) in enumerate(_FIELDS):
        parts.append(pl.lit((head if i == 0 else ", ") + json.dumps(key) + ": "))
        c = pl.col(col)
        if how == "json":
            if col == "operation_parameters":
                c = pl.when(pl.col("has_commit_info")).then(c)
            parts.append(c.fill_null("null"))
        elif how == "iso":
            parts.append(pl.concat_str([pl.lit('"'), iso_utc_expr(c), pl.lit('"')]).fill_null("null"))
        elif how == "str":
            # One-field struct through polars' JSON encoder: `{"v":"..."}` -> `"..."`.
            parts.append(pl.struct(c.alias("v")).struct.json_encode().str.slice(5).str.strip_suffix("}"))
        elif how == "bool":
            parts.append(pl.when(c.is_null()).then(pl.lit("null")).when(c).then(pl.lit("true")).otherwise(pl.lit("false")))
        else:
            parts.append(c.cast(pl.Utf8).fill_null("null"))
    parts.append(pl.lit("}"))
    row = pl.concat_str(parts).alias("j")
    df = _in_range(commits, start, end)
    yield "["
    for i in range(0, df.height, rows_per_part):
        lines = df.slice(i, rows_per_part).select(row)["j"]
        yield ("" if i == 0 else ", ") + ascii_json(", ".join(lines.to_list()))
    yield "]"


def _loads(s: str | None) -> Any:
    if s is None:
        return None
    try:
        return json.loads(s)
    except ValueError:
        return None


def history_frame(commits: pl.DataFrame, start: int | None = None, end: int | None = None) -> pl.DataFrame:
    """The same fields as a DataFrame, built column-wise. JSON-valued fields become structs:
    operationMetrics, tags and otherCommitInfo with one typed field per key (`map_series`: integer
    metrics are Int64 whatever the writer), the others as polars' JSON reader infers them (a map
    it cannot type, such as parameters that are a list in one commit and text in another, falls
    back to `map_series`)."""
    df = _in_range(commits, start, end)
    if not df.height:
        return pl.DataFrame(schema={**{k: pl.Null for k, _, _ in _FIELDS}, "committedAt": pl.Datetime("ms", "UTC")})
    cols: list[pl.Series] = []
    for key, col, how in _FIELDS:
        if how == "json":
            c = df[col] if col != "operation_parameters" else df.select(pl.when(pl.col("has_commit_info")).then(pl.col(col))).to_series()
            s = map_series(key, [_loads(x) for x in c.to_list()]) if key in _TYPED_MAPS else _decoded(key, c)
        elif how == "iso":
            s = df.select(iso_utc_expr(pl.col(col))).to_series()
        else:
            s = df[col]
        cols.append(s.alias(key))
    # Python's time (issue "results made for code"): the commit's time as DESCRIBE HISTORY shows it
    # (inCommitTimestamp where the table has it, else commitInfo's timestamp), an aware UTC datetime.
    cols.append(df.select(pl.coalesce(pl.col("in_commit_timestamp"), pl.col("timestamp")).cast(pl.Datetime("ms", "UTC")))
                .to_series().alias("committedAt"))
    return pl.DataFrame(cols)


# Maps whose keys vary by engine and operation and whose values a user computes with.
_TYPED_MAPS = ("operationMetrics", "tags", "otherCommitInfo")


def _decoded(key: str, texts: pl.Series) -> pl.Series:
    try:
        return texts.str.json_decode(infer_schema_length=None)
    except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError):
        values = [_loads(x) for x in texts.to_list()]
        if all(v is None or isinstance(v, dict) for v in values):
            return map_series(key, values)
        return pl.Series(key, [None if v is None else json.dumps(v) for v in values], dtype=pl.Utf8)


def map_series(name: str, values: list[Any]) -> pl.Series:
    """A struct column with one field per key seen in any row, each typed from all its values:
    Boolean, Int64 (integers within 64 bits), Float64 (numbers), String (text); a key whose
    values mix kinds, or hold lists or objects, is String holding each value's JSON text (a text
    value stays itself). A row without the map is null; a row without the key has it null."""
    seen: dict[str, list[Any]] = {}
    for m in values:
        if isinstance(m, dict):
            for k, v in m.items():
                seen.setdefault(str(k), []).append(v)
    dtypes = {k: _field_type(vs) for k, vs in seen.items()}
    cells = [None if not isinstance(m, dict) else {k: _field_value(m.get(k), t) for k, t in dtypes.items()} for m in values]
    return pl.Series(name, cells, dtype=pl.Struct(dtypes))


def _field_type(values: list[Any]) -> Any:
    vs = [v for v in values if v is not None]
    if vs and all(isinstance(v, bool) for v in vs):
        return pl.Boolean
    if vs and all(isinstance(v, int) and not isinstance(v, bool) and INT64_MIN <= v <= INT64_MAX for v in vs):
        return pl.Int64
    if vs and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vs):
        return pl.Float64
    return pl.Utf8


def _field_value(v: Any, dtype: Any) -> Any:
    if v is None:
        return None
    if dtype == pl.Float64:
        return float(v)
    if dtype == pl.Utf8 and not isinstance(v, str):
        return json.dumps(v)
    return v
