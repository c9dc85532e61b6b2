"""Make untrusted strings (from a log or an error text) inert before they reach a terminal.

Log fields are written by whoever could write to the table: user names, notebook paths,
operation parameters can hold ANSI/OSC escape sequences or Rich markup. We replace control
characters with visible escapes and escape Rich markup; JSON output goes through json.dumps,
which escapes control characters by itself.

Secrets (credentials in options, settings, URIs, the environment) are the other thing never to
show: the one rule for them lives here too, at the end, so the CLI, storage and runtime share it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported on first use: the CLI's start-up path reads this module
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
    from rich.markup import escape

    return escape(inert(value, max_len))


def text(value: Any, style: str = "", max_len: int | None = 2000) -> Text:
    """A Rich Text object (never parsed as markup) holding the inert value."""
    from rich.text import Text

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
    if text.isascii() and "\x7f" not in text:
        return text  # the common case, told without the regex (CPython keeps it as a flag): 0.9 s on 170 MB
    return _NON_ASCII.sub(_escape, text)


# --------------------------------------------------------------------------------------
# Secrets: the one rule for what is never shown, used by the CLI, storage and runtime alike.
# Credentials arrive as storage options, Spark settings, URIs, profiles and the environment;
# any message (ours or a library's) may quote them, so every value a run was given under a
# secret-sounding name is remembered and scrubbed from what is printed or written.
# --------------------------------------------------------------------------------------

SECRET_WORDS = ("KEY", "SECRET", "TOKEN", "SAS", "PASSWORD", "PASSWD", "CREDENTIAL", "SIGNATURE")
MASK = "***"
# Query/connection parameters that carry a signature or a token whatever their name says.
_SIGNED_PARAMS = frozenset(
    "sig signature sv se sp st skoid sktid skt ske sks skv x-amz-signature x-amz-credential x-amz-security-token "
    "x-goog-signature x-goog-credential".split()
)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s@:]*):([^/\s@]*)@")
_PARAM = re.compile(r"(?i)((?:^|[?&;])\s*([a-z0-9_.-]+)=)([^&;\s\"'<>]*[^&;\s\"'<>:,.)])")  # not a closing ':' or '.'
# Switches (`AWS_SKIP_SIGNATURE=true`): never a credential, and scrubbing them would maul text.
_PLAIN = re.compile(r"(?i)^(true|false|yes|no|on|off|none|null)$")
# Settings named like a secret whose value is not one: where it is (AWS_WEB_IDENTITY_TOKEN_FILE, a
# credentials URI) or whose it is (AWS_ACCESS_KEY_ID: masked where settings are shown, but not
# hunted through every message, where a short test id would maul ordinary words).
_NOT_THE_SECRET = re.compile(r"(?i)(FILE|PATH|URI|URL|ENDPOINT|DIR|[_.-]ID)$")
_PIECE_MIN = 16  # shorter secrets are replaced whole only: an 8-character piece is too common in prose
_KNOWN: set[str] = set()


def is_secret_key(key: str) -> bool:
    """Whether a setting's value must never be shown: its name says key, secret, token, ..."""
    upper = key.upper()
    return any(w in upper for w in SECRET_WORDS)


def _secret_param(name: str) -> bool:
    return name.lower() in _SIGNED_PARAMS or is_secret_key(name)


def scrub_uri_credentials(text: str) -> str:
    """`text` with `user:password@` and secret parameters (`?sig=`, `;token=`) of every URL masked."""
    text = _USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    return _PARAM.sub(lambda m: m.group(1) + MASK if _secret_param(m.group(2)) else m.group(0), text)


def uri_secrets(text: str) -> set[str]:
    """The credentials written into URLs in `text`: passwords in userinfo, secret parameters."""
    out = {m.group(3) for m in _USERINFO.finditer(text)}
    # Only the signature or token itself: a SAS token's version, expiry and permissions are not secret.
    out |= {m.group(3) for m in _PARAM.finditer(text) if m.group(2).lower() == "sig" or is_secret_key(m.group(2))}
    return {v for v in out if _worth_hiding(v)}


def masked_value(key: str, value: str) -> str:
    """How a setting is shown: `***` for a secret key, URL credentials masked otherwise."""
    return MASK if is_secret_key(key) else scrub_uri_credentials(value)


