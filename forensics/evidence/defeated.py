"""Aborted attempts a version defeated: from error texts and from evidence on storage.

The loser never reaches the log; what it leaves is an error text (if the user has it) and
orphan data files or stray commit files. This module joins those traces to a winning
version so `explain` can tell both sides of the race.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from forensics.errors import ForensicsError
from forensics.evidence.attribution import RANKING
from forensics.log.delta_log import DeltaLog
from forensics.sets.commit_sets import StateIndex

if TYPE_CHECKING:
    from forensics.evidence import Evidence
    from forensics.replay.advice import Advice


@dataclass(frozen=True)
class DefeatedAttempt:
    """A transaction that lost to a version and never reached the log, and what says so."""

    source: str  # "error text NAME (winner found by ...)" or "orphan files (N) in PARTITIONS"
    exception: str | None
    partition: dict[str, Any] | None
    file: str | None
    loser_of: int  # the version it lost to
    why: str | None
    advice: tuple["Advice", ...] | None = None  # explain-error's advice for the loser of the text (None: from evidence)
    # What the loser is taken to have done (for the incident story; not in the JSON): the version it
    # read, the partitions it wrote (its orphan files), what it did in words, and its re-run if one landed.
    read_version: int | None = None
    wrote: tuple[dict[str, Any], ...] = ()
    hypothesis: str | None = None
    retry_version: int | None = None
    operation: str | None = None  # the operation its replay took it for (its re-run's when one landed)

    def fixes(self) -> list["Advice"]:
        """What the loser of the error text should change (explain-error's advice records)."""
        return list(self.advice or ())

    def to_dict(self) -> dict[str, Any]:
        d = {"source": self.source, "exception": self.exception, "partition": self.partition, "file": self.file,
             "loserOf": self.loser_of, "why": self.why}
        if self.advice is not None:
            d["advice"] = [a.to_dict() for a in self.fixes()]
        return d


def defeated_attempts(
    log: DeltaLog,
    version: int,
    state: StateIndex,
    *,
    error_file: str | None = None,
    evidence: Callable[[], Evidence] | None = None,
) -> list[DefeatedAttempt]:
    """`evidence` gives the table's evidence when asked (the caller caches it); None: not looked for."""
    out: list[DefeatedAttempt] = []
    if error_file:
        out += _from_error_text(log, version, error_file, state, evidence)
    if evidence is not None:
        # attempts whose most likely winner is this version first: their advice and story lead
        out += sorted(_from_evidence(version, evidence), key=lambda d: (d.why or "").startswith("one of "))
    return out


def _from_error_text(log: DeltaLog, version: int, error_file: str, state: StateIndex,
                     evidence: Callable[[], Evidence] | None = None) -> list[DefeatedAttempt]:
    """The error text's loser, when the text's winner is this version (with its own advice): the same
    answer `explain-error TABLE` gives, the table's evidence included."""
    from forensics.errortext import parse_error_text
    from forensics.evidence.loser import explain_error

    text = sys.stdin.read() if error_file == "-" else Path(error_file).read_text(errors="replace")
    rep = parse_error_text(text)
    if not rep.recognized:
        return []
    ev = None
    if evidence is not None:
        try:
            ev = evidence()
        except ForensicsError:
            ev = None
    exp = explain_error(log, rep, state=state, evidence=ev)
    if exp.winning_version != version:
        return []
    how = exp.match.how if exp.match else "replay"
    name = "stdin" if error_file == "-" else Path(error_file).name
    return [DefeatedAttempt(f"error text {name} (winner found by {how})", rep.exception, rep.partition, rep.file, version,
                            exp.match.why if exp.match else exp.why, tuple(exp.advice),
                            exp.replay.request.read_version if exp.replay else None, tuple(exp.loser_partitions), exp.hypothesis,
                            None, exp.replay.request.operation if exp.replay else None)]


def _from_evidence(version: int, evidence: Callable[[], Evidence]) -> list[DefeatedAttempt]:
    """Attempts whose attribution names this version among its candidates (the same attribution
    `evidence`, `explain-error` and the exports use); an ambiguous one says which of how many."""
    try:
        ev = evidence()
    except ForensicsError:  # evidence is best effort for explain; `evidence` reports its own errors
        return []
    out = []
    for a in ev.attempts:
        mine = [c for c in a.candidates if c.winning_version == version]
        if not mine:
            continue
        c = mine[0]
        where = ", ".join(_pstr(p) for p in a.partitions) or "the table root"
        first = a.candidates[0]
        why = a.why if c is first else (
            f"one of {len(a.candidates)} answers its files allow, number {c.rank} (the most likely is "
            f"v{first.winning_version}, {first.exception}; ranked by {RANKING}): {c.why}")
        out.append(DefeatedAttempt(f"orphan files ({len(a.files)}) in {where}", c.exception, c.partition, c.file, version, why,
                                   None, c.read_versions[1], tuple(a.partitions), c.hypothesis, a.retry_version, c.operation))
    return out


def _pstr(p: Any) -> str:
    if isinstance(p, dict):
        return ",".join(f"{k}={v}" for k, v in p.items())
    return str(p)
