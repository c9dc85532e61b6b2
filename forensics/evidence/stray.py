"""Commit files that never became part of the table: leftover temporary commits and
unratified staged commits. Each is read as an attempted commit (its commitInfo and actions).

Hadoop-style log stores write `_delta_log/.NNN.json.<uuid>.tmp` then rename it; a crash or a
lost rename race leaves the temporary file. Catalog-managed tables stage `NNN.<uuid>.json` in
`_delta_log/_staged_commits`; the catalog ratifies at most one per version, and a staged file
whose version was published from different bytes was not the one ratified.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from forensics.log import listing as L
from forensics.log.delta_log import DeltaLog, read_small
from forensics.safe import inert
from forensics.times import with_iso

_VERSION = re.compile(r"(\d{20})")
MAX_LINES = 100_000


@dataclass
class StrayCommit:
    file: str  # relative to the table root
    kind: str  # "temporary" | "staged-unratified" | "staged-ambiguous"
    version: int | None
    mtime_ms: int
    operation: str | None = None
    read_version: int | None = None
    timestamp: int | None = None
    txn_id: str | None = None
    engine_info: str | None = None
    is_blind_append: bool | None = None
    adds: list[str] = field(default_factory=list)
    removes: list[str] = field(default_factory=list)
    partitions: list[dict[str, Any]] = field(default_factory=list)
    metadata: bool = False
    app_ids: list[str] = field(default_factory=list)
    why: str = ""
    readable: bool = True

    def to_dict(self) -> dict[str, Any]:
        return with_iso({
            "file": self.file, "kind": self.kind, "version": self.version, "mtime": self.mtime_ms,
            "operation": self.operation, "readVersion": self.read_version, "timestamp": self.timestamp,
            "txnId": self.txn_id, "engineInfo": self.engine_info, "isBlindAppend": self.is_blind_append,
            "adds": self.adds, "removes": self.removes, "partitions": self.partitions,
            "metadata": self.metadata, "appIds": self.app_ids, "readable": self.readable, "why": self.why,
        }, "mtime", "timestamp")


def _parse(raw: bytes, sc: StrayCommit) -> None:
    """Read the JSON lines with json.loads only (data, never code); broken lines are skipped."""
    seen_parts: list[dict[str, Any]] = []
    bad = 0
    for i, line in enumerate(raw.decode("utf-8", "replace").splitlines()):
        if i >= MAX_LINES:
            break
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if not isinstance(obj, dict):
            continue
        ci = obj.get("commitInfo")
        if isinstance(ci, dict):
            sc.operation = inert(ci.get("operation"), 200) or None
            rv = ci.get("readVersion")
            sc.read_version = rv if isinstance(rv, int) else None
            ts = ci.get("timestamp")
            sc.timestamp = ts if isinstance(ts, int) else None
            sc.txn_id = inert(ci.get("txnId"), 100) or None
            sc.engine_info = inert(ci.get("engineInfo"), 200) or None
            ba = ci.get("isBlindAppend")
            sc.is_blind_append = ba if isinstance(ba, bool) else None
        for kind, bucket in (("add", sc.adds), ("remove", sc.removes)):
            a = obj.get(kind)
            if isinstance(a, dict) and isinstance(a.get("path"), str):
                bucket.append(a["path"])
                pv = a.get("partitionValues")
                if kind == "add" and isinstance(pv, dict) and pv and pv not in seen_parts:
                    seen_parts.append(pv)
        if isinstance(obj.get("metaData"), dict):
            sc.metadata = True
        t = obj.get("txn")
        if isinstance(t, dict) and isinstance(t.get("appId"), str):
            sc.app_ids.append(t["appId"])
    sc.partitions = seen_parts
    if bad:
        sc.why += f" {bad} line(s) were not valid JSON (a partly written file)."


def _read(f: L.LogFile) -> bytes | None:
    try:
        return read_small(f.uri)
    except OSError:
        return None


def stray_commits(log: DeltaLog) -> list[StrayCommit]:
    out: list[StrayCommit] = []
    listing = log.listing
    for f in listing.temp_commits:
        m = _VERSION.search(f.name)
        sc = StrayCommit(f"_delta_log/{f.name}", "temporary", int(m.group(1)) if m else None, f.mtime_ms)
        sc.why = "a temporary commit file left behind: the writer never renamed it into place (crash, or it lost the race for this version)."
        raw = _read(f)
        if raw is None:
            sc.readable = False
        else:
            _parse(raw, sc)
        out.append(sc)
    by_v: dict[int, list[L.LogFile]] = {}
    for v, _u, f in listing.staged:
        by_v.setdefault(v, []).append(f)
    published_max = max(listing.commits) if listing.commits else -1
    for v, fs in sorted(by_v.items()):
        pub = listing.commits.get(v)
        pub_bytes = _read(pub) if pub is not None else None
        for f in fs:
            raw = _read(f)
            if pub is not None:
                if raw is not None and pub_bytes is not None and raw == pub_bytes:
                    continue  # ratified: the published commit has these bytes
                kind, why = "staged-unratified", f"version {v} was published from different content: this staged commit was not ratified."
            elif v > published_max and len(fs) > 1:
                kind, why = "staged-ambiguous", f"{len(fs)} staged commits for version {v}; at most one can be ratified and storage does not say which."
            else:
                continue  # the one staged commit past the published log: read as a commit by the reader
            sc = StrayCommit(f"_delta_log/{f.name}", kind, v, f.mtime_ms, why=why)
            if raw is None:
                sc.readable = False
            else:
                _parse(raw, sc)
            out.append(sc)
    return out
