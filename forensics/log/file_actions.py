"""Rows of a file-actions frame as `FileAction` records, built from column lists.

Replay turns hundreds of thousands of rows into FileActions (a 100k-commit log: ~300k). Doing
it through `DataFrame.row(i, named=True)` and one `json.loads` per partitionValues text cost
~4 s there; reading each column once and decoding each distinct partitionValues text once
(a table has few partitions) is several times cheaper. The one place rows become FileActions.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl

from forensics.model import DeletionVectorRef, FileAction, partition_values_of

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
        self._chunks: dict[int, dict[str, list[Any]]] = {}
        self._memo: dict[int, FileAction] = {}
        self._pv: dict[str, dict] = {}
        self._objs: np.ndarray | None = None
        self._built: np.ndarray | None = None

    def __len__(self) -> int:
        return self._frame.height

    def _columns(self, i: int) -> tuple[dict[str, list[Any]], int]:
        """The columns of row i's chunk as Python lists, and i's place in them. Only the last
        `KEEP_CHUNKS` chunks used are kept: a replay reaches each row once, moving forward, and a
        1,000,000-commit log's file lifetimes as lists were a gigabyte and more."""
        k = i // CHUNK
        cols = self._chunks.pop(k, None)
        if cols is None:
            part = self._frame.slice(k * CHUNK, CHUNK)
            cols = {c: (part[c].to_list() if c in part.columns else [None] * part.height) for c in _COLUMNS}
            if len(self._chunks) >= KEEP_CHUNKS:
                del self._chunks[next(iter(self._chunks))]
        self._chunks[k] = cols  # last used last
        return cols, i - k * CHUNK

    def __getitem__(self, i: int) -> FileAction:
        fa = self._memo.get(i)
        if fa is None:
            fa = self._memo[i] = self._build(i)
        return fa

    def all(self) -> list[FileAction]:
        return [self[i] for i in range(self._frame.height)]

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
        c, i = self._columns(row)
        dv = None
        if c["dv_storage_type"][i] is not None:
            dv = DeletionVectorRef(c["dv_storage_type"][i], c["dv_path"][i] or "", c["dv_offset"][i], c["dv_size"][i], c["dv_cardinality"][i])
        return FileAction(
            version=c["version"][i],
            kind=c["kind"][i],
            path=c["path"][i],
            partition_values=self._partition_values(c["partition_values"][i]),
            size=c["size"][i],
            data_change=c["data_change"][i],
            stats=c["stats"][i],
            deletion_vector=dv,
            modification_time=c["modification_time"][i],
            deletion_timestamp=c["deletion_timestamp"][i],
            tags=_tags(c["tags"][i]),
        )

    def _partition_values(self, text: str | None) -> Any:
        if not text:
            return {}
        hit = self._pv.get(text)
        if hit is None:
            hit = self._pv[text] = partition_values_of(text)
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
    """Every row of `frame` as a FileAction, in frame order."""
    return FileActionRows(frame).all()
