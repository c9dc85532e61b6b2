"""When the log is silent: commits that record no readVersion and the aborted attempts the evidence found.

delta-rs writes no readVersion for plain writes, nor do hand-built writers: those windows cannot be
replayed, and a transaction that aborted left no commit at all. Replayed alone, such a table reads
"no conflicts". `replay` says why in its first lines and lists each aborted attempt (orphan files,
forensics.evidence) as a row of the conflict timeline with its attribution; `stats` counts them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from forensics.log.delta_log import DeltaLog
from forensics.times import with_iso
from forensics.evidence.attempts import SeenTimes, attempt_operation


@dataclass(frozen=True)
class SilentCommits:
    """Commits replay skipped because they record no readVersion, and the writers that wrote them."""

    commits: int
    total: int
    writers: tuple[tuple[str, int], ...]  # (engineInfo or "(no engineInfo)", commits), most first
    first_version: int
    last_version: int

    @property
    def why(self) -> str:
        names = [w for w, _ in self.writers]
        if any(w.lower().startswith("delta-rs") for w in names):
            who = "delta-rs writes none for plain writes"
        else:
            who = "hand-built writers and some engines write none"
        return (f"{who}: their windows cannot be replayed, so the log alone shows no conflict, and a transaction "
                "that aborted left no commit, only orphan files")

    def to_dict(self) -> dict[str, Any]:
        return {"commits": self.commits, "totalCommits": self.total, "firstVersion": self.first_version,
                "lastVersion": self.last_version, "writers": [{"engineInfo": w, "commits": n} for w, n in self.writers],
                "why": self.why}


@dataclass(frozen=True)
class AttemptRow(SeenTimes):
    """One aborted attempt as a row of the conflict timeline: where it wrote, what it most likely did,
    whom it lost to (every answer the evidence leaves when more than one does)."""

    id: str  # attempt-N, as the timeline names it
    partitions: tuple[str, ...]
    files: int
    first_seen: int
    last_seen: int
    operation: str | None
    operation_from: str  # content (its rows show it) | hypothesis (the first guess whose replay aborts) | unknown
    read_versions: tuple[int, int] | None
    winning_version: int | None
    exception: str | None
    rule: str | None
    ambiguous: bool
    answer: str  # "v4 (ConcurrentAppendException)" or "one of v8 (...), v5 (...)"
    winners: tuple[int, ...]
    certainty: str = "inferred"
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return with_iso({
            "id": self.id, "partitions": list(self.partitions), "files": self.files, "firstSeen": self.first_seen,
            "lastSeen": self.last_seen, "operation": self.operation, "operationFrom": self.operation_from,
            "readVersions": list(self.read_versions) if self.read_versions else None,
            "winningVersion": self.winning_version, "exception": self.exception, "rule": self.rule,
            "ambiguous": self.ambiguous, "answer": self.answer, "winners": list(self.winners),
            "certainty": self.certainty, "why": self.why,
        }, "firstSeen", "lastSeen")


@dataclass
class SilentLog:
    """What `replay` adds when the log cannot show every conflict (`replay --json`: these keys)."""

    no_read_version: SilentCommits | None
    attempts: list[AttemptRow] = field(default_factory=list)
    attempts_why: str | None = None  # why no attempt is listed although evidence was asked for, or not asked

    def to_dict(self) -> dict[str, Any]:
        """The JSON of what the log could not say: versions without readVersion and the aborted attempts
        found."""
        return {"noReadVersion": self.no_read_version.to_dict() if self.no_read_version else None,
                "attempts": [a.to_dict() for a in self.attempts], "attemptsWhy": self.attempts_why}


def one_of(candidates: list[Any], per_exception: int = 3) -> str:
    """The attribution in a few words: "v4 (ConcurrentAppendException)", or every answer grouped by
    exception in rank order, "one of v30 (ConcurrentDeleteReadException); v29, v24, v12 and 5 more
    (ConcurrentAppendException)" (`evidence` lists each candidate with its read versions and why)."""
    if len(candidates) == 1:
        c = candidates[0]
        return f"v{c.winning_version} ({c.exception})"
    groups: dict[str, list[int]] = {}
    for c in candidates:
        vs = groups.setdefault(c.exception, [])
        if c.winning_version not in vs:
            vs.append(c.winning_version)
    parts = []
    for exc, vs in groups.items():
        shown = ", ".join(f"v{v}" for v in vs[:per_exception])
        parts.append(shown + (f" and {len(vs) - per_exception} more" if len(vs) > per_exception else "") + f" ({exc})")
    return "one of " + "; ".join(parts)


def silent_commits(log: DeltaLog, skipped: list[int]) -> SilentCommits | None:
    """The skipped windows whose commit records no readVersion (`skipped`: their versions)."""
    if not skipped:
        return None
    want = set(skipped)
    writers: Counter[str] = Counter()
    for v, rv, eng in log.commits.select(["version", "read_version", "engine_info"]).iter_rows():
        if v in want and rv is None:
            writers[eng or "(no engineInfo)"] += 1
    n = sum(writers.values())
    if not n:
        return None
    return SilentCommits(n, log.commits.height, tuple(writers.most_common()), min(want), max(want))


def attempt_rows(attempts: list[Any]) -> list[AttemptRow]:
    """The evidence's attempts, in its order (ids as the timeline gives them), each with its attribution."""
    from forensics.model import hive_partition

    rows = []
    for i, a in enumerate(attempts):
        op, src = attempt_operation(a)
        att = a.attribution
        first = a.candidates[0] if a.candidates else None
        rows.append(AttemptRow(
            id=f"attempt-{i + 1}", partitions=tuple(hive_partition(p) or "(table)" for p in a.partitions), files=len(a.files),
            first_seen=a.first_seen, last_seen=a.last_seen, operation=op, operation_from=src,
            read_versions=first.read_versions if first else (a.read_version, a.read_version) if a.read_version is not None else None,
            winning_version=a.winning_version, exception=a.likely_exception, rule=a.rule, ambiguous=a.ambiguous,
            answer=one_of(a.candidates) if a.candidates else (
                f"v{a.winning_version} ({a.likely_exception})" if a.winning_version is not None else "no winner found"),
            winners=tuple(att.winners) if att is not None and a.candidates else
            ((a.winning_version,) if a.winning_version is not None else ()),
            certainty=a.certainty or "inferred", why=a.why or ""))
    return rows
