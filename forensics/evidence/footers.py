"""Which versions an aborted attempt can have read, from its orphan files' Parquet footers.

Two bounds that need no file times (a git clone or a copy loses them):
- the file it rewrote: a copy-on-write DELETE or UPDATE writes each file it touches again, minus
  (or with changed) rows, so the orphan's row count is at most the original's and most of its
  columns' min/max ranges sit inside the original's statistics in the log. When exactly one
  committed file of the same partition fits best, the attempt read it: its readVersion lies in
  that file's lifetime [added, removed);
- the partition it compacted: an OPTIMIZE's output holds exactly the rows of the files it
  compacted, so the versions at which the partition's active files add up to the orphan's row
  count are the ones it can have read;
- its schema: a writer writes the columns of the snapshot it read, so the orphan's data columns
  are the table's at its readVersion (a column added later is missing from it).
Inferred, and said so; files that cannot be opened here (an object store) give no bound.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import polars as pl

from forensics.evidence.walk import DataFile
from forensics.log.delta_log import DeltaLog
from forensics.sets.commit_sets import StateIndex
from forensics.sets.lifetimes import INF, FileLifetimes


@dataclass(frozen=True)
class Rewrite:
    """The committed file an orphan most likely rewrote, and the readVersions that allows."""

    orphan: str
    original: str
    added: int
    removed: int | None  # the version that removed it, None while it is still active
    matched_columns: tuple[str, ...]

    @property
    def read_versions(self) -> range:
        """The attempt read the original, so it read a version in [added, removed)."""
        return range(self.added, self.removed if self.removed is not None else 2**62)

    def describe(self) -> str:
        until = f"v{self.removed - 1}" if self.removed is not None else "the latest version"
        return (f"its file {self.orphan} holds rows of {self.original} (fewer or as many rows; {', '.join(self.matched_columns)} "
                f"within that file's ranges in the log), so it read a version from v{self.added} to {until}")


@lru_cache(maxsize=256)
def _footer(path: str, size: int, mtime_ms: int) -> tuple[int, dict[str, tuple[Any, Any]], frozenset[str]] | None:
    """(rows, column -> (min, max), column names) from a local Parquet file's footer, read once per
    file version (size and mtime are part of the key); None when it cannot be read."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(path)
        names = frozenset(meta.schema.to_arrow_schema().names)
    except (OSError, ValueError):
        return None
    ranges: dict[str, tuple[Any, Any]] = {}
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        for c in range(rg.num_columns):
            col = rg.column(c)
            st = col.statistics
            if st is None or not st.has_min_max:
                continue
            lo, hi = ranges.get(col.path_in_schema, (st.min, st.max))
            try:
                ranges[col.path_in_schema] = (min(lo, st.min), max(hi, st.max))
            except TypeError:
                continue
    return meta.num_rows, ranges, names


def _inside(lo: Any, hi: Any, flo: Any, fhi: Any) -> bool:
    try:
        return flo <= lo and hi <= fhi
    except TypeError:
        return False


def _local_footer(log: DeltaLog, orphan: DataFile) -> tuple[int, dict[str, tuple[Any, Any]], frozenset[str]] | None:
    root = log.location
    if "://" in root and not root.startswith("file:"):
        return None  # data files of an object-store table are not fetched
    return _footer(os.path.join(root.removeprefix("file://").removeprefix("file:"), orphan.path), orphan.size, orphan.mtime_ms)


def rewritten_file(log: DeltaLog, lifetimes: FileLifetimes, orphan: DataFile) -> Rewrite | None:
    """The one committed file of the orphan's directory that its footer fits best, or None."""
    got = _local_footer(log, orphan)
    if got is None or lifetimes.frame.height == 0:
        return None
    rows, ranges, _ = got
    folder = os.path.dirname(orphan.path)
    same_dir = lifetimes.frame.filter(pl.col("kind") == "add") if "kind" in lifetimes.frame.columns else lifetimes.frame
    best: list[tuple[int, Rewrite]] = []
    for r in same_dir.select(["cpath", "stats", "size", "added", "removed"]).iter_rows(named=True):
        if not r["cpath"] or os.path.dirname(r["cpath"]) != folder or r["cpath"] == orphan.path or not r["stats"]:
            continue
        try:
            st = json.loads(r["stats"])
        except ValueError:
            continue
        n = st.get("numRecords")
        if not isinstance(n, int) or rows > n:
            continue  # too small to be its source
        mins, maxs = st.get("minValues") or {}, st.get("maxValues") or {}
        shared = [c for c in ranges if c in mins and c in maxs]
        if rows == n and all(ranges[c] == (mins[c], maxs[c]) for c in shared):
            continue  # the same rows again: a re-run's output, not the file it rewrote
        fits = tuple(c for c in shared if _inside(*ranges[c], mins[c], maxs[c]))
        if not fits or 2 * len(fits) < len(shared):
            continue
        removed = None if r["removed"] is None or r["removed"] >= INF else int(r["removed"])
        best.append((len(fits), Rewrite(orphan.path, r["cpath"], int(r["added"]), removed, fits)))
    if not best:
        return None
    top = max(score for score, _ in best)
    winners = [rw for score, rw in best if score == top]
    return winners[0] if len(winners) == 1 else None


