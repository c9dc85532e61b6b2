"""Traces of transactions that never reached the log: orphan data files, stray commit files,
and the aborted attempts they reveal (each replayed to its most likely exception).

`collect_evidence(log)` never writes under the table path; everything it concludes about an
attempt is inferred (files carry no readVersion), and says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from forensics.evidence.attempts import Attempt, Clock, file_clock, group_attempts, likely_retry
from forensics.evidence.footers import read_bounds
from forensics.evidence import cache as attribution_cache
from forensics.evidence.attribution import replay_attempt
from forensics.evidence.hypotheses import window
from forensics.evidence.content import read_content
from forensics.evidence.stray import StrayCommit, stray_commits
from forensics.evidence.walk import DataFile, canonical, walk_table
from forensics.log.delta_log import DeltaLog
from forensics.model import Finding
from forensics.sets.commit_sets import StateIndex

__all__ = ["Attempt", "DataFile", "Evidence", "StrayCommit", "collect_evidence"]


@dataclass
class Evidence:
    """What the table directory holds beyond the log: orphan data files, stray commit files, and the
    aborted attempts they point to."""
    orphan_files: list[DataFile]
    unknown_files: list[DataFile]  # unreferenced, but may have been removed before the retained log began
    attempts: list[Attempt]
    stray_commit_files: list[StrayCommit]
    clock: Clock
    oldest_retained: int | None
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The `evidence --json` document (camelCase keys, without `schema_version`)."""
        return {
            "orphanFiles": [f.path for f in self.orphan_files],
            "unknownFiles": [f.path for f in self.unknown_files],
            "unknownWhy": (
                f"unreferenced files older than the oldest retained commit (v{self.oldest_retained}) may have been removed "
                "by a commit that is no longer retained: they cannot be told from orphans" if self.unknown_files else None
            ),
            "attempts": [a.to_dict() for a in self.attempts],
            "strayCommitFiles": [s.to_dict() for s in self.stray_commit_files],
            "fileTimesTrusted": self.clock.trusted,
            "fileTimesWhy": self.clock.why,
            "findings": [f.to_dict() for f in self.findings],
        }


def collect_evidence(log: DeltaLog, state: StateIndex | None = None, *, rules: str | None = None, replay: bool = True) -> Evidence:
    state = state or StateIndex(log)
    lt = state.lifetimes
    walk = walk_table(log, lt.frame if lt.frame.height else None)
    on_disk = {f.path: f for f in walk.files}
    canon = lambda p: canonical(p, log.location)  # noqa: E731
    clock = file_clock(log, on_disk, canon, walk.time_source)
    unref = [f for f in walk.files if f.path not in walk.referenced]
    versions = log.versions
    oldest = min(versions) if versions else None
    orphans: list[DataFile] = []
    unknown: list[DataFile] = []
    if oldest is not None and oldest > 0:
        ts0 = log.record(oldest).timestamp
        for f in unref:
            if not clock.trusted or ts0 is None or f.mtime_ms < ts0:
                unknown.append(f)
            else:
                orphans.append(f)
    else:
        orphans = unref
    strays = stray_commits(log)
    md = state.metadata_at(log.latest_version or 0)
    pcols = tuple(md.partition_columns) if md else ()
    attempts = group_attempts(orphans, pcols, clock)
    by_path = {}
    for sc in strays:
        for p in sc.adds:
            c = canon(p)
            if c:
                by_path[c] = sc
    for a in attempts:
        sc = next((by_path[f.path] for f in a.files if f.path in by_path), None)
        rv = None
        if sc is not None:
            a.stray_commit = sc.file
            rv = sc.read_version
        if replay:
            k = attribution_cache.key(log, a, rules, _writer_settings())
            if attribution_cache.load(log, k, a):
                continue  # attributed before at this version of the log, with these files and rules
            # What the files hold (forensics.evidence.content) comes first: it names the operation, the
            # versions it can have read, and a re-run that wrote the same rows again. Only where the rows
            # cannot be read do the weaker bounds stand in: a same-size re-write in the same partition for
            # the re-run, the footers' statistics for the read version.
            reading = read_content(log, state.lifetimes, a.files, _read_upto(log, a, clock), a.last_seen if clock.trusted else None,
                                   pcols)
            retry = reading.rerun_version if reading is not None and reading.rerun_version is not None and reading.rerun_version >= 2 else None
            if retry is None and not clock.trusted and (reading is None or reading.read_versions is None):
                retry = likely_retry(log, a, canon)
            bounds = None if clock.trusted or (reading is not None and reading.read_versions is not None) else read_bounds(log, state, a.files)
            replay_attempt(log, state, a, clock, retry=retry, rules=rules, read_version=rv, bounds=bounds, reading=reading)
            if sc is not None and rv is not None:
                a.why += f" Its commit file {sc.file} records readVersion {rv} and operation {sc.operation}."
            attribution_cache.save(log, k, a)
    return Evidence(orphans, unknown, attempts, strays, clock, oldest, list(walk.findings))


def _read_upto(log: DeltaLog, attempt: Attempt, clock) -> int | None:
    """The newest version whose files the attempt can have read, when trusted file times place it:
    the last commit before its files (a later commit's files, a re-run's output among them, are no
    source of its rows); None: any."""
    if not clock.trusted:
        return None
    until, _lo, _after, _why = window(log, attempt, clock, None)
    return until  # commits after its files can have beaten it, never been read by it


def _writer_settings() -> str:
    """The writer settings the rules run with (part of an attribution's cache key)."""
    from forensics.rules.writer_conf import active_writer_conf

    return repr(active_writer_conf())
