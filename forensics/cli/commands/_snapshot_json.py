"""The `snapshot --json` text written column-wise from a `SnapshotFrame`.

On a 1M-file table, a FileAction and a dict per file and one json.dumps of the lot cost ~15 s
and ~1 GB. Here each field is JSON-encoded per column with polars and the file objects are
written in slices, so the text never exists whole in memory. The text is the one
`json.dumps(snapshot_json(...), ensure_ascii=True, default=str)` gives (docs/json.md):
strings that are not plain printable ASCII, partitionValues and any column of an unexpected
type go through json.dumps itself, so escaping is Python's, never a re-implementation.
"""

from __future__ import annotations

import json
from typing import Any, Callable, TextIO

import polars as pl

from forensics import SCHEMA_VERSION, SnapshotFrame
from forensics.safe import ascii_json
from forensics.model import partition_values_of

# Printable ASCII except `"` and `\`: the strings json.dumps(ensure_ascii=True) leaves as they are.
_PLAIN = r"^[ !#-\[\]-~]*$"
_CHUNK_ROWS = 100_000


def _dumps(v: Any) -> str:
    return json.dumps(v, ensure_ascii=True, default=str)


def _json_column(s: pl.Series) -> pl.Series:
    """Each value of `s` as JSON text (null -> `null`), exactly as json.dumps writes it."""
    if s.dtype == pl.Utf8:
        plain = s.str.contains(_PLAIN).fill_null(True)  # a null is written `null` below, not by json.dumps
        quoted = pl.concat_str([pl.lit('"'), pl.col("v"), pl.lit('"')])
        out = pl.DataFrame({"v": s}).select(quoted.alias("j"))["j"]
        if not plain.all():
            idx = (~plain).arg_true()
            out = out.scatter(idx, [_dumps(v) for v in s.gather(idx).to_list()])
        return out.fill_null("null")
    if s.dtype.is_integer():
        return s.cast(pl.Utf8).fill_null("null")
    if s.dtype == pl.Boolean:
        return s.replace_strict({True: "true", False: "false"}, default=None, return_dtype=pl.Utf8).fill_null("null")
    return pl.Series(s.name, [_dumps(v) for v in s.to_list()], dtype=pl.Utf8)


def _partition_values_json(s: pl.Series) -> pl.Series:
    """Decoded and re-encoded once per distinct text: a table has few partitions."""
    uniq = [u for u in s.unique().to_list() if u is not None]
    new = [_dumps(partition_values_of(u)) for u in uniq]
    out = s.replace_strict(uniq, new, default=None, return_dtype=pl.Utf8) if uniq else s.cast(pl.Utf8)
    return out.fill_null(_dumps({}))


_STRINGS = ("path", "dv_storage_type", "dv_path")  # the file columns written as JSON strings
_COLUMNS = {"version": pl.Int64, "path": pl.Utf8, "partition_values": pl.Utf8, "size": pl.Int64, "dv_storage_type": pl.Utf8,
            "dv_path": pl.Utf8, "dv_offset": pl.Int32, "dv_size": pl.Int32, "dv_cardinality": pl.Int64}


def _object(j: Callable[[str], pl.Expr], has_dv: pl.Expr) -> pl.Expr:
    """A file's JSON object, keys in the order of `snapshot_json`; `j(column)` is that field's
    JSON text (`dv_path` null counts as "": DeletionVectorRef(path_or_inline_dv=... or ""))."""
    dv = (
        pl.when(has_dv)
        .then(pl.concat_str([
            pl.lit('{"storageType": '), j("dv_storage_type"), pl.lit(', "pathOrInlineDv": '), j("dv_path"),
            pl.lit(', "offset": '), j("dv_offset"), pl.lit(', "sizeInBytes": '), j("dv_size"),
            pl.lit(', "cardinality": '), j("dv_cardinality"), pl.lit("}"),
        ]))
        .otherwise(pl.lit("null"))
    )
    return pl.concat_str([
        pl.lit('{"path": '), j("path"), pl.lit(', "partitionValues": '), pl.col("__pv"), pl.lit(', "size": '), j("size"),
        pl.lit(', "deletionVector": '), dv, pl.lit(', "addedInVersion": '), j("__added"), pl.lit("}"),
    ])


def _file_objects(files: pl.DataFrame, base_checkpoint: int | None) -> pl.Series:
    """One JSON object text per row: one polars select for rows whose strings are plain (all but
    never), each field through json.dumps (`_json_column`) for the others."""
    files = files.with_columns(pl.lit(None, dtype=t).alias(n) for n, t in _COLUMNS.items() if n not in files.columns)
    added = pl.col("version") if base_checkpoint is None else \
        pl.when(pl.col("version") == base_checkpoint).then(None).otherwise(pl.col("version"))  # unknown for the base's files
    files = files.with_columns(_partition_values_json(files["partition_values"]).alias("__pv"), added.alias("__added"),
                               pl.col("dv_path").fill_null(""))
    has_dv = pl.col("dv_storage_type").is_not_null()

    def plain_json(name: str) -> pl.Expr:  # a number, or a string with nothing to escape
        e = pl.col(name)
        e = pl.concat_str([pl.lit('"'), e, pl.lit('"')]) if files.schema[name] == pl.Utf8 else e.cast(pl.Utf8)
        return e.fill_null("null")

    plain = pl.all_horizontal([pl.col(n).str.contains(_PLAIN).fill_null(True) for n in _STRINGS])
    out = files.select(_object(plain_json, has_dv).alias("o"), plain.alias("plain"))
    if out["plain"].all():
        return out["o"]
    idx = (~out["plain"]).arg_true()
    rest = files[idx]
    texts = rest.select("__pv", has_dv.alias("has_dv")).with_columns(
        _json_column(rest[n]).alias(f"j{n}") for n in ("path", "size", "dv_storage_type", "dv_path", "dv_offset", "dv_size",
                                                       "dv_cardinality", "__added"))
    return out["o"].scatter(idx, texts.select(_object(lambda n: pl.col(f"j{n}"), pl.col("has_dv")))[:, 0])


def write_snapshot_json(frame: SnapshotFrame, findings: list[dict[str, Any]], out: TextIO) -> None:
    """Write the `snapshot --json` line for `frame` (plus `findings`) to `out`."""
    out.write('{"schema_version": ' + _dumps(SCHEMA_VERSION) + ', "version": ' + _dumps(frame.version) + ', "files": [')
    files = frame.files
    for start in range(0, files.height, _CHUNK_ROWS):
        part = _file_objects(files.slice(start, _CHUNK_ROWS), frame.base_checkpoint)
        if start:
            out.write(", ")
        out.write(ascii_json(part.str.join(", ").item()))
    rest = {
        "protocol": frame.protocol.to_dict() if frame.protocol else None,
        "metadata": frame.metadata.to_dict() if frame.metadata else None,
        "appTransactions": frame.app_transactions,
        "domainMetadata": frame.domain_metadata,
        "baseCheckpoint": frame.base_checkpoint,
        "findings": findings,
    }
    out.write("], " + _dumps(rest)[1:] + "\n")