def _worth_hiding(value: str) -> bool:
    return len(value) > 3 and not _PLAIN.match(value.strip())


def remember_secret(value: str | None) -> None:
    """Add a value to those scrubbed from every message of this process (with its %-encodings)."""
    if not value or not _worth_hiding(value):
        return
    from urllib.parse import quote, unquote

    _KNOWN.update(v for v in (value, value.strip(), quote(value, safe=""), unquote(value)) if _worth_hiding(v))


class secrets_scope:  # noqa: N801 - used as a context manager, like contextlib's
    """Secrets remembered inside the block are forgotten when it ends: the warm engine runs one
    command after another in one process, and none keeps another's (forensics/engine/isolation.py)."""

    def __enter__(self) -> None:
        self._saved = set(_KNOWN)

    def __exit__(self, *exc: Any) -> None:
        _KNOWN.intersection_update(self._saved)


def _secret_setting(key: str, value: str) -> bool:
    """A secret-sounding key whose value is the secret itself (not a file, URL or id)."""
    if not is_secret_key(key) or _NOT_THE_SECRET.search(key.strip()):
        return False
    import os

    return not (value.startswith(("/", "~")) and os.path.exists(os.path.expanduser(value)))


def remember_settings(items: Any) -> None:
    """Remember the secrets among settings (a mapping or (key, value) pairs): values under a
    secret-sounding key, and credentials inside URL values."""
    pairs = items.items() if hasattr(items, "items") else items
    for key, value in pairs:
        text = "" if value is None else str(value)
        if _secret_setting(str(key), text):
            remember_secret(text)
        for v in uri_secrets(text):
            remember_secret(v)


def remember_argv(argv: Any) -> None:
    """Remember the secrets on a command line before it is parsed, so even a mistyped flag's
    value (`--storage-opton KEY=SECRET`, `KEY:SECRET`, `KEY SECRET`) never reaches a message."""
    tokens = [str(t) for t in argv]
    for i, token in enumerate(tokens):
        text = token.split("=", 1)[1] if token.startswith("-") and "=" in token else token
        for v in uri_secrets(text):
            remember_secret(v)
        key, eq, value = text.partition("=")
        if not eq:
            key, eq, value = text.partition(":")
            if "/" in key or value.startswith("//"):
                continue
        if eq and _secret_setting(key, value):
            remember_secret(value)
        if eq and ":" in key:  # `KEY:SECRET=x`: a colon where the `=` belonged
            before, _, after = key.partition(":")
            if _secret_setting(before, after):
                remember_secret(after)
        elif not eq and is_secret_key(text) and i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
            remember_secret(tokens[i + 1])  # `KEY SECRET`: the value came as the next word


def remember_environment(environ: Any) -> None:
    """Remember the credentials in the environment (AWS_*, AZURE_*, GOOGLE_*, SPARK_* secret names)."""
    remember_settings((k, v) for k, v in environ.items() if k.upper().startswith(("AWS_", "AZURE_", "GOOGLE_", "SPARK_")))


def scrub(text: str, secrets: Any = ()) -> str:
    """`text` without any remembered secret or one of `secrets`, nor an 8-character piece of a
    long remembered one (a message may quote a truncated value), and with URL credentials masked."""
    for s in sorted({s for s in (*_KNOWN, *secrets) if s}, key=len, reverse=True):
        text = text.replace(s, MASK)
    for s in _KNOWN:
        if len(s) >= _PIECE_MIN:
            text = _scrub_pieces(text, s)
    return scrub_uri_credentials(text)


def _scrub_pieces(text: str, secret: str, width: int = 8) -> str:
    """Mask every run of `text` that shares `width` consecutive characters with `secret`."""
    hit = [False] * len(text)
    for i in range(len(secret) - width + 1):
        piece = secret[i : i + width]
        at = text.find(piece)
        while at >= 0:
            for j in range(at, at + width):
                hit[j] = True
            at = text.find(piece, at + 1)
    if not any(hit):
        return text
    out, i = [], 0
    while i < len(text):
        if hit[i]:
            while i < len(text) and hit[i]:
                i += 1
            out.append(MASK)
        else:
            out.append(text[i])
            i += 1
    return "".join(out)
