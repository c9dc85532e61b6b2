"""Mermaid `sequenceDiagram` of the transactions against the log, for incident write-ups.

Renders on GitHub/GitLab Markdown. Participants are the writer tracks plus "Delta log";
messages are "read v42", "commit v43 ✓", "abort ✗ ConcurrentAppend [date=…]"; reorders and
anomalies get notes. Participant ids are ASCII (W1, W2, …, L); every text taken from the log
goes through `text()`, which turns Mermaid's syntax characters into entity codes (`#58;` …).
"""

from __future__ import annotations

import re
from pathlib import Path

from forensics.model import hive_partition
from forensics.safe import inert
from forensics.analysis.timeline import Span, Timeline

_ENTITIES = {
    "#": "#35;",  # first: the entity syntax itself
    ":": "#58;",
    ";": "#59;",
    "<": "#lt;",
    ">": "#gt;",
    "&": "#amp;",
    "%": "#37;",  # %% starts a comment
    "{": "#123;",
    "}": "#125;",
    '"': "#quot;",
    "`": "#96;",
    "\\": "#92;",
}
_RE = re.compile("|".join(re.escape(k) for k in _ENTITIES))


def text(value: object, max_len: int = 160) -> str:
    """Untrusted text made inert for a Mermaid label: one line, syntax characters as entity codes."""
    s = inert(value, max_len)
    return _RE.sub(lambda m: _ENTITIES[m.group(0)], s)


def _short_exc(name: str | None) -> str:
    return (name or "conflict").removesuffix("Exception")


def _events(tl: Timeline) -> list[tuple[int, int, str, Span]]:
    """(time, order, what, span): reads at start, commits/aborts at end, in time order.

    At one instant a commit comes before the reads of the version it created; a span's own
    read always comes before its own commit.
    """
    out = []
    for s in tl.spans:
        if s.read_version is not None and s.start_ms is not None:
            out.append((s.start_ms, 1, "read", s))
        t = s.end_ms if s.end_ms is not None else s.start_ms
        if t is not None:
            out.append((t, 0, "end", s))
    out.sort(key=lambda e: (e[0], e[1], e[3].version if e[3].version is not None else 1 << 62, e[3].id))
    seen_end: set[str] = set()
    fixed: list[tuple[int, int, str, Span]] = []
    for ev in out:
        if ev[2] == "read" and ev[3].id in seen_end:
            i = next(k for k, x in enumerate(fixed) if x[2] == "end" and x[3].id == ev[3].id)
            fixed.insert(i, ev)
            continue
        if ev[2] == "end":
            seen_end.add(ev[3].id)
        fixed.append(ev)
    return fixed


def mermaid(tl: Timeline) -> str:
    ids = {w.id: f"W{i + 1}" for i, w in enumerate(tl.writers)}
    lines = ["sequenceDiagram"]
    lines.append(f"    %% delta-forensics timeline schema {tl.schema_version}; versions {tl.from_version}..{tl.to_version}")
    for w in tl.writers:
        lines.append(f"    participant {ids[w.id]} as {text(w.label, 60)}")
    lines.append("    participant L as Delta log")
    for _t, _o, what, s in _events(tl):
        p = ids.get(s.writer, "W0")
        if what == "read":
            lines.append(f"    L-->>{p}: read v{s.read_version}" + (f" (for v{s.version})" if s.version is not None else " (attempt)"))
            continue
        op = text(s.operation or "?", 40)
        if s.kind == "attempt":
            part = f" [{text(hive_partition(s.partition), 80)}]" if s.partition else ""
            ws = list(dict.fromkeys(c["winning_version"] for c in s.candidates))
            vs = (" vs one of " + ", ".join(f"v{w}" for w in ws) if len(ws) > 1
                  else f" vs v{s.winning_version}" if s.winning_version is not None else "")
            lines.append(f"    {p}-x L: abort ✗ {text(_short_exc(s.exception), 60)}{part}{vs} (inferred)")
            continue
        if s.verdict == "anomaly":
            lines.append(f"    {p}->>L: commit v{s.version} ⚠ {op}")
            part = f" [{text(hive_partition(s.partition), 80)}]" if s.partition else ""
            lines.append(f"    Note over {p},L: v{s.version} should have aborted with {text(_short_exc(s.exception), 60)}{part} vs v{s.winning_version}")
        else:
            mark = {"skipped": "?", "reordered": "✓ ↺"}.get(s.verdict, "✓")
            lines.append(f"    {p}->>L: commit v{s.version} {mark} {op}")
        if s.reordered_before:
            before = ", ".join(f"v{x}" for x in s.reordered_before)
            lines.append(f"    Note over {p},L: serial order v{s.version} before {before} ({text(s.isolation_level or '', 30)})")
    return "\n".join(lines) + "\n"


def write_mermaid(tl: Timeline, path: Path) -> list[Path]:
    path.write_text(mermaid(tl), encoding="utf-8")
    return [path]
