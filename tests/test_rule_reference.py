"""docs/conflict-rules.md is the rule reference the code cites by section number.

Two promises are checked, without network and without ../shared:
1. every section citation in the code and the docs resolves to a heading of that number there;
2. every numbered top-level section that states rules names the engine source it was read from
   (a `Source:` line with `repo @ ref` and a file, or a Databricks docs page title).

The section sign is written as an escape in this file so the file does not cite anything itself.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "conflict-rules.md"

SECTION_SIGN = "\u00a7"
CITATION = re.compile(SECTION_SIGN + r"(\d+(?:\.\d+)*)")
HEADING = re.compile(r"^(#{2,6})\s+(\d+(?:\.\d+)*)\.?\s+\S")
CODE_DIRS = ("forensics", "tui", "tests", "bench", "scripts")

# A citation line: `Source: <repo> @ <ref> ... <file>` or `Source: Databricks docs, "<title>"`.
SOURCE_LINE = re.compile(r"^\s*(?:[-*]\s+)?Source:\s+(?P<rest>.+)$")
REPO_AT_REF = re.compile(r"\bdelta-io/(?:delta|delta-rs|delta-kernel-rs) @ \S+")
FILE_NAMED = re.compile(r"[\w./-]+\.(?:scala|rs|java|json)\b|\b[\w-]+/[\w./-]+")
DATABRICKS_TITLES = (
    "Isolation levels and write conflicts",
    "Isolation levels (WriteSerializable and Serializable)",
    "Row-level concurrency",
    "Deletion vectors in Databricks",
)
NOT_RULE_SECTIONS = {"0"}  # "How to cite"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None  # moved away while we listed (files are being reorganised concurrently)


def _cited_files() -> list[Path]:
    files = [p for d in CODE_DIRS for p in sorted((ROOT / d).rglob("*.py"))]
    files.append(ROOT / "README.md")
    files += [p for p in sorted((ROOT / "docs").glob("*.md")) if p.resolve() != REFERENCE.resolve()]
    return files


def citations(files: list[Path]) -> list[tuple[str, int, str]]:
    """(file, line, number) for every section citation in the given files."""
    found = []
    for path in files:
        text = _read(path)
        if text is None:
            continue
        rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
        for lineno, line in enumerate(text.splitlines(), 1):
            found += [(rel, lineno, m.group(1)) for m in CITATION.finditer(line)]
    return found


def headings(reference: str) -> list[tuple[int, str]]:
    """(markdown level, section number) of every numbered heading, in order (fenced code skipped)."""
    out, fenced = [], False
    for line in reference.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if m:
            out.append((len(m.group(1)), m.group(2)))
    return out


def unresolved(found: list[tuple[str, int, str]], numbers: set[str]) -> list[str]:
    return [f"{f}:{n}: {SECTION_SIGN}{num}" for f, n, num in found if num not in numbers]


def top_sections(reference: str) -> dict[str, list[str]]:
    """Lines of each `## N.` section (up to the next `## ` heading)."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in reference.splitlines():
        m = HEADING.match(line)
        if line.startswith("## "):
            current = m.group(2) if m and len(m.group(1)) == 2 else None
            if current is not None:
                sections[current] = []
            continue
        if current is not None:
            sections[current].append(line)
    return sections


def is_source_citation(line: str) -> bool:
    m = SOURCE_LINE.match(line)
    if not m:
        return False
    rest = m.group("rest")
    if REPO_AT_REF.search(rest) and FILE_NAMED.search(rest.split(" @ ", 1)[1]):
        return True
    titles = re.findall(r'"([^"]+)"', rest)
    return rest.startswith("Databricks docs") and any(t.startswith(k) for t in titles for k in DATABRICKS_TITLES)


def _reference() -> str:
    assert REFERENCE.is_file(), f"{REFERENCE.relative_to(ROOT)} is missing"
    return REFERENCE.read_text(encoding="utf-8")


def test_every_citation_resolves_to_a_heading():
    numbers = {num for _, num in headings(_reference())}
    found = citations(_cited_files())
    assert any(f.startswith("forensics/") for f, _, _ in found), "no section citations found in forensics/"
    missing = unresolved(found, numbers)
    assert not missing, (
        f"{len(missing)} citation(s) have no heading in docs/conflict-rules.md:\n" + "\n".join(missing))


def test_headings_are_unique_and_nested():
    seen: set[str] = set()
    problems = []
    for level, num in headings(_reference()):
        depth = num.count(".") + 1
        if level != depth + 1:
            problems.append(f"{num}: heading level {level} does not match its depth {depth}")
        if num in seen:
            problems.append(f"{num}: duplicate heading")
        if depth > 1 and num.rsplit(".", 1)[0] not in seen:
            problems.append(f"{num}: its parent section is not above it")
        seen.add(num)
    assert not problems, "\n".join(problems)


def test_every_rule_section_cites_engine_source():
    sections = top_sections(_reference())
    assert {str(n) for n in range(1, 14)} <= set(sections), "top-level sections 1-13 must exist"
    uncited = [n for n, lines in sections.items()
               if n not in NOT_RULE_SECTIONS and not any(is_source_citation(x) for x in lines)]
    assert not uncited, f"sections without an engine-source citation: {uncited}"


def test_every_source_line_is_well_formed():
    bad = [line.strip() for line in _reference().splitlines()
           if SOURCE_LINE.match(line) and not is_source_citation(line)]
    assert not bad, "Source lines without `repo @ ref` and a file (or a Databricks page title):\n" + "\n".join(bad)


def test_checks_can_fail():
    """The helpers reject what they must, so the tests above are not vacuous."""
    assert unresolved([("x.py", 3, "99.9")], {"1", "5.6"}) == [f"x.py:3: {SECTION_SIGN}99.9"]
    assert citations([]) == []
    assert [n for _, n in headings("## 2. A\n```\n## 3. in a fence\n```\n### 2.1 B\n")] == ["2", "2.1"]
    assert is_source_citation("Source: delta-io/delta @ v4.1.0 — ConflictChecker.scala — checkConflicts")
    assert is_source_citation('Source: Databricks docs, "Row-level concurrency" (page)')
    assert not is_source_citation("Source: delta-io/delta — ConflictChecker.scala")  # no ref
    assert not is_source_citation("Source: delta-io/delta @ v4.1.0")  # no file
    assert not is_source_citation("See delta-io/delta @ v4.1.0 — ConflictChecker.scala")  # not a Source line
    assert not is_source_citation('Source: Databricks docs, "Some other page"')
