"""Results of the conflict checker: one record per check that ran, one verdict per window.

`WindowResult.to_dict()` is the contract the `whatif` command prints:
{"verdict", "exception", "winningVersion", "rule", "partition", "file", "message",
 "reorderedBefore"} plus extra keys (checks, profile, certainty, why, errorClass).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from forensics.model import Bound
from forensics.schemas import camel

CheckStatus = Literal["passed", "failed", "skipped"]


@dataclass(slots=True)
class CheckOutcome:
    """One check of one profile against one winning commit (conflict-rules §5 / §9 / §10)."""

    check: str  # e.g. "appends", "deleteRead", "metadata"
    status: CheckStatus
    reason: str  # in words, e.g. "winner v7 is a blind append; forgiven under WriteSerializable"
    exception: str | None = None  # Delta simple class name when status == "failed"
    file: str | None = None  # the exact file involved (path as in the log)
    partition: dict[str, str | None] | None = None  # partitionValues of that file
    winner_version: int | None = None
    reordered: bool = False  # a matching add was forgiven (conflict-rules §6): serial order puts T first
    error_class: str | None = None  # e.g. DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT
    inferred: bool = False  # the outcome rests on an inference (e.g. Databricks row-level concurrency)
    domain: str | None = None  # the metadata domain both sides wrote (domainMetadata check)
    detail: str | None = None  # what the engine's message quotes (delta-rs protocol versions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": self.status,
            "reason": self.reason,
            "exception": self.exception,
            "file": self.file,
            "partition": self.partition,
            "winnerVersion": self.winner_version,
            "reordered": self.reordered,
            "errorClass": self.error_class,
            "inferred": self.inferred,
        }


# What the engine does with the transaction; the replay's verdict (clean/reordered/anomaly) is
# forensics.model.Verdict, a judgement about a commit that is in the log.
CommitOrAbort = Literal["commit", "abort"]


OUTCOME_FIELDS = ("exception", "winning_version", "rule", "partition", "file")


def outcome_fields(o: Any) -> dict[str, Any]:
    """What aborted a transaction, by whom and where: the same keys (camelCase) in every verdict's JSON."""
    return {camel(k): getattr(o, k) for k in OUTCOME_FIELDS}


@dataclass(slots=True)
class WindowResult:
    """Outcome of checking a transaction against its winning commits R+1..V-1 in order."""

    verdict: CommitOrAbort
    exception: str | None
    winning_version: int | None
    rule: str  # the check that aborted, or "none"
    partition: dict[str, str | None] | None
    file: str | None
    message: str  # the engine's message for an abort; a one-line summary for a commit
    reordered_before: list[int]
    checks: list[CheckOutcome]
    profile: str
    certainty: Bound
    why: str
    error_class: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            **outcome_fields(self),
            "message": self.message,
            "reorderedBefore": list(self.reordered_before),
            "errorClass": self.error_class,
            "profile": self.profile,
            "certainty": self.certainty.value,
            "why": self.why,
            "checks": [c.to_dict() for c in self.checks],
        }
