"""`delta-forensics`: the command-line entry point.

Each subcommand lives in forensics/cli/commands/<name>.py and exposes `add_parser(subparsers)`
and `run(args) -> int`. This module only dispatches and turns failures into one-line
diagnostics with documented exit codes (no traceback reaches the user).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import logging
import os
import pkgutil
import re
import sys
import traceback
from typing import Sequence

from forensics import __version__
from forensics.errors import ExitCode, ForensicsError
from forensics import cache_root, fewer_collections
from forensics.safe import remember_argv, remember_environment, scrub

PROG = "delta-forensics"
NO_ENGINE_HELP = ("run in this process, not in the warm engine (also DELTA_FORENSICS_ENGINE=off); "
                  "docs/engine.md")
LOG_LEVELS = ("debug", "info", "warning", "error")  # forensics.runtime.logs.LEVELS (not imported: start-up cost)
LOG_LEVEL_HELP = ("the tool's log lines on stderr from this level up (default: warning), and Spark's level in the "
                  "cache's spark.log when the tool starts the session (default: ERROR; debug: INFO); secrets are never shown")


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors exit with our documented code and one line of help, and never
    quote what was typed: a mistyped flag's value may be a credential."""

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            self.error(_unrecognised(extras, _option_strings(self)))
        return ns

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {scrub(_without_values(message))}\n")
        raise SystemExit(int(ExitCode.USAGE))


