"""Group orphan data files into likely write attempts and place each in time.

One failed job leaves one or more files. Spark's own file naming shares one job UUID across a
job's files; Delta's DelayedCommitProtocol and delta-rs give every file its own UUID, so those
files are grouped by modification time: files closer together than the widest spread seen
inside one committed commit (at least MIN_GAP_MS) form one attempt, and a change of codec
suffix (a different writer configuration) splits them. A loaded machine can space one job's tasks
wider than that, so neighbouring clusters are joined again when their file names say they are one
job's tasks (`join_tasks`). All of it is inferred, and says so.
"""

from __future__ import annotations

import os
import re
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import unquote

import polars as pl

from forensics.evidence.walk import DataFile
from forensics.log.delta_log import DeltaLog
from forensics.schemas import camel_keys
from forensics.times import as_datetime, with_iso

RE_PART = re.compile(r"^part-(\d{5})-([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})[.-]c(\d{3})(.*)$")
MIN_GAP_MS = 5
TASK_GAP_MS = 2_000  # how far apart two tasks of one job may end and still be joined by their task numbers
MAX_GAP_MS = 10 * 60 * 1000
TRUST_TOLERANCE_MS = 60_000


class SeenTimes:
    """`first_seen_at` / `last_seen_at`: an attempt's file times (`first_seen` / `last_seen`, epoch
    ms) as aware UTC datetimes, for everything that describes an attempt."""

    first_seen: int | None
    last_seen: int | None

    @property
    def first_seen_at(self) -> datetime | None:
        """Its first file's time (aware UTC); `first_seen` is the epoch ms."""
        return as_datetime(self.first_seen)

    @property
    def last_seen_at(self) -> datetime | None:
        """Its last file's time (aware UTC); `last_seen` is the epoch ms."""
        return as_datetime(self.last_seen)


@dataclass
class Attempt(SeenTimes):
    files: list[DataFile]
    partitions: list[dict[str, str | None]]
    first_seen: int
    last_seen: int
    grouped_by: str  # "job-uuid" | "mtime-cluster" | "stray-commit"
    concurrent_versions: list[int] = field(default_factory=list)
    landed_after: list[int] = field(default_factory=list)
    likely_exception: str | None = None
    winning_version: int | None = None
    rule: str | None = None
    hypothesis: str | None = None
    operation: str | None = None  # the operation the hypothesis replayed (not in the JSON: `hypothesis` says it in words)
    read_version: int | None = None
    partition: dict | None = None
    file: str | None = None
    certainty: str = "inferred"
    why: str = ""
    retry_version: int | None = None
    stray_commit: str | None = None
    tried: list[dict[str, Any]] = field(default_factory=list)
    # Every answer the evidence allows, ranked (forensics.evidence.attribution); the single-valued
    # fields above are the first candidate's.
    attribution: Any = field(default=None, repr=False, compare=False)
    content: Any = field(default=None, repr=False, compare=False)  # what its files hold (forensics.evidence.content)

    @property
    def candidates(self) -> list[Any]:
        return list(self.attribution.candidates) if self.attribution is not None else []

    @property
    def ambiguous(self) -> bool:
        return bool(self.attribution is not None and self.attribution.ambiguous)

    @property
    def operation_shown(self) -> str | None:
        """The operation the evidence identifies (its stray commit's, its files' content, else the
        first candidate's hypothesis): what the conflict matrices class it by."""
        if self.stray_commit and self.operation:
            return self.operation
        return attempt_operation(self)[0]

    @property
    def exception(self) -> str | None:
        """The exception it most likely aborted with (`likely_exception`; the first candidate's)."""
        return self.likely_exception

    def to_dict(self) -> dict[str, Any]:
        return with_iso({
            "files": [f.path for f in self.files],
            "partitions": self.partitions,
            "firstSeen": self.first_seen,
            "lastSeen": self.last_seen,
            "groupedBy": self.grouped_by,
            "concurrentVersions": self.concurrent_versions,
            "landedAfter": self.landed_after,
            "likelyException": self.likely_exception,
            "winningVersion": self.winning_version,
            "rule": self.rule,
            "hypothesis": self.hypothesis,
            "readVersion": self.read_version,
            "partition": self.partition,
            "file": self.file,
            "certainty": self.certainty,
            "retryVersion": self.retry_version,
            "strayCommit": self.stray_commit,
            "why": self.why,
            "tried": camel_keys(self.tried),
            "candidates": [c.to_dict() for c in self.candidates],
            "ambiguous": self.ambiguous,
            "basis": list(self.attribution.basis) if self.attribution is not None else [],
            "content": self.content.to_dict() if self.content is not None else None,
        }, "firstSeen", "lastSeen")


