"""The pipeline gate and the verdict stream.

`replay --jsonl` and `watch` print one JSON object per replayed window (`kind: "window"`, the
verdict replay gives the commit) or aborted attempt the evidence found (`kind: "attempt"`,
verdict `aborted`): a monitor reads one line per event instead of parsing one document.
`--fail-on reorder,anomaly,aborted` turns those verdicts into exit codes, one per class, so a
pipeline can stop on the outcome it cares about without parsing anything (`--strict` covers the
log's findings only). When several classes match, the first of GATE_PRECEDENCE wins: the most
severe outcome first.
"""

from __future__ import annotations

from typing import Any, Iterable

from forensics.errors import ExitCode, ForensicsError
from forensics.times import with_iso

# Gate classes, most severe first: the exit code of the first that matches is the one returned.
GATE_PRECEDENCE: tuple[str, ...] = ("anomaly", "aborted", "reorder")
GATE_CODES: dict[str, ExitCode] = {
    "anomaly": ExitCode.GATE_ANOMALY,  # committed although the rules say it should have aborted
    "aborted": ExitCode.GATE_ABORTED,  # a transaction that never reached the log (orphan files, inferred)
    "reorder": ExitCode.GATE_REORDER,  # passed only because a winner was forgiven: serial order != log order
}
_OF_VERDICT = {"reordered": "reorder", "anomaly": "anomaly", "aborted": "aborted"}


def parse_fail_on(text: str | None) -> tuple[str, ...]:
    """`reorder,anomaly` -> the classes, in precedence order; an unknown word is a usage error."""
    if text is None:
        return ()
    words = [w.strip().lower() for w in text.split(",") if w.strip()]
    bad = [w for w in words if w not in GATE_CODES]
    if bad or not words:
        got = "nothing" if not words else ", ".join(repr(w[:40]) for w in bad)
        raise ForensicsError(ExitCode.USAGE, f"--fail-on takes a comma list of {', '.join(GATE_PRECEDENCE)} (got {got})")
    return tuple(c for c in GATE_PRECEDENCE if c in words)


def line_class(line: dict[str, Any]) -> str | None:
    """The gate class of one verdict line (None: clean, skipped)."""
    return _OF_VERDICT.get(line.get("verdict", ""))


def gate_match(lines: Iterable[dict[str, Any]], fail_on: tuple[str, ...]) -> str | None:
    """The class whose exit code `--fail-on` asks for given these lines (GATE_CODES[class]): the
    first of GATE_PRECEDENCE among `fail_on` that some line has; None when none does."""
    seen = {line_class(x) for x in lines}
    return next((c for c in GATE_PRECEDENCE if c in fail_on and c in seen), None)


def window_line(table: str, verdict: Any, timestamp: int | None) -> dict[str, Any]:
    """One replayed window (a CommitVerdict) as a line; `timestamp`: its commit's time (epoch ms)."""
    return with_iso({"table": table, "kind": "window", **verdict.to_dict(), "timestamp": timestamp}, "timestamp")


def attempt_line(table: str, row: Any) -> dict[str, Any]:
    """One aborted attempt (an AttemptRow, forensics.analysis.silent) as a line."""
    return {"table": table, "kind": "attempt", "verdict": "aborted", **row.to_dict()}


def verdict_lines(table: str, verdicts: Iterable[Any], attempts: Iterable[Any], timestamps: dict[int, int | None]) -> list[dict[str, Any]]:
    """Every window by version, then every aborted attempt in the evidence's order."""
    out = [window_line(table, v, timestamps.get(v.version)) for v in sorted(verdicts, key=lambda v: v.version)]
    return out + [attempt_line(table, a) for a in attempts]
