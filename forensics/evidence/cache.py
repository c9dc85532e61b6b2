"""Attributions kept with the parse: an aborted attempt's answer is computed once per table version.

Attributing an attempt replays every hypothesis at every read version its evidence allows (tens of
`whatif`s); `stats`, `replay`, `export` and the TUI all ask for it. The answer depends on the log
up to its latest version, the attempt's files (paths, sizes, times), the rule profile, the writer's
settings and this tool's version, so those make the key. Stored as JSON (never pickle: the cache
may be shared) under the table's cache directory, written atomically; an unreadable entry is
recomputed. Nothing is written when the log was read with `--no-cache`.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from forensics.evidence.attempts import Attempt
from forensics.evidence.attribution import Attribution, Candidate
from forensics.evidence.content import ContentReading
from forensics.log.delta_log import DeltaLog

FORMAT = 4  # 2: partition columns are no row key; an app's first commit can beat its twin; 3: stale reads rank last; 4: read versions weighed by time
_FIELDS = ("concurrent_versions", "landed_after", "likely_exception", "winning_version", "rule", "hypothesis", "operation",
           "read_version", "partition", "file", "why", "retry_version", "tried")


def key(log: DeltaLog, attempt: Attempt, rules: str | None, extra: str = "") -> str:
    from forensics import __version__

    last = log.latest_version
    rec = log.record(last) if last is not None else None
    ident = [FORMAT, __version__, log.location, last, rec.timestamp if rec else None, len(log.versions), rules, extra,
             sorted((f.path, f.size, f.mtime_ms) for f in attempt.files), attempt.stray_commit]
    return hashlib.sha256(json.dumps(ident, default=str).encode()).hexdigest()[:32]


def _dir(log: DeltaLog) -> Path | None:
    return None if log.cache_dir is None else Path(log.cache_dir) / "attributions"


def load(log: DeltaLog, k: str, attempt: Attempt) -> bool:
    """Fill `attempt` from the cache; False when there is no usable entry."""
    d = _dir(log)
    if d is None:
        return False
    try:
        doc = json.loads((d / f"{k}.json").read_text(encoding="utf-8"))
        if doc.get("format") != FORMAT:
            return False
        for f in _FIELDS:
            setattr(attempt, f, doc["fields"][f])
        if doc["fields"]["partition"] is not None:
            attempt.partition = dict(doc["fields"]["partition"])
        a = doc.get("attribution")
        if a is not None:
            attempt.attribution = Attribution([Candidate(**{**c, "read_versions": tuple(c["read_versions"])}) for c in a["candidates"]],
                                              list(a["basis"]), tuple(a["read_versions"]) if a["read_versions"] else None,
                                              list(a["tried"]))
        c = doc.get("content")
        if c is not None:
            attempt.content = ContentReading(**{**c, "operations": tuple(c["operations"]), "sources": tuple(c["sources"]),
                                                "read_versions": tuple(c["read_versions"]) if c["read_versions"] else None})
        return True
    except (OSError, ValueError, KeyError, TypeError):
        return False


def save(log: DeltaLog, k: str, attempt: Attempt) -> None:
    d = _dir(log)
    if d is None:
        return
    from dataclasses import asdict

    att = attempt.attribution
    doc: dict[str, Any] = {
        "format": FORMAT,
        "fields": {f: getattr(attempt, f) for f in _FIELDS},
        "attribution": None if att is None else {"candidates": [asdict(c) for c in att.candidates], "basis": att.basis,
                                                  "read_versions": att.read_versions, "tried": att.tried},
        "content": None if attempt.content is None else asdict(attempt.content),
    }
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(doc, out, default=str)
        os.replace(tmp, d / f"{k}.json")
    except OSError:
        pass  # a cache that cannot be written costs time, never an answer
