"""Make a pasted error text readable: bound it, drop terminal escapes, undo one level of string
escaping, name the wrappers around the Delta message, and cut an excerpt without stack frames.

Real texts arrive wrapped (corpus/errors INDEX: HiveSQLException, Simba ODBC, `Caused by:`,
stack frames with `\\tat` or `| at`), or quoted inside a Python tuple repr where every line
break is the two characters backslash-n.
"""

from __future__ import annotations

import re

from forensics.safe import inert

MAX_INPUT_CHARS = 2 * 1024 * 1024  # bound the work on a pasted log (2 MiB)
MAX_EXCERPT_CHARS = 4000
MAX_EXCERPT_LINES = 12

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

# Wrappers, by the first place they show. Order of the list = reporting order when tied.
WRAPPERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Python traceback", re.compile(r"Traceback \(most recent call last\)")),
    ("Py4JJavaError", re.compile(r"\bPy4JJavaError\b")),
    ("Simba ODBC", re.compile(r"\[Simba\]\[(?:Hardy|SparkODBC|ODBC)[^\]]*\]")),
    ("Simba JDBC", re.compile(r"\[Simba\]\[(?:SparkJDBCDriver|JDBC)[^\]]*\]")),
    ("HiveSQLException", re.compile(r"\bHiveSQLException\b")),
    ("SparkConnectGrpcException", re.compile(r"\bSparkConnectGrpcException\b")),
    ("StreamingQueryException", re.compile(r"\bStreamingQueryException\b")),
    ("SparkException", re.compile(r"\borg\.apache\.spark\.SparkException\b")),
    ("Exception in thread", re.compile(r"Exception in thread \"[^\"\n]*\"")),
    ("Caused by", re.compile(r"(?m)^[ \t|]*Caused by:")),
)

FRAME = re.compile(
    r"^[\s|>]*(?:at [\w$.<>/\[\]-]+\(.*\)\s*(?:~?\[[^\]]*\])?\s*$|at [\w$.<>/-]+\s*$|\.\.\. \d+ more\s*$|"
    r"File \"[^\"]*\", line \d+.*$)"
)


def normalize(text: object) -> str:
    """Bounded, escape-free text with `\\n` line ends; never raises."""
    if text is None:
        return ""
    if isinstance(text, bytes):
        s = text[: MAX_INPUT_CHARS * 4].decode("utf-8", errors="replace")
    else:
        s = text if isinstance(text, str) else str(text)
    s = s[:MAX_INPUT_CHARS]
    s = _ANSI.sub("", s)
    s = s.replace("\r\n", "\n").replace("\r", "\n")
    literal = s.count("\\n")
    if literal and literal >= max(2, s.count("\n")) or ("\\nConflicting commit:" in s):
        # a repr'd message (ODBC tuple, JSON log field): undo the line-break escapes only;
        # `\"` stays as is because the Conflicting-commit JSON may hold legitimate escapes.
        s = s.replace("\\r\\n", "\n").replace("\\n", "\n").replace("\\t", "\t")
    return s


def find_wrappers(text: str) -> list[str]:
    """Names of the wrappers around the message, outermost (first printed) first."""
    seen: list[tuple[int, int, str]] = []
    for order, (name, pat) in enumerate(WRAPPERS):
        m = pat.search(text)
        if m:
            seen.append((m.start(), order, name))
    return [name for _, _, name in sorted(seen)]


def is_frame(line: str) -> bool:
    return bool(FRAME.match(line))


def line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def excerpt(text: str, start: int, end: int) -> str:
    """The message lines spanning text[start:end], stack frames dropped, controls made visible."""
    start = max(0, min(start, len(text)))
    a = line_start(text, start)
    cut_prefix = start - a > 160  # a long wrapper prefix on the same line (ODBC, log4j): drop it
    if cut_prefix:
        a = start
    b = text.find("\n", max(end, a))
    b = len(text) if b < 0 else b
    lines = [ln for ln in text[a:b].split("\n") if ln.strip() and not is_frame(ln)]
    out: list[str] = []
    total = 0
    if cut_prefix and lines:
        lines[0] = "…" + lines[0]
    for ln in lines[:MAX_EXCERPT_LINES]:
        shown = inert(ln.strip(), MAX_EXCERPT_CHARS)
        if total + len(shown) > MAX_EXCERPT_CHARS:
            out.append(shown[: max(0, MAX_EXCERPT_CHARS - total - 1)] + "…")
            break
        out.append(shown)
        total += len(shown) + 1
    return "\n".join(out)


def first_lines(text: str, n: int = 3) -> str:
    """A short excerpt of an unrecognized text: its first non-empty, non-frame lines."""
    lines = [ln for ln in text.split("\n") if ln.strip() and not is_frame(ln)][:n]
    return "\n".join(inert(ln.strip(), 600) for ln in lines)
