"""Aborted attempts a version defeated: from error texts and from evidence on storage.

The loser never reaches the log; what it leaves is an error text (if the user has it) and
orphan data files or stray commit files. This module joins those traces to a winning
version so `explain` can tell both sides of the race.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from forensics.log.table import TableLog
from forensics.sets import StateIndex


def defeated_attempts(
    log: TableLog,
    version: int,
    state: StateIndex,
    *,
    error_file: str | None = None,
    use_evidence: bool = True,
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if error_file:
        out += _from_error_text(log, version, error_file)
    if use_evidence:
        out += _from_evidence(log, version)
    return out


def _from_error_text(log: TableLog, version: int, error_file: str) -> list[dict[str, Any]]:
    try:
        from forensics.errortext import parse_error_text
        from forensics.winner import find_winner
    except ImportError:
        return []
    text = Path(error_file).read_text(errors="replace") if error_file != "-" else ""
    rep = parse_error_text(text)
    if not rep.recognized or rep.winner is None:
        return []
    match = find_winner(log, rep.winner)
    if match.version != version:
        return []
    return [
        {
            "source": f"error text {Path(error_file).name} (winner found by {match.how})",
            "exception": rep.exception,
            "partition": rep.partition,
            "file": rep.file,
            "loser_of": version,
            "why": match.why,
        }
    ]


def _from_evidence(log: TableLog, version: int) -> list[dict[str, Any]]:
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
