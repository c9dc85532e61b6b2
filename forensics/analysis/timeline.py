"""One Timeline model that every export (JSON, CSV, Parquet, Chrome trace, Mermaid, HTML) derives from.

A span is one transaction: it starts at the commit time of the snapshot it read (its
readVersion) and ends at its own commit. Aborted attempts (forensics.evidence) are spans of
their own, placed by their attribution: from the commit time of the read version its candidates
name to the commit time of the winner they name (an ambiguous attempt spans all its candidates);
a file time is kept only where file times can be compared with commit times (a copy or a clone
gives every file the time of the copy). Edges go from a loser to the winner it lost to; reorder
marks say "serialised before".

Times are epoch milliseconds. A span's start is a lower bound (the transaction began at or after
the read snapshot was committed); `start_source` says where it came from, and `start_ms` is None
when nothing tells (no readVersion recorded, or the read version is not retained).

Versioned contract: `SCHEMA_VERSION` changes whenever a field is renamed or its meaning changes;
added fields do not bump it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Iterable

from forensics.log.index import record_from_row
from forensics.log.delta_log import DeltaLog
from forensics.model import CommitRecord
from forensics.times import as_datetime

SCHEMA_VERSION = 1

# Verdicts a span can carry: the replay's four, plus the two this model adds.
SERIAL = "serial"  # readVersion == version-1: nothing landed in between (no window)
ABORTED = "aborted"  # an attempt that never reached the log (evidence, inferred)
UNKNOWN_WRITER = "unknown"


@dataclass(frozen=True)
class Writer:
    """A writer track: who committed (cluster, job, app id, user, engine)."""

    id: str  # stable ASCII-ish key, e.g. "writer:ingest-a", "job:123", "cluster:0612-abc"
    label: str  # for display (untrusted text: escape on output)
    source: str  # commitInfo.writer | appId | job | clusterId | notebook | userName | engineInfo | unknown

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Span:
    """One transaction (kind="commit") or one aborted attempt (kind="attempt")."""

    id: str  # "v42" or "attempt-3"
    kind: str  # commit | attempt
    writer: str  # Writer.id
    version: int | None
    read_version: int | None
    start_ms: int | None
    end_ms: int | None
    start_source: str  # readVersion-commit-time | read-range-commit-time | first-file-written | commit-time (no window) | unknown
    end_source: str  # commit-time | in-commit-timestamp | winner-commit-time | read-range-commit-time | last-file-written | unknown
    operation: str | None
    verdict: str  # clean | reordered | anomaly | skipped | serial | aborted
    window: list[int] = field(default_factory=list)
    exception: str | None = None
    winning_version: int | None = None
    rule: str | None = None
    partition: dict[str, Any] | None = None  # the partition named by the conflict
    file: str | None = None
    reordered_before: list[int] = field(default_factory=list)
    partitions: list[dict[str, Any]] = field(default_factory=list)  # partitions the span wrote
    isolation_level: str | None = None
    profile: str | None = None
    certainty: str = "exact"
    why: str = ""
    likely_reason: str | None = None
    files: list[str] = field(default_factory=list)  # attempts only: the orphan files
    retry_version: int | None = None  # attempts only: the commit that most likely re-ran it
    one_of: str | None = None  # attempts: the attribution in words, "v4 (X)" or "one of v8 (X), v5 (Y)"
    candidates: list[dict[str, Any]] = field(default_factory=list)  # attempts: every candidate, most likely first
    file_time_ms: int | None = None  # attempts: its last file's time, only when file times are trusted
    file_times: str = ""  # attempts: whether file times can be compared with commit times, and why

    @property
    def duration_ms(self) -> int | None:
        if self.start_ms is None or self.end_ms is None:
            return None
        return max(0, self.end_ms - self.start_ms)

    @property
    def start_at(self) -> datetime | None:
        """`start_ms` as an aware UTC datetime."""
        return as_datetime(self.start_ms)

    @property
    def end_at(self) -> datetime | None:
        """`end_ms` as an aware UTC datetime."""
        return as_datetime(self.end_ms)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["duration_ms"] = self.duration_ms
        return d


@dataclass
class Edge:
    """loser → winner (kind conflict|abort) or txn → winner it was serialised before (kind reorder)."""

    kind: str  # conflict (committed anomaly) | abort (evidence attempt) | reorder
    source: str  # Span.id
    target: str  # Span.id
    exception: str | None = None
    rule: str | None = None
    certainty: str = "exact"
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Timeline:
    """Every commit and aborted attempt as a span from read to commit, with the edges of who beat whom:
    what the TUI, the HTML report and the exports draw."""
    table: str
    spans: list[Span]
    edges: list[Edge]
    writers: list[Writer]
    from_version: int | None = None
    to_version: int | None = None
    rules: str | None = None
    isolation_level: str | None = None  # the replay's override, if any
    evidence: bool = False  # aborted attempts included
    notes: list[str] = field(default_factory=list)
    schema_version: int = SCHEMA_VERSION
    findings: list[Any] = field(default_factory=list, repr=False)  # the replay's, for --strict; not exported

    def span(self, sid: str) -> Span | None:
        """The span with this id, or None."""
        for s in self.spans:
            if s.id == sid:
                return s
        return None

    @property
    def commits(self) -> list[Span]:
        """The spans of committed versions."""
        return [s for s in self.spans if s.kind == "commit"]

    @property
    def attempts(self) -> list[Span]:
        """The spans of aborted attempts the evidence found."""
        return [s for s in self.spans if s.kind == "attempt"]

    def time_range(self) -> tuple[int, int] | None:
        """(first, last) epoch milliseconds any span covers, or None when no span has a time."""
        ts = [t for s in self.spans for t in (s.start_ms, s.end_ms) if t is not None]
        return (min(ts), max(ts)) if ts else None

    def to_dict(self) -> dict[str, Any]:
        """The timeline as exported JSON (`export --format json`), with its own schema_version."""
        return {
            "schema_version": self.schema_version,
            "table": self.table,
            "from_version": self.from_version,
            "to_version": self.to_version,
            "rules": self.rules,
            "isolation_level": self.isolation_level,
            "evidence": self.evidence,
            "notes": list(self.notes),
            "writers": [w.to_dict() for w in self.writers],
            "spans": [s.to_dict() for s in self.spans],
            "edges": [e.to_dict() for e in self.edges],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Timeline":
        """Read back a timeline `to_dict` wrote; ValueError on another schema_version."""
        if d.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(f"timeline schema_version {d.get('schema_version')!r} is not {SCHEMA_VERSION}")
        spans = []
        for s in d.get("spans", []):
            s = dict(s)
            s.pop("duration_ms", None)
            spans.append(Span(**s))
        return cls(
            table=d["table"],
            spans=spans,
            edges=[Edge(**e) for e in d.get("edges", [])],
            writers=[Writer(**w) for w in d.get("writers", [])],
            from_version=d.get("from_version"),
            to_version=d.get("to_version"),
            rules=d.get("rules"),
            isolation_level=d.get("isolation_level"),
            evidence=bool(d.get("evidence")),
            notes=list(d.get("notes", [])),
        )


# --------------------------------------------------------------------------------------
# Writer tracks
# --------------------------------------------------------------------------------------


def _commit_info(rec: CommitRecord) -> dict[str, Any]:
    try:
        d = json.loads(rec.commit_info_raw or "")
    except (ValueError, TypeError):
        return {}
    return d if isinstance(d, dict) else {}


def writer_of(rec: CommitRecord) -> Writer:
    """The most specific writer identity the commitInfo carries.

    Order: an explicit `writer` field (delta-rs commit properties), a streaming/txn app id, a job
    (jobId; Databricks jobs), a cluster, a notebook, the user, the engine. The first present wins.
    """
    ci = _commit_info(rec)
    w = ci.get("writer")
    if isinstance(w, (str, int)) and str(w).strip():
        return Writer(f"writer:{w}", str(w), "commitInfo.writer")
    if rec.txn_app_ids:
        app = sorted(rec.txn_app_ids)[0]
        return Writer(f"app:{app}", f"app {app}", "appId")
    if isinstance(rec.job, dict) and (rec.job.get("jobId") or rec.job.get("jobName")):
        jid = rec.job.get("jobId") or rec.job.get("jobName")
        name = rec.job.get("jobName")
        return Writer(f"job:{jid}", f"job {jid}" + (f" ({name})" if name and name != jid else ""), "job")
    if rec.cluster_id:
        return Writer(f"cluster:{rec.cluster_id}", f"cluster {rec.cluster_id}", "clusterId")
    if isinstance(rec.notebook, dict) and (rec.notebook.get("notebookId") or rec.notebook.get("notebookPath")):
        nid = rec.notebook.get("notebookPath") or rec.notebook.get("notebookId")
        return Writer(f"notebook:{nid}", f"notebook {nid}", "notebook")
    if rec.user_name or rec.user_id:
        u = rec.user_name or rec.user_id
        return Writer(f"user:{u}", f"user {u}", "userName")
    if rec.engine_info:
        return Writer(f"engine:{rec.engine_info}", rec.engine_info, "engineInfo")
    return Writer(UNKNOWN_WRITER, "unknown writer", "unknown")


ATTEMPTS_WRITER = Writer("attempts", "aborted attempts (writer unknown)", "unknown")


# --------------------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------------------


def commit_time(rec: CommitRecord) -> tuple[int | None, str]:
    """In-commit timestamp when enabled (monotonic), else commitInfo.timestamp / file time."""
    if rec.in_commit_timestamp is not None:
        return rec.in_commit_timestamp, "in-commit-timestamp"
    if rec.timestamp is not None:
        return rec.timestamp, "commit-time"
    return None, "unknown"


def build_timeline(
    log: DeltaLog,
    report: Any,
    evidence: Any = None,
    from_v: int | None = None,
    to_v: int | None = None,
) -> Timeline:
    """The timeline of versions from_v..to_v (inclusive) from a ReplayReport and, optionally,
    an Evidence (forensics.evidence) whose aborted attempts become spans of their own."""
    times: dict[int, int | None] = {}
    recs: dict[int, CommitRecord] = {}
    for row in log.commits.iter_rows(named=True):
        r = record_from_row(row)
        recs[r.version] = r
        times[r.version] = commit_time(r)[0]
    versions = sorted(recs)
    lo = from_v if from_v is not None else (versions[0] if versions else None)
    hi = to_v if to_v is not None else (versions[-1] if versions else None)
    writers: dict[str, Writer] = {}
    spans: list[Span] = []
    edges: list[Edge] = []
    notes: list[str] = []
    verdicts = getattr(report, "verdicts", {}) or {}
    for v in versions:
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            continue
        rec = recs[v]
        w = writer_of(rec)
        writers.setdefault(w.id, w)
        end, end_src = commit_time(rec)
        rv = rec.read_version
        start, start_src = _start(rv, v, times, end)
        cv = verdicts.get(v)
        span = Span(
            id=f"v{v}",
            kind="commit",
            writer=w.id,
            version=v,
            read_version=rv,
            start_ms=start,
            end_ms=end,
            start_source=start_src,
            end_source=end_src,
            operation=rec.operation,
            verdict=cv.verdict if cv is not None else SERIAL,
            partitions=list(rec.partitions_touched or []),
        )
        if cv is not None:
            span.window = list(cv.window)
            span.exception, span.winning_version, span.rule = cv.exception, cv.winning_version, cv.rule
            span.partition, span.file = cv.partition, cv.file
            span.reordered_before = list(cv.reordered_before)
            span.isolation_level, span.profile = cv.isolation_level, cv.profile or None
            span.certainty, span.why, span.likely_reason = cv.certainty, cv.why, cv.likely_reason
        else:
            span.isolation_level = rec.isolation_level
            span.why = "readVersion is the previous version: no concurrent commit landed in between" if rv is not None else (
                "first version" if v == 0 else "")
        spans.append(span)
        if span.verdict == "anomaly" and span.winning_version is not None:
            edges.append(Edge("conflict", span.id, f"v{span.winning_version}", span.exception, span.rule, span.certainty,
                              f"v{v} committed although the rules abort it against v{span.winning_version}"))
        for wv in span.reordered_before:
            edges.append(Edge("reorder", span.id, f"v{wv}", None, "blind-append-forgiven", span.certainty,
                              f"serial order: v{v} before v{wv} (log order is v{wv} then v{v})"))
    if evidence is not None:
        notes += _add_attempts(evidence, spans, edges, writers, recs, times, lo, hi)
    else:
        notes.append("aborted attempts not included (no evidence collected)")
    spans.sort(key=lambda s: (s.end_ms if s.end_ms is not None else -1, s.version if s.version is not None else 1 << 62, s.id))
    return Timeline(
        table=log.location,
        spans=spans,
        edges=edges,
        writers=sorted(writers.values(), key=lambda w: (w.id == ATTEMPTS_WRITER.id, w.id)),
        from_version=lo,
        to_version=hi,
        rules=getattr(report, "rules", None),
        isolation_level=getattr(report, "isolation_level", None),
        evidence=evidence is not None,
        notes=notes,
    )


def _start(rv: int | None, v: int, times: dict[int, int | None], end: int | None) -> tuple[int | None, str]:
    if rv is not None and rv < v and times.get(rv) is not None:
        return times[rv], "readVersion-commit-time"
    if rv is None and v == 0:
        return end, "commit-time (no window)"
    return None, "unknown"


def _add_attempts(evidence: Any, spans: list[Span], edges: list[Edge], writers: dict[str, Writer],
                  recs: dict[int, CommitRecord], times: dict[int, int | None], lo: int | None, hi: int | None) -> list[str]:
    """Attempts from forensics.evidence (duck-typed: the module may evolve), all inferred, each
    placed by its attribution; returns a note per attempt nothing could place."""
    clock = getattr(evidence, "clock", None)
    trusted = bool(getattr(clock, "trusted", False))
    file_times = ("trusted: " if trusted else "not trusted: ") + str(getattr(clock, "why", "") or "no clock verdict")
    lo_t = times.get(lo) if lo is not None else None
    hi_t = times.get(hi) if hi is not None else None
    notes: list[str] = []
    for i, a in enumerate(getattr(evidence, "attempts", []) or []):
        sid = f"attempt-{i + 1}"
        start, ssrc, end, esrc = attempt_window(a, times, trusted)
        if lo_t is not None and end is not None and end < lo_t:
            continue
        if hi_t is not None and start is not None and start > hi_t:
            continue
        if start is None and end is None:
            notes.append(f"{sid} is not drawn: file times are not trusted ({file_times}) and no candidate names its window")
        winner = getattr(a, "winning_version", None)
        retry = getattr(a, "retry_version", None)
        w = writer_of(recs[retry]) if retry is not None and retry in recs else ATTEMPTS_WRITER
        writers.setdefault(w.id, w)
        files = [getattr(f, "path", str(f)) for f in (getattr(a, "files", []) or [])]
        att = getattr(a, "attribution", None)
        cands = list(getattr(a, "candidates", []) or [])
        spans.append(
            Span(
                id=sid,
                kind="attempt",
                writer=w.id,
                version=None,
                read_version=getattr(a, "read_version", None),
                start_ms=start,
                end_ms=end,
                start_source=ssrc,
                end_source=esrc,
                operation=_attempt_operation(evidence, a) or getattr(a, "operation", None),
                verdict=ABORTED,
                exception=getattr(a, "likely_exception", None),
                winning_version=winner,
                rule=getattr(a, "rule", None),
                partition=getattr(a, "partition", None),
                file=getattr(a, "file", None),
                partitions=list(getattr(a, "partitions", []) or []),
                certainty=getattr(a, "certainty", "inferred") or "inferred",
                why=getattr(a, "why", "") or "",
                files=files,
                window=list(getattr(a, "concurrent_versions", []) or []),
                retry_version=retry,
                one_of=att.one_of() if att is not None and cands else None,
                candidates=[_candidate(c) for c in cands],
                file_time_ms=getattr(a, "last_seen", None) if trusted else None,
                file_times=file_times,
            )
        )
        if winner is not None:
            more = f" (rank 1 of {len(cands)} candidates)" if len(cands) > 1 else ""
            edges.append(Edge("abort", sid, f"v{winner}", getattr(a, "likely_exception", None), getattr(a, "rule", None),
                              "inferred", f"aborted attempt most likely lost to v{winner}{more}"))
    return notes


def attempt_window(a: Any, times: dict[int, int | None], trusted: bool) -> tuple[int | None, str, int | None, str]:
    """(start, its source, end, its source) of an aborted attempt: from the commit time of the
    version its candidates read (the newest each allows) to their winners' commit time, across all
    candidates; without a candidate, its trusted file times, else the read versions its bounds allow."""
    cands = list(getattr(a, "candidates", []) or [])
    starts = [t for c in cands if (t := times.get(c.read_versions[1])) is not None]
    ends = [t for c in cands if (t := times.get(c.winning_version)) is not None]
    if starts and ends:
        return min(starts), "readVersion-commit-time", max(ends), "winner-commit-time"
    if trusted and getattr(a, "first_seen", None) is not None:
        return a.first_seen, "first-file-written", getattr(a, "last_seen", None) or a.first_seen, "last-file-written"
    att = getattr(a, "attribution", None)
    rng = getattr(att, "read_versions", None) if att is not None else None
    known = sorted(v for v, t in times.items() if t is not None)
    if rng is not None and known:
        inside = [v for v in known if rng[0] <= v <= rng[1]]
        if inside:
            return times[inside[0]], "read-range-commit-time", times[inside[-1]], "read-range-commit-time"
    return None, "unknown", None, "unknown"


def _candidate(c: Any) -> dict[str, Any]:
    """A candidate as plain data (the JSON export, the HTML report)."""
    return {"rank": c.rank, "read_versions": list(c.read_versions), "winning_version": c.winning_version,
            "exception": c.exception, "rule": c.rule, "operation": c.operation, "hypothesis": c.hypothesis}


def _attempt_operation(evidence: Any, a: Any) -> str | None:
    """The operation an attempt ran, when its stray commit file recorded one; else unknown (None)."""
    name = getattr(a, "stray_commit", None)
    if not name:
        return None
    for sc in getattr(evidence, "stray_commit_files", []) or []:
        if getattr(sc, "file", None) == name:
            op = getattr(sc, "operation", None)
            return str(op) if op else None
    return None


def writer_index(tl: Timeline) -> dict[str, int]:
    """writer id -> 1-based track number (stable order)."""
    return {w.id: i + 1 for i, w in enumerate(tl.writers)}


def spans_by_version(spans: Iterable[Span]) -> dict[int, Span]:
    return {s.version: s for s in spans if s.version is not None}