def job_uuid(name: str) -> tuple[str | None, str]:
    """(UUID, codec suffix) from a Spark/Delta/delta-rs data file name."""
    m = RE_PART.match(os.path.basename(name))
    if not m:
        return None, os.path.splitext(name)[1]
    return m.group(2).lower(), m.group(4)


def task_slot(name: str) -> tuple[int, str, int] | None:
    """(task number, folder, file counter) of a Spark/Delta/delta-rs data file name: one job writes
    each slot at most once (task n writes `part-0000n-…-c000`, then `c001` when it rolls over, one
    per partition folder), and numbers its tasks from 0."""
    m = RE_PART.match(os.path.basename(name))
    if not m:
        return None
    return int(m.group(1)), os.path.dirname(name), int(m.group(3))


def join_tasks(clusters: list[list[DataFile]], gap_ms: int) -> list[list[DataFile]]:
    """Join a modification-time cluster to the one before it when both look like parts of one job:
    within `gap_ms`, same codec, no slot written twice, and one of them is a fragment: it lacks task 0
    (every job has a task 0, which writes a file unless its rows were empty), or holds only files a
    task rolled over to (`c001` after the other's `c000`). Two jobs of one shape (each with its
    task 0) stay apart."""
    out: list[list[DataFile]] = []
    for c in clusters:
        prev = out[-1] if out else None
        if prev is not None and _one_job(prev, c, gap_ms):
            prev.extend(c)
        else:
            out.append(list(c))
    return out


def _one_job(a: list[DataFile], b: list[DataFile], gap_ms: int) -> bool:
    if b[0].mtime_ms - a[-1].mtime_ms > gap_ms or job_uuid(a[-1].path)[1] != job_uuid(b[0].path)[1]:
        return False
    sa, sb = [task_slot(f.path) for f in a], [task_slot(f.path) for f in b]
    if None in sa or None in sb or set(sa) & set(sb):
        return False
    if min(t for t, _, _ in sa) > 0 or min(t for t, _, _ in sb) > 0:
        return True
    earlier = set(sa)
    return all(c > 0 and (t, d, c - 1) in earlier for t, d, c in sb)


def partition_of(path: str, partition_columns: tuple[str, ...]) -> dict[str, str | None]:
    """Hive-style `col=value` directories of a relative path, for the table's partition columns."""
    out: dict[str, str | None] = {}
    for seg in path.split("/")[:-1]:
        if "=" not in seg:
            continue
        k, v = seg.split("=", 1)
        k, v = unquote(k), unquote(v)
        if not partition_columns or k in partition_columns:
            out[k] = None if v == "__HIVE_DEFAULT_PARTITION__" else v
    return out


# --------------------------------------------------------------------------------------
# Can file modification times be compared with commit timestamps?
# --------------------------------------------------------------------------------------


@dataclass
class Clock:
    trusted: bool
    why: str
    intra_commit_gap_ms: int | None


def file_clock(log: DeltaLog, on_disk: dict[str, DataFile], canon, source: str = "the file system's modification times") -> Clock:
    """Trust file mtimes only when committed files' mtimes agree with their add.modificationTime
    (files copied or restored get new mtimes, and then no time window can be drawn). `source`
    says where the times come from (a file system, an object store), and the verdict says it too."""
    clock = _clock(log, on_disk, canon)
    return Clock(clock.trusted, f"{source}: {clock.why}", clock.intra_commit_gap_ms)


