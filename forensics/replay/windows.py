"""Replay every concurrency window of a table through the rules of the engine that wrote it.

A commit at version V with readVersion R < V-1 was checked against the winning commits
R+1..V-1 (conflict-rules §1.6: readVersion is never rewritten on retry). Each window's verdict
(clean, reordered, anomaly, skipped) is `forensics.replay.verdict`'s; this module gathers them
into the table's report, a long log's later windows replayed by a second process
(`forensics.replay.second`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from collections.abc import Iterable
from typing import Any

import polars as pl

from forensics.runtime.gc_tuning import fewer_collections
from forensics.log.delta_log import DeltaLog
from forensics.model import Finding
from forensics.replay.second import replay_in_two
from forensics.replay.verdict import CommitVerdict, concurrency_windows
from forensics.schemas import camel_keys
from forensics.sets.commit_sets import StateIndex


@dataclass(frozen=True)
class ReorderCount:
    """The one definition of "reorders" that stats, replay and the TUI share: a reordered commit
    passed only because one or more winners were forgiven (verdict `reordered`; a commit that
    aborts anyway is an anomaly, not a reorder); each forgiven winner is one pair (conflict-rules §6)."""

    commits: int
    forgiven_pairs: int

    @classmethod
    def of(cls, items: Iterable[Any]) -> ReorderCount:
        """From anything with `verdict` and `reordered_before` (CommitVerdict, a timeline Span)."""
        reordered = [x for x in items if x.verdict == "reordered"]
        return cls(len(reordered), sum(len(x.reordered_before) for x in reordered))

    def to_dict(self) -> dict[str, int]:
        return {"reordered_commits": self.commits, "forgiven_pairs": self.forgiven_pairs}

    def phrase(self) -> str:
        return f"reordered commits: {self.commits} ({self.forgiven_pairs} forgiven pair{'' if self.forgiven_pairs == 1 else 's'})"


@dataclass
class ReplayReport:
    """Every concurrent commit's verdict, replayed with the engine's conflict rules, with every check it
    ran."""
    location: str
    verdicts: dict[int, CommitVerdict]
    total_commits: int
    not_concurrent: int
    rules: str | None
    isolation_level: str | None
    findings: list[Finding] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        """How many verdicts of each kind: clean, reordered, anomaly, skipped."""
        c = {"clean": 0, "reordered": 0, "anomaly": 0, "skipped": 0}
        for v in self.verdicts.values():
            c[v.verdict] = c.get(v.verdict, 0) + 1
        return c

    @property
    def reorders(self) -> ReorderCount:
        """Reordered commits and the forgiven (commit, winner) pairs behind them."""
        return ReorderCount.of(self.verdicts.values())

    def to_dict(self) -> dict[str, Any]:
        """The `replay --json` document (camelCase keys, without `schema_version`)."""
        return {
            "table": self.location,
            "rules": self.rules,
            "isolationLevel": self.isolation_level,
            "totalCommits": self.total_commits,
            "windows": len(self.verdicts),
            "notConcurrent": self.not_concurrent,
            "counts": self.counts,
            **camel_keys(self.reorders.to_dict()),
            "commits": [v.to_dict() for _, v in sorted(self.verdicts.items())],
        }

    def to_frame(self) -> pl.DataFrame:
        """One row per replayed commit (the `commits` of `to_dict`), for notebooks and filters."""
        rows = [v.to_dict() for _, v in sorted(self.verdicts.items())]
        for r in rows:  # nested values as JSON text: one column type whatever each row holds
            r["partition"] = json.dumps(r["partition"]) if r["partition"] is not None else None
        return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()


def replay_table(
    log: DeltaLog,
    *,
    rules: str | None = None,
    isolation_level: str | None = None,
    versions: list[int] | None = None,
    state: StateIndex | None = None,
) -> ReplayReport:
    """Replay every window with a stale readVersion (R < V-1)."""
    with fewer_collections():
        return _replay_table(log, rules, isolation_level, versions, state)


def _replay_table(log: DeltaLog, rules: str | None, isolation_level: str | None, versions: list[int] | None,
                  state: StateIndex | None) -> ReplayReport:
    state = state or StateIndex(log)
    windows, not_concurrent = concurrency_windows(log, versions)
    verdicts = replay_in_two(log, state, windows, rules, isolation_level)
    return ReplayReport(
        location=log.location,
        verdicts=verdicts,
        total_commits=log.commits.height,
        not_concurrent=not_concurrent,
        rules=rules,
        isolation_level=isolation_level,
        findings=list(state.lifetimes.findings),
    )
