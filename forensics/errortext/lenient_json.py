"""A lenient reader for the `Conflicting commit:` JSON printed in Delta error texts (conflict-rules §7.4).

Why not `json.loads`: delta-spark <= 4.0 prints the winner's commitInfo with the values of
`operationParameters` written raw, so real texts hold `{"mode":Append,"partitionBy":["x"]}` and
`"predicate":(t.id = s.id)`. Platforms truncate, elide (`...`, `…`), redact (`<txn-id>`, `XXXX`,
`****`) and line-wrap the text. This module salvages every complete key/value it can and says
whether the object was whole. It is a small tokenizer plus a recursive-descent parser with a
depth bound and a size bound; it never evaluates anything and never raises on any input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

MAX_DEPTH = 32
MAX_CHARS = 1 << 20  # one commitInfo is a few KiB; bound the work on hostile input
MAX_BARE = 8192

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?\Z")
# Placeholders platforms put where a value was: <txn-id>, <redacted>, XXXX, ****, [REDACTED].
_REDACTED = re.compile(
    r"\A(?:<[^<>]{0,64}>|[xX]{3,}|\*{3,}|#{3,}|\[(?:REDACTED|redacted|MASKED|masked)\]|"
    r"REDACTED|redacted|MASKED|masked|\?{3,})\Z"
)
_ELLIPSIS = ("...", "…")
_BARE_KEY = re.compile(r"[A-Za-z_$][\w$.-]{0,200}")
_WRAP_NOTE = "line break inside a string (joined)"


class _Marker:
    """A value that is not data: a redaction placeholder or an elision."""

    __slots__ = ("kind", "raw")

    def __init__(self, kind: str, raw: str) -> None:
        self.kind = kind
        self.raw = raw


@dataclass
class LenientJson:
    """What was salvaged. `complete` is True only for a whole, unredacted, un-elided object."""

    value: Any
    complete: bool
    end: int  # index just past the parsed value in the input text
    redacted: list[str] = field(default_factory=list)  # key paths whose value was a placeholder
    elided: list[str] = field(default_factory=list)  # key paths cut short or elided
    problems: list[str] = field(default_factory=list)  # one short phrase each


class _Parser:
    def __init__(self, text: str, start: int, max_depth: int) -> None:
        self.s = text
        self.i = start
        self.n = min(len(text), start + MAX_CHARS)
        self.max_depth = max_depth
        self.complete = True
        self.redacted: list[str] = []
        self.elided: list[str] = []
        self.problems: list[str] = []

    # ---------------------------------------------------------------- helpers
    def _problem(self, what: str) -> None:
        self.complete = False
        if len(self.problems) < 20 and what not in self.problems:
            self.problems.append(what)

    def _ws(self) -> None:
        s, n = self.s, self.n
        while self.i < n and s[self.i] in " \t\r\n\u00a0":
            self.i += 1

    def _at_ellipsis(self) -> int:
        for e in _ELLIPSIS:
            if self.s.startswith(e, self.i):
                return len(e)
        return 0

    # ---------------------------------------------------------------- values
    def value(self, path: str, depth: int) -> tuple[Any, bool]:
        """One value; (value, whole). A _Marker value is never stored as data."""
        self._ws()
        if self.i >= self.n:
            self._problem("text ends where a value was expected")
            return None, False
        c = self.s[self.i]
        if c in "{[":
            if depth >= self.max_depth:
                self._problem(f"nesting deeper than {self.max_depth}")
                self._skip_container()
                return None, False
            return (self.obj(path, depth + 1) if c == "{" else self.arr(path, depth + 1))
        if c == '"':
            v, whole = self.string()
            if not whole:
                self.elided.append(path)
                self._problem("string cut off")
                return None, False
            if _REDACTED.match(v):
                self.redacted.append(path)
                self._problem("redacted value")
                return _Marker("redacted", v), False
            if v.endswith(_ELLIPSIS):
                self.elided.append(path)
                self._problem("elided value")
                return _Marker("elided", v), False
            return v, True
        k = self._at_ellipsis()
        if k:
            self.i += k
            self.elided.append(path)
            self._problem("elided value")
            return _Marker("elided", "..."), False
        return self.bare(path)

    def string(self) -> tuple[str, bool]:
        """A double-quoted string. A raw line break inside it is a platform's line wrap: dropped."""
        s, n = self.s, self.n
        self.i += 1
        out: list[str] = []
        while self.i < n:
            c = s[self.i]
            if c == '"':
                self.i += 1
                return "".join(out), True
            if c == "\\":
                if self.i + 1 >= n:
                    self.i = n
                    break
                e = s[self.i + 1]
                if e == "u":
                    hexd = s[self.i + 2 : self.i + 6]
                    if len(hexd) == 4 and all(h in "0123456789abcdefABCDEF" for h in hexd):
                        out.append(chr(int(hexd, 16)))
                        self.i += 6
                        continue
                    out.append("\\u")
                    self.i += 2
                    continue
                out.append({"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}.get(e, e))
                self.i += 2
                continue
            if c in "\r\n":
                self.i += 1
                # a wrap is repaired, not a loss: note it without marking the object incomplete
                if _WRAP_NOTE not in self.problems:
                    self.problems.append(_WRAP_NOTE)
                continue
            out.append(c)
            self.i += 1
        return "".join(out), False

    def bare(self, path: str) -> tuple[Any, bool]:
        """An unquoted value: a JSON literal, or a raw value as delta-spark <= 4.0 prints it.

        It runs to the next `,` `}` `]` outside parentheses and quotes, or to a line break
        (a raw SQL predicate such as `(a IN (1, 2))` keeps its commas).
        """
        s, n = self.s, self.n
        start = self.i
        paren = 0
        quote: str | None = None
        while self.i < n and self.i - start < MAX_BARE:
            c = s[self.i]
            if quote:
                if c == quote:
                    quote = None
                elif c == "\n":
                    break
            elif c in "'\"`":
                quote = c
            elif c == "(":
                paren += 1
            elif c == ")":
                paren = max(0, paren - 1)
            elif c in ",}]" and paren == 0:
                break
            elif c in "{[" and paren == 0 and self.i == start:
                break
            elif c == "\n":
                break
            self.i += 1
        raw = s[start : self.i].strip()
        if self.i == start:  # an unexpected structural character; let the caller decide
            self._problem("unexpected character")
            return None, False
        if self.i >= n:  # the value ran into the end of the text: it may be cut short
            self.elided.append(path)
            self._problem("text ends inside a value")
            return None, False
        if _NUMBER.match(raw):
            try:
                return (int(raw) if re.fullmatch(r"-?\d+", raw) else float(raw)), True
            except ValueError:  # pragma: no cover - the regex admits only valid numbers
                return raw, True
        if raw in ("true", "false"):
            return raw == "true", True
        if raw == "null":
            return None, True
        if _REDACTED.match(raw):
            self.redacted.append(path)
            self._problem("redacted value")
            return _Marker("redacted", raw), False
        if raw.endswith(_ELLIPSIS) or raw.startswith(_ELLIPSIS):
            self.elided.append(path)
            self._problem("elided value")
            return _Marker("elided", raw), False
        # a raw (unquoted) value, e.g. Append; keep it as the string Delta meant
        if "unquoted value" not in self.problems and len(self.problems) < 20:
            self.problems.append("unquoted value")  # invalid JSON, but nothing lost
        return raw, True

    def _skip_container(self) -> None:
        """Skip a too-deep container by bracket counting (strings respected), bounded by n."""
        s, n = self.s, self.n
        depth = 0
        in_str = False
        while self.i < n:
            c = s[self.i]
            if in_str:
                if c == "\\":
                    self.i += 1
                elif c == '"':
                    in_str = False
            elif c == '"':
                in_str = True
            elif c in "{[":
                depth += 1
            elif c in "}]":
                depth -= 1
                if depth == 0:
                    self.i += 1
                    return
            self.i += 1

    # ---------------------------------------------------------------- containers
    def obj(self, path: str, depth: int) -> tuple[dict[str, Any], bool]:
        s = self.s
        self.i += 1  # '{'
        out: dict[str, Any] = {}
        whole = True
        while True:
            self._ws()
            if self.i >= self.n:
                self._problem("text ends inside an object")
                return out, False
            c = s[self.i]
            if c == "}":
                self.i += 1
                return out, whole
            if c == ",":
                self.i += 1
                continue
            k = self._at_ellipsis()
            if k:
                self.i += k
                self.elided.append(path + ".…")
                self._problem("elided members")
                whole = False
                continue
            # key: quoted, or bare up to ':' (lenient)
            if c == '"':
                key, ok = self.string()
                if not ok:
                    self._problem("text ends inside a key")
                    return out, False
            else:
                m = _BARE_KEY.match(s, self.i, self.n)
                if not m:
                    self._problem("unexpected character in an object")
                    return out, False
                key = m.group(0)
                self.i = m.end()
            self._ws()
            if self.i >= self.n:
                self._problem("text ends after a key")
                return out, False
            if s[self.i] != ":":
                self._problem("missing ':' after a key")
                return out, False
            self.i += 1
            sub = f"{path}.{key}" if path else key
            v, ok = self.value(sub, depth)
            if isinstance(v, _Marker):
                whole = False
            elif ok:
                out[key] = v
            else:
                whole = False
                if isinstance(v, (dict, list)) and v:
                    out[key] = v  # a partial container still holds complete members
                if self.i >= self.n:
                    return out, False
            self._ws()
            if self.i >= self.n:
                self._problem("text ends inside an object")
                return out, False
            c = s[self.i]
            if c == ",":
                self.i += 1
            elif c == "}":
                self.i += 1
                return out, whole
            elif c == '"':
                self._problem("missing ',' between members")  # keep going
            elif self._at_ellipsis():
                continue
            else:
                self._problem("unexpected character in an object")
                return out, False

    def arr(self, path: str, depth: int) -> tuple[list[Any], bool]:
        s = self.s
        self.i += 1  # '['
        out: list[Any] = []
        whole = True
        while True:
            self._ws()
            if self.i >= self.n:
                self._problem("text ends inside an array")
                return out, False
            c = s[self.i]
            if c == "]":
                self.i += 1
                return out, whole
            if c == ",":
                self.i += 1
                continue
            if c == "}":
                self._problem("unbalanced brackets")
                return out, False
            v, ok = self.value(f"{path}[{len(out)}]", depth)
            if isinstance(v, _Marker):
                whole = False
            elif ok:
                out.append(v)
            else:
                whole = False
                if isinstance(v, (dict, list)) and v:
                    out.append(v)
                if self.i >= self.n:
                    return out, False
                if self.s[self.i] not in ",]":
                    self._problem("unexpected character in an array")
                    return out, False


def parse_lenient(text: str, start: int = 0, max_depth: int = MAX_DEPTH) -> LenientJson:
    """Parse the JSON-ish value at `text[start:]` (after whitespace); never raises.

    Returns the salvaged value (a dict for `{...}`), whether it was whole, where it ended,
    and which key paths were redacted or cut.
    """
    try:
        p = _Parser(text if isinstance(text, str) else str(text), max(0, int(start)), max(1, max_depth))
        p._ws()
        if p.i >= p.n:
            return LenientJson(None, False, p.i, problems=["no value"])
        v, ok = p.value("", 0)
        if isinstance(v, _Marker):
            v = None
        return LenientJson(v, bool(ok and p.complete), p.i, p.redacted, p.elided, p.problems)
    except Exception as e:  # noqa: BLE001 - a parser of untrusted text must never raise
        return LenientJson(None, False, start, problems=[f"internal error: {type(e).__name__}"])