@dataclass(frozen=True)
class ReadBounds:
    """The readVersions an attempt's files allow, and the evidence for each bound, in words."""

    versions: frozenset[int]
    why: tuple[str, ...]


def read_bounds(log: DeltaLog, state: StateIndex, files: list[DataFile]) -> ReadBounds | None:
    """Versions the attempt can have read, from its rewritten file and its schema; None: no bound."""
    allowed = set(log.versions)
    whys: list[str] = []
    for f in files:
        rw = rewritten_file(log, state.lifetimes, f)
        if rw is not None:
            allowed &= set(v for v in rw.read_versions if v in allowed) if rw.removed is not None else {v for v in allowed if v >= rw.added}
            whys.append(rw.describe())
            break
    else:
        compacted = _compacted_versions(log, state.lifetimes, files, allowed)
        if compacted:
            allowed, why = compacted
            whys.append(why)
    names = next((got[2] for f in files if (got := _local_footer(log, f)) is not None), None)
    if names is not None:
        fits = {v for v in allowed if _data_columns(state, v) in (names, None)}
        if fits and fits != allowed:
            lost = sorted(allowed - fits)
            whys.append(f"its files have the columns of the table before v{lost[-1] + 1 if lost[-1] < min(fits) else min(allowed - fits)} "
                        f"changed them ({', '.join(sorted(names))}), so it read a version from v{min(fits)} to v{max(fits)}")
            allowed = fits
    if not whys or not allowed:
        return None
    return ReadBounds(frozenset(allowed), tuple(whys))


def _data_columns(state: StateIndex, version: int) -> set[str] | None:
    """The columns a writer at `version` puts in data files (stored names, partition columns left out)."""
    schema = state.schema_at(version)
    if not schema.columns:
        return None
    return {c.stored_name for c in schema.columns if not schema.is_partition_column(c.name)}


MAX_VERSIONS_SUMMED = 5_000  # versions whose partition row totals are compared (bounded work)


def _compacted_versions(log: DeltaLog, lifetimes: FileLifetimes, files: list[DataFile],
                        allowed: set[int]) -> tuple[set[int], str] | None:
    """Versions at which the orphans' partition held exactly the orphans' rows (a compaction of it)."""
    folders: dict[str, int] = {}
    for f in files:
        got = _local_footer(log, f)
        if got is None:
            return None
        folders[os.path.dirname(f.path)] = folders.get(os.path.dirname(f.path), 0) + got[0]
    if len(folders) != 1 or not lifetimes.frame.height or len(allowed) > MAX_VERSIONS_SUMMED:
        return None
    (folder, rows), = folders.items()
    spans = []
    for r in lifetimes.frame.select(["cpath", "stats", "added", "removed"]).iter_rows(named=True):
        if not r["cpath"] or os.path.dirname(r["cpath"]) != folder or r["cpath"] in {f.path for f in files}:
            continue
        try:
            n = json.loads(r["stats"] or "{}").get("numRecords")
        except ValueError:
            return None
        if not isinstance(n, int):
            return None  # a file without a row count: the totals cannot be compared
        spans.append((int(r["added"]), int(r["removed"]), n))
    hits = {v for v in allowed if sum(n for a, z, n in spans if a <= v < z) == rows}
    if not hits or hits == allowed:
        return None
    return hits, (f"its file holds {rows} rows, exactly what {folder or 'the table root'} held at "
                  f"v{', v'.join(map(str, sorted(hits)[:5]))}{' ...' if len(hits) > 5 else ''}: a compaction of it as it was then")
