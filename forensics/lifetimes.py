"""File lifetimes: for every added file, the half-open version interval in which it was active.

Replaying thousands of concurrency windows must not rebuild a snapshot per readVersion.
One pass over (base checkpoint + commits) gives each (path, DV id) its [added, removed)
interval; "files active at R" is then an interval query (spec §12: snapshot_R).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from forensics.log.snapshot import file_action_from_row, state_actions, with_keys
from forensics.log.table import TableLog
from forensics.model import FileAction, Finding

INF = 1 << 62


@dataclass
class FileLifetimes:
    """`frame` has the action columns plus cpath, dv_id, added (int) and removed (int, INF if active)."""

    frame: pl.DataFrame
    known_from: int  # state is exact for versions >= this (the base checkpoint, or 0)
    findings: list[Finding]

    @classmethod
    def build(cls, log: TableLog, upto: int | None = None) -> "FileLifetimes":
        findings: list[Finding] = []
        upto = log.latest_version if upto is None else upto
        if upto is None:
            return cls(pl.DataFrame(), 0, findings)
        base = _earliest_base(log, upto)
        acts, _oth, cp = state_actions(log, base, findings) if base is not None else (log.actions.head(0), None, None)
        later = log.actions.filter(pl.col("version") > (base if base is not None else -1))
        allacts = pl.concat([acts, later], how="vertical_relaxed") if base is not None else log.actions
        known_from = (cp if cp is not None else 0) if base is not None else (min(log.versions) if log.versions else 0)
        keyed = with_keys(allacts.filter(pl.col("kind").is_in(["add", "remove"])), log.location).sort(["version", "line"])
        keyed = keyed.with_columns(
            pl.col("version").shift(-1).over(["cpath", "dv_id"]).alias("_next"),
        )
        adds = keyed.filter(pl.col("kind") == "add").with_columns(
            pl.col("version").alias("added"),
            pl.col("_next").fill_null(INF).alias("removed"),
        ).drop("_next")
        return cls(adds, known_from, findings)

    def active_at(self, version: int) -> pl.DataFrame:
        if self.frame.height == 0:
            return self.frame
        return self.frame.filter((pl.col("added") <= version) & (pl.col("removed") > version))

    def files_at(self, version: int) -> list[FileAction]:
        return [file_action_from_row(r) for r in self.active_at(version).iter_rows(named=True)]

    def exact_at(self, version: int) -> bool:
        return version >= self.known_from


def _earliest_base(log: TableLog, upto: int) -> int | None:
    """The earliest version whose state can be reconstructed (0, or the oldest usable checkpoint)."""
    have = set(log.versions)
    if 0 in have and all(v in have for v in range(0, upto + 1)):
        return 0
    for cp in sorted((c for c in log.listing.checkpoints if c.complete and c.version <= upto), key=lambda c: c.version):
        if all(v in have for v in range(cp.version + 1, upto + 1)):
            return cp.version
    return None
