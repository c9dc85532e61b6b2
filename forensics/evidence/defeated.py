"""Aborted attempts a version defeated: from error texts and from evidence on storage.

The loser never reaches the log; what it leaves is an error text (if the user has it) and
orphan data files or stray commit files. This module joins those traces to a winning
version so `explain` can tell both sides of the race.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from forensics.log.delta_log import DeltaLog
from forensics.sets.commit_sets import StateIndex


def defeated_attempts(
    log: DeltaLog,
    version: int,
    state: StateIndex,
    *,
    error_file: str | None = None,
    use_evidence: bool = True,
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if error_file:
        out += _from_error_text(log, version, error_file, state)
    if use_evidence:
        out += _from_evidence(log, version)
    return out


def _from_error_text(log: DeltaLog, version: int, error_file: str, state: StateIndex) -> list[dict[str, Any]]:
    """The error text's loser, when the text's winner is this version (with its own advice)."""
    from forensics.errortext import parse_error_text
    from forensics.evidence.loser import explain_error

    text = sys.stdin.read() if error_file == "-" else Path(error_file).read_text(errors="replace")
    rep = parse_error_text(text)
    if not rep.recognized:
        return []
    exp = explain_error(log, rep, state=state)
    if exp.winning_version != version:
        return []
    how = exp.match.how if exp.match else "replay"
    name = "stdin" if error_file == "-" else Path(error_file).name
    return [
        {
            "source": f"error text {name} (winner found by {how})",
            "exception": rep.exception,
            "partition": rep.partition,
            "file": rep.file,
            "loser_of": version,
            "why": exp.match.why if exp.match else exp.why,
            "advice": list(exp.advice),
        }
    ]


def _from_evidence(log: DeltaLog, version: int) -> list[dict[str, Any]]:
    try:
        from forensics.evidence import collect_evidence
    except ImportError:
        return []
    try:
        ev = collect_evidence(log)
    except Exception:  # noqa: BLE001 - evidence is best effort for explain; `evidence` reports its own errors
        return []
    out = []
    for a in getattr(ev, "attempts", []):
        wv = getattr(a, "winning_version", None)
        if wv != version:
            continue
        out.append(
            {
                "source": f"orphan files ({len(a.files)}) in {', '.join(_pstr(p) for p in a.partitions) or 'the table root'}",
                "exception": a.likely_exception,
                "partition": getattr(a, "partition", None),
                "file": getattr(a, "file", None),
                "loser_of": version,
                "why": a.why,
            }
        )
    return out


def _pstr(p: Any) -> str:
    if isinstance(p, dict):
        return ",".join(f"{k}={v}" for k, v in p.items())
    return str(p)
