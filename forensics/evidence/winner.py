"""Find the winning commit an error text names, in the log.

Strongest key first (conflict-rules §7.3, §7.4): the version (v4.1+ texts print it), the txnId of the
`Conflicting commit:` JSON, then its timestamp with operation, readVersion, engineInfo,
isolationLevel and isBlindAppend as tie-breakers. Several commits left ⇒ ambiguous, with the
candidates; never a silent guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from forensics.errortext import WinnerHint
from forensics.log.delta_log import DeltaLog


@dataclass
class WinnerMatch:
    """How the winner of a failed transaction was found in the log (by version, txnId, time and operation),
    the candidates, and whether it is ambiguous."""
    version: int | None
    candidates: list[int]
    how: str  # "version" | "txnId" | "timestamp+operation" | "timestamp" | "readVersion+operation" | "none"
    ambiguous: bool
    why: str
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The match as JSON: how, candidates, ambiguous, why."""
        return {"how": self.how, "candidates": self.candidates, "ambiguous": self.ambiguous, "why": self.why}


_TIE_BREAKERS = (
    ("operation", "operation"),
    ("read_version", "read_version"),
    ("engine_info", "engine_info"),
    ("isolation_level", "isolation_level"),
    ("is_blind_append", "is_blind_append"),
)


def _in_window(df: pl.DataFrame, window: tuple[int, int] | None) -> pl.DataFrame:
    if window is None:
        return df
    lo, hi = window
    return df.filter(pl.col("timestamp").is_null() | ((pl.col("timestamp") >= lo) & (pl.col("timestamp") <= hi)))


def _result(vs: list[int], how: str, what: str) -> WinnerMatch:
    vs = sorted(vs)
    if len(vs) == 1:
        return WinnerMatch(vs[0], vs, how, False, f"exact: the only commit whose {what}")
    return WinnerMatch(None, vs, how, True, f"{len(vs)} commits match on {what}: v{', v'.join(map(str, vs))}")


def _tie_break(df: pl.DataFrame, hint: WinnerHint) -> tuple[pl.DataFrame, list[str]]:
    used = []
    for attr, col in _TIE_BREAKERS:
        val = getattr(hint, attr)
        if val is None or df.height <= 1:
            continue
        narrowed = df.filter(pl.col(col) == val)
        if narrowed.height:
            df = narrowed
            used.append(col)
    return df, used


def find_winner(log: DeltaLog, hint: WinnerHint | None, *, loser_window: tuple[int, int] | None = None) -> WinnerMatch:
    """Match the text's winner hint against the retained log. `loser_window` (ms) bounds when the
    winner can have landed (an event log's execution start..end)."""
    if hint is None:
        return WinnerMatch(None, [], "none", False, "the text names no winning commit (delta-rs and truncated texts do not)")
    commits = log.commits
    notes: list[str] = []
    if hint.version is not None:
        if hint.version in set(log.versions):
            return WinnerMatch(hint.version, [hint.version], "version", False, f"exact: the text names version {hint.version} (delta-spark 4.1+)")
        notes.append(f"version {hint.version} named by the text is not in the retained log")
    if hint.txn_id:
        hit = commits.filter(pl.col("txn_id") == hint.txn_id)["version"].to_list()
        if hit:
            m = _result(hit, "txnId", f"txnId is {hint.txn_id}")
            m.notes = notes
            return m
        notes.append(f"txnId {hint.txn_id} is in no retained commit")
    if hint.timestamp is not None:
        df = commits.filter((pl.col("timestamp") == hint.timestamp) | (pl.col("in_commit_timestamp") == hint.timestamp))
        df = _in_window(df, loser_window)
        if df.height:
            df, used = _tie_break(df, hint)
            how = "timestamp+operation" if "operation" in used else ("timestamp+" + "+".join(used) if used else "timestamp")
            m = _result(df["version"].to_list(), how, f"timestamp is {hint.timestamp}" + (f" (with {', '.join(used)})" if used else ""))
            m.notes = notes
            return m
        notes.append(f"no retained commit has timestamp {hint.timestamp}")
    if hint.operation and hint.read_version is not None:
        df = _in_window(commits.filter((pl.col("operation") == hint.operation) & (pl.col("read_version") == hint.read_version)), loser_window)
        if df.height:
            df, used = _tie_break(df, hint)
            m = _result(df["version"].to_list(), "readVersion+operation", f"operation is {hint.operation} and readVersion {hint.read_version}")
            m.notes = notes
            return m
    why = "; ".join(notes) or "the text's winner hint carries no key to match (no version, txnId or timestamp)"
    return WinnerMatch(None, [], "none", False, why, notes)
