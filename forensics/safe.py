"""Make untrusted strings (from a log or an error text) inert before they reach a terminal.

Log fields are written by whoever could write to the table: user names, notebook paths,
operation parameters can hold ANSI/OSC escape sequences or Rich markup. We replace control
characters with visible escapes and escape Rich markup; JSON output goes through json.dumps,
which escapes control characters by itself.
"""

from __future__ import annotations

import re
from typing import Any

from rich.markup import escape as _rich_escape
from rich.text import Text

# C0 and C1 controls, DEL; keep nothing (newlines are replaced too: one field, one line).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069\u200e\u200f]")
# Lone surrogates: file names that are not UTF-8 arrive as U+DC80..U+DCFF (surrogateescape) and
# would be written back as the raw byte (0x9b is CSI on 8-bit terminals) or crash a strict stream.
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _visible(ch: str) -> str:
    o = ord(ch)
    if ch == "\n":
        return "\\n"
    if ch == "\t":
        return "\\t"
    if ch == "\r":
        return "\\r"
    if o < 0x100:
        return f"\\x{o:02x}"
    if 0xDC80 <= o <= 0xDCFF:  # an undecodable byte (surrogateescape): show the byte itself
        return f"\\x{o - 0xDC00:02x}"
    return f"\\u{o:04x}"


def inert(value: Any, max_len: int | None = 2000) -> str:
    """A printable, single-line rendering of an untrusted value (no markup escaping)."""
    if value is None:
        return ""
    s = value if isinstance(value, str) else str(value)
    s = _CONTROL.sub(lambda m: _visible(m.group(0)), s)
    s = _BIDI.sub(lambda m: _visible(m.group(0)), s)
    s = _SURROGATE.sub(lambda m: _visible(m.group(0)), s)
    if max_len is not None and len(s) > max_len:
        s = s[: max_len - 1] + "…"
    return s


def inert_multiline(value: Any, max_len: int | None = 20000) -> str:
    """Like inert() but keeps line breaks (for error texts shown as blocks)."""
    if value is None:
        return ""
    s = value if isinstance(value, str) else str(value)
    lines = [inert(line, None) for line in s.split("\n")]
    out = "\n".join(lines)
    if max_len is not None and len(out) > max_len:
        out = out[: max_len - 1] + "…"
    return out


def markup(value: Any, max_len: int | None = 2000) -> str:
    """Inert and Rich-markup-escaped: safe to interpolate into a Rich markup string."""
    return _rich_escape(inert(value, max_len))


def text(value: Any, style: str = "", max_len: int | None = 2000) -> Text:
    """A Rich Text object (never parsed as markup) holding the inert value."""
    return Text(inert(value, max_len), style=style)


# Like json.dumps(ensure_ascii=True): everything past "~" (DEL, C1 controls, bidi overrides, any
# non-ASCII) becomes \uXXXX; JSON encoders already escape the C0 controls.
_NON_ASCII = re.compile(r"[^\x00-\x7e]")


def _escape(m: re.Match) -> str:
    n = ord(m.group())
    if n < 0x10000:
        return f"\\u{n:04x}"
    n -= 0x10000
    return f"\\u{0xD800 + (n >> 10):04x}\\u{0xDC00 + (n & 0x3FF):04x}"


def ascii_json(text: str) -> str:
    """What `json.dumps(..., ensure_ascii=True)` does to non-ASCII characters, on finished JSON
    text: C1 controls and bidi overrides in a log never reach the terminal raw."""
    return _NON_ASCII.sub(_escape, text)