def _clock(log: DeltaLog, on_disk: dict[str, DataFile], canon) -> Clock:
    adds = log.actions.filter(pl.col("kind") == "add").select(["version", "path", "modification_time"])
    diffs: list[int] = []
    per_version: dict[int, list[int]] = {}
    for v, p, mt in adds.iter_rows():
        c = canon(p)
        f = on_disk.get(c) if c else None
        if f is None or mt is None:
            continue
        diffs.append(abs(f.mtime_ms - int(mt)))
        per_version.setdefault(v, []).append(f.mtime_ms)
    gap = None
    for ms in per_version.values():
        if len(ms) > 1:
            ms.sort()
            g = max(b - a for a, b in zip(ms, ms[1:]))
            gap = g if gap is None else max(gap, g)
    if not diffs:
        return Clock(False, "no committed data file is left on disk to compare its modification time with the log", gap)
    med = statistics.median(diffs)
    if med <= TRUST_TOLERANCE_MS:
        return Clock(True, f"committed files' modification times agree with the log's modificationTime (median difference {int(med)} ms)", gap)
    return Clock(False, f"committed files' modification times differ from the log's modificationTime by {int(med // 1000)} s (median): files were copied or restored, so their times say nothing about when they were written", gap)


# --------------------------------------------------------------------------------------
# Grouping
# --------------------------------------------------------------------------------------


def group_attempts(orphans: list[DataFile], partition_columns: tuple[str, ...], clock: Clock) -> list[Attempt]:
    if not orphans:
        return []
    by_uuid: dict[str, list[DataFile]] = {}
    for f in orphans:
        u, _ = job_uuid(f.path)
        if u:
            by_uuid.setdefault(u, []).append(f)
    shared = {u for u, fs in by_uuid.items() if len(fs) > 1}
    groups: list[tuple[str, list[DataFile]]] = [("job-uuid", fs) for u, fs in by_uuid.items() if u in shared]
    rest = sorted((f for f in orphans if job_uuid(f.path)[0] not in shared), key=lambda f: (f.mtime_ms, f.path))
    gap = max(MIN_GAP_MS, min(MAX_GAP_MS, 2 * (clock.intra_commit_gap_ms or 0)))
    clusters: list[list[DataFile]] = []
    for f in rest:
        if not clusters or f.mtime_ms - clusters[-1][-1].mtime_ms > gap or job_uuid(f.path)[1] != job_uuid(clusters[-1][-1].path)[1]:
            clusters.append([])
        clusters[-1].append(f)
    groups += [("mtime-cluster", c) for c in join_tasks(clusters, max(gap, TASK_GAP_MS))]
    out = []
    for how, fs in groups:
        parts: list[dict[str, str | None]] = []
        for f in fs:
            p = partition_of(f.path, partition_columns)
            if p not in parts:
                parts.append(p)
        out.append(Attempt(files=sorted(fs, key=lambda f: f.path), partitions=parts,
                           first_seen=min(f.mtime_ms for f in fs), last_seen=max(f.mtime_ms for f in fs), grouped_by=how))
    out.sort(key=lambda a: (a.first_seen, a.files[0].path))
    return out


def likely_retry(log: DeltaLog, attempt: Attempt, canon) -> int | None:
    """The first later commit that re-wrote one of the attempt's files byte for byte (same partition,
    same size): a re-run of the failed job, so the failure came before it. Needs room for a window."""
    adds = log.actions.filter(pl.col("kind") == "add").select(["version", "path", "size"])
    keys = {(os.path.dirname(f.path), f.size) for f in attempt.files if f.size > 0}
    hits = sorted({v for v, p, s in adds.iter_rows() if s is not None and (os.path.dirname(canon(p) or ""), int(s)) in keys})
    for v in hits:
        if v >= 2:
            return v
    return None


def attempt_operation(a: Any) -> tuple[str | None, str]:
    """(operation, where it comes from) of an evidence Attempt: its first candidate's, else the kind its
    rows show, else the replayed hypothesis's."""
    first = a.candidates[0] if a.candidates else None
    if first is not None and first.operation:
        return first.operation, "content" if first.from_content else "hypothesis"
    content = getattr(a, "content", None)
    if content is not None and content.operations:
        return content.operations[0], "content"
    return (a.operation, "hypothesis") if a.operation else (None, "unknown")