def _option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every flag of the parser and of its subcommands (for "did you mean")."""
    out = set(parser._option_string_actions)  # noqa: SLF001 - argparse keeps them nowhere public
    for action in parser._actions:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for sub in action.choices.values():
                out |= _option_strings(sub)
    return out


def _flag_name(token: str) -> str:
    """`--name=value` -> `--name`; `-xVALUE` -> `-x` (a short flag's value may be attached)."""
    return token.split("=", 1)[0] if token.startswith("--") else token[:2]


def _unrecognised(extras: list[str], known: set[str]) -> str:
    """Name the unknown flags (never a value, nor a word that followed them)."""
    flags = [_flag_name(e) for e in extras if e.startswith("-") and len(e) > 1 and not re.match(r"^-\d", e)]
    others = len(extras) - len(flags)
    parts = []
    if flags:
        parts.append(f"unrecognized option{'s' if len(flags) > 1 else ''} {', '.join(dict.fromkeys(flags))}")
    if others:
        parts.append(f"{others} unexpected argument{'s' if others > 1 else ''}")
    hints = [m[0] for f in flags if (m := difflib.get_close_matches(f, sorted(known), n=1, cutoff=0.75))]
    hint = f"; did you mean {', '.join(dict.fromkeys(hints))}?" if hints else ""
    return "; ".join(parts) + " (values are not shown)" + hint


_CHOICE = re.compile(r"^(argument .+?: )invalid choice: (.*) \(choose from (.*)\)$", re.S)
_TYPED = re.compile(r"^(argument .+?: invalid [\w.]+ value): .*$", re.S)
_IGNORED = re.compile(r"^(argument .+?: ignored explicit argument) .*$", re.S)


def _without_values(message: str) -> str:
    """argparse's message with the user's words left out: invalid choices, typed values,
    explicit arguments and unknown options are named by flag only."""
    if m := _CHOICE.match(message):
        choices = re.findall(r"'([^']*)'", m.group(3)) or [c.strip() for c in m.group(3).split(",")]
        near = difflib.get_close_matches(m.group(2).strip("'\""), choices, n=1, cutoff=0.75)
        return f"{m.group(1)}invalid choice (choose from {m.group(3)})" + (f"; did you mean {near[0]}?" if near else "")
    if m := _TYPED.match(message):
        return m.group(1)
    if m := _IGNORED.match(message):
        return f"{m.group(1)} (not shown)"
    if message.startswith("ambiguous option: "):
        option, _, matches = message[len("ambiguous option: "):].rpartition(" could match ")
        return f"ambiguous option: {_flag_name(option)} could match {matches}"
    if message.startswith("unrecognized arguments: "):
        return _unrecognised(message.split(" ")[2:], set())
    return message


def command_modules() -> list[str]:
    import forensics.cli.commands as pkg

    return sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_"))


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The full parser; given argv naming a command, only that command's module is imported
    (importing all of them cost ~0.25 s of every warm run). Help and errors still list all."""
    parser = _Parser(
        prog=PROG,
        description="Post-incident forensics for Delta Lake concurrency conflicts.",
        epilog="Exit codes: " + ", ".join(f"{int(c)} {c.meaning}" for c in ExitCode) + ".",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("--no-engine", action="store_true", help=NO_ENGINE_HELP)
    parser.add_argument("--log-level", choices=LOG_LEVELS, default=None, help=LOG_LEVEL_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    names = command_modules()
    chosen = _chosen_command(argv, names)
    for name in [chosen] if chosen else names:
        mod = importlib.import_module(f"forensics.cli.commands.{name}")
        mod.add_parser(sub)
    for command in sub.choices.values():  # --no-engine after the command too
        command.add_argument("--no-engine", action="store_true", default=argparse.SUPPRESS, help=NO_ENGINE_HELP)
    for command in sub.choices.values():  # also after the command; SUPPRESS keeps a value given before it
        command.add_argument("--log-level", choices=LOG_LEVELS, default=argparse.SUPPRESS, help=LOG_LEVEL_HELP)
    return parser


def _chosen_command(argv: Sequence[str] | None, names: list[str]) -> str | None:
    """The command argv names, when it is one of ours and no top-level help is asked for."""
    args = list(sys.argv[1:] if argv is None else argv)
    first = next((a for a in args if not a.startswith("-")), None)
    if first is None or any(a in ("-h", "--help", "--version") for a in args[: args.index(first)]):
        return None
    return first.replace("-", "_") if first in {n.replace("_", "-") for n in names} else None


def main(argv: Sequence[str] | None = None) -> int:
    remember_argv(sys.argv[1:] if argv is None else argv)  # scrubbed from every message below
    remember_environment(os.environ)
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if not getattr(args, "utc", False):
        return _dispatch(args, argv)
    before = os.environ.get("DELTA_FORENSICS_UTC")
    os.environ["DELTA_FORENSICS_UTC"] = "1"  # every human-facing time of this run (forensics.times)
    try:
        return _dispatch(args, argv)
    finally:  # a notebook or a test calling main() again gets its own environment back
        if before is None:
            os.environ.pop("DELTA_FORENSICS_UTC", None)
        else:
            os.environ["DELTA_FORENSICS_UTC"] = before


def _dispatch(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """Run the parsed command (in the warm engine when it answers) as one line on failure."""
    if args.log_level:  # without it: Python's default, warnings and errors on stderr; Spark at ERROR
        from forensics import set_log_level

        set_log_level(args.log_level)
        args.no_engine = True  # the lines describe work done here, not in the warm engine's process
        logging.getLogger("forensics").debug("%s %s on Python %s: %s", PROG, __version__, sys.version.split()[0], args.command)
    try:
        from forensics import engine_answer

        answered = engine_answer(args, sys.argv[1:] if argv is None else argv)  # None: run here (forensics/engine)
        if answered is not None:
            return answered
        from forensics import beside_the_command

        try:
            # The cache write of a first look runs beside the command, finished before it returns.
            with fewer_collections(), beside_the_command():
                return int(args.func(args))
        finally:
            _start_deferred_engine()
    except ForensicsError as e:
        sys.stderr.write(f"{PROG}: error: {scrub(e.one_line())}\n")
        return int(e.code)
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        except OSError:
            pass
        return 0
    except Exception as e:  # noqa: BLE001 - a bug: one line here, the traceback in a file
        path = cache_root() / "last-error.txt"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(scrub(traceback.format_exc()))
            where = f"; details in {path}"
        except OSError:
            where = ""
        from forensics.safe import inert

        sys.stderr.write(f"{PROG}: internal error: {type(e).__name__}: {inert(scrub(str(e)), 300)}{where}\n")
        return int(ExitCode.INTERNAL)


def _start_deferred_engine() -> None:
    """The warm engine a command found missing starts as the command ends (forensics/engine/client.py)."""
    client = sys.modules.get("forensics.engine.client")
    if client is not None:
        client.start_deferred()


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    run()
