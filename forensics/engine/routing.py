"""Which commands the engine answers, and what of the client's world travels with them.

The engine reads local tables (and their caches) only. A command that names an object store,
storage options or a profile (credentials), another Spark (`--master`, `--remote`), a catalog
name, or a secret-looking Spark setting runs in-process as before: the engine never receives
a credential. `--conf` settings under spark.sql. travel with the request (the running session
must accept them at run time, else the command runs in-process); other --conf settings key
another engine (they only take effect when a session starts).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass, field

from forensics.engine.key import STATIC_ENV
from forensics.safe import is_secret_key, uri_secrets

# Commands that read local tables and print: the engine runs them. tui (a terminal app), synth
# (writes a table), conformance (its own cases), schema (no Spark) and engine run in-process.
ENGINE_COMMANDS = frozenset(
    {"history", "snapshot", "sets", "replay", "explain", "whatif", "explain-error", "evidence", "stats", "export"}
)
OFF_WORDS = ("0", "off", "false", "no")
_URI = re.compile(r"^\s*([A-Za-z][A-Za-z0-9+.-]+)://")
# The client's terminal and locale: how output looks (Rich reads these), which zone times are shown in.
_TERMINAL_ENV = ("TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "CLICOLOR",
                 "CLICOLOR_FORCE", "COLUMNS", "LINES", "TZ", "LANG", "LANGUAGE")


@dataclass(frozen=True)
class Route:
    """Whether a parsed command goes to the engine, and with what."""

    engine: bool
    why: str = ""  # why it runs in-process (said by --log-level debug)
    starts_engine: bool = False  # it reads a table: worth starting an engine when none runs
    static_conf: dict[str, str] = field(default_factory=dict)
    runtime_conf: dict[str, str] = field(default_factory=dict)
    reads_stdin: bool = False


def engine_disabled() -> str | None:
    """Why no command of this process goes to an engine (None: they may)."""
    if os.environ.get("DELTA_FORENSICS_ENGINE", "").strip().lower() in OFF_WORDS:
        return "DELTA_FORENSICS_ENGINE=off"
    return None


def route(args: argparse.Namespace, argv: list[str]) -> Route:
    off = engine_disabled() or ("--no-engine" if getattr(args, "no_engine", False) else None)
    if off:
        return Route(False, off)
    command = getattr(args, "command", None)
    if command not in ENGINE_COMMANDS:
        return Route(False, f"{command} runs in-process")
    if getattr(args, "master", None) or getattr(args, "remote", None):
        return Route(False, "--master/--remote: the command's own Spark")
    if getattr(args, "storage_option", None) or getattr(args, "profile", None):
        return Route(False, "storage options or a profile (the engine never receives credentials)")
    if getattr(args, "log_level", None) in ("debug", "info"):
        return Route(False, "--log-level debug/info shows the run as it happens in-process")
    if any(_URI.match(a) and not a.lstrip().lower().startswith("file:") for a in argv):
        return Route(False, "an object-store URI (the engine reads local tables only)")
    table = getattr(args, "table", None)
    for t in getattr(args, "tables", None) or ([table] if table is not None else []):  # stats takes several
        if not (t.lower().startswith("file:") or os.path.exists(t)):
            return Route(False, "not a local path (a catalog name, or a path that does not exist)")
    static, runtime = {}, {}
    for item in getattr(args, "conf", None) or []:
        k, _, v = item.partition("=")
        k = k.strip()
        if is_secret_key(k) or k.startswith("spark.hadoop.") or uri_secrets(v):
            return Route(False, "a secret-looking Spark setting (the engine never receives credentials)")
        (runtime if k.startswith("spark.sql.") else static)[k] = v
    return Route(True, starts_engine=table is not None, static_conf=static, runtime_conf=runtime,
                 reads_stdin=getattr(args, "error_file", None) == "-")


def per_request(name: str) -> bool:
    """Whether an environment variable is the client's to send with each request (not the engine's)."""
    return (name in _TERMINAL_ENV or name.startswith("LC_")
            or (name.startswith("DELTA_FORENSICS_") and not name.startswith("DELTA_FORENSICS_ENGINE")
                and name not in STATIC_ENV))


def request_env(stdout_tty: bool) -> dict[str, str]:
    """The client's settings the command's output depends on: the terminal (its size when stdout is
    one), the locale and zone, and DELTA_FORENSICS_* (never the engine's own switches, never a
    secret-named one, never a cloud credential: those are not sent)."""
    env = {k: v for k, v in os.environ.items() if per_request(k) and not is_secret_key(k)}
    if stdout_tty and not (env.get("COLUMNS", "").isdigit() and env.get("LINES", "").isdigit()):
        try:
            size = os.get_terminal_size(sys.stdout.fileno())
            env.setdefault("COLUMNS", str(size.columns))
            env.setdefault("LINES", str(size.lines))
        except (OSError, ValueError, AttributeError):
            pass
    return env
