"""Rows of a file-actions frame as `FileAction` records, built from column lists.

Replay turns hundreds of thousands of rows into FileActions (a 100k-commit log: ~300k). Doing
it through `DataFrame.row(i, named=True)` and one `json.loads` per partitionValues text cost
~4 s there; reading each column once and decoding each distinct partitionValues text once
(a table has few partitions) is several times cheaper. The one place rows become FileActions.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import numpy as np
import polars as pl

from forensics.model import DeletionVectorRef, FileAction, new_file_action, partition_values_of

_COLUMNS = (
    "version", "kind", "path", "partition_values", "size", "data_change", "stats", "tags",
    "dv_storage_type", "dv_path", "dv_offset", "dv_size", "dv_cardinality",
    "modification_time", "deletion_timestamp",
)


CHUNK = 4096
KEEP_CHUNKS = 32


class FileActionRows:
    """FileActions of a frame's rows, each built at most once and only when asked for."""

    def __init__(self, frame: pl.DataFrame):
        self._frame = frame
        self._chunks: dict[int, list[list[Any]]] = {}
        self._memo: dict[int, FileAction] = {}
        self._pv: dict[str, dict] = {}
        self._objs: np.ndarray | None = None
        self._built: np.ndarray | None = None

    def __len__(self) -> int:
        return self._frame.height

    def _columns(self, i: int) -> tuple[list[list[Any]], int]:
        """The columns of row i's chunk as Python lists, and i's place in them. Only the last
        `KEEP_CHUNKS` chunks used are kept: a replay reaches each row once, moving forward, and a
        1,000,000-commit log's file lifetimes as lists were a gigabyte and more."""
        k = i // CHUNK
        cols = self._chunks.pop(k, None)
        if cols is None:
            cols = _chunk_columns(self._frame.slice(k * CHUNK, CHUNK))
            if len(self._chunks) >= KEEP_CHUNKS:
                del self._chunks[next(iter(self._chunks))]
        self._chunks[k] = cols  # last used last
        return cols, i - k * CHUNK

    def __getitem__(self, i: int) -> FileAction:
        fa = self._memo.get(i)
        if fa is None:
            fa = self._memo[i] = self._build(i)
        return fa

    def take(self, rows: np.ndarray) -> list[FileAction]:
        """The FileActions of many rows at once (replay asks for ~500 per window, 10k windows):
        built ones come out of an object array in one vectorised step."""
        if self._objs is None:
            self._objs = np.empty(self._frame.height, dtype=object)
            self._built = np.zeros(self._frame.height, dtype=bool)
        built = self._built
        assert built is not None
        for i in rows[~built[rows]].tolist():
            self._objs[i] = self[i]
        built[rows] = True
        return self._objs[rows].tolist()

    def _build(self, row: int) -> FileAction:
        cols, i = self._columns(row)
        return _file_action(self._pv, *(col[i] for col in cols))


def _chunk_columns(part: pl.DataFrame) -> list[list[Any]]:
    """`part`'s `_COLUMNS` as Python lists, in that order (a column the frame lacks: all None)."""
    return [part[c].to_list() if c in part.columns else [None] * part.height for c in _COLUMNS]


def _file_action(pv: dict[str, Any], version: Any, kind: Any, path: Any, partition_values: Any, size: Any,
                 data_change: Any, stats: Any, tags: Any, dv_storage_type: Any, dv_path: Any, dv_offset: Any,
                 dv_size: Any, dv_cardinality: Any, modification_time: Any, deletion_timestamp: Any) -> FileAction:
    """One row (its values in `_COLUMNS` order) as a FileAction; `pv` remembers each distinct
    partitionValues text decoded (a table has few partitions)."""
    dv = None
    if dv_storage_type is not None:
        dv = DeletionVectorRef(dv_storage_type, dv_path or "", dv_offset, dv_size, dv_cardinality)
    return new_file_action(version, kind, path, _partition_values(pv, partition_values), size, data_change, stats, dv,
                           modification_time, deletion_timestamp, _tags(tags))


def _partition_values(memo: dict[str, Any], text: str | None) -> Any:
    if not text:
        return {}
    hit = memo.get(text)
    if hit is None:
        hit = memo[text] = partition_values_of(text)
    # A copy per action: callers may treat partitionValues as their own.
    return dict(hit) if isinstance(hit, dict) else hit


def _tags(text: str | None) -> Any:
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def file_actions(frame: pl.DataFrame) -> list[FileAction]:
    """Every row of `frame` as a FileAction, in frame order: a chunk's columns at a time, each
    row built once, nothing remembered per row (a write set's or a snapshot's files)."""
    pv: dict[str, Any] = {}
    make = partial(_file_action, pv)
    out: list[FileAction] = []
    for start in range(0, frame.height, CHUNK):
        out.extend(map(make, *_chunk_columns(frame.slice(start, CHUNK))))
    return out
