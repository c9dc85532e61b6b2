"""`delta-forensics`: the command-line entry point.

Each subcommand lives in forensics/cli/commands/<name>.py and exposes `add_parser(subparsers)`
and `run(args) -> int`. This module only dispatches and turns failures into one-line
diagnostics with documented exit codes (no traceback reaches the user).
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import traceback
from typing import Sequence

from forensics import __version__
from forensics.errors import ExitCode, ForensicsError
from forensics import cache_root, fewer_collections

PROG = "delta-forensics"


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors exit with our documented code and one line of help."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(int(ExitCode.USAGE))


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
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    names = command_modules()
    chosen = _chosen_command(argv, names)
    for name in [chosen] if chosen else names:
        mod = importlib.import_module(f"forensics.cli.commands.{name}")
        mod.add_parser(sub)
    return parser


def _chosen_command(argv: Sequence[str] | None, names: list[str]) -> str | None:
    """The command argv names, when it is one of ours and no top-level help is asked for."""
    args = list(sys.argv[1:] if argv is None else argv)
    first = next((a for a in args if not a.startswith("-")), None)
    if first is None or any(a in ("-h", "--help", "--version") for a in args[: args.index(first)]):
        return None
    return first.replace("-", "_") if first in {n.replace("_", "-") for n in names} else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if getattr(args, "utc", False):
        os.environ["DELTA_FORENSICS_UTC"] = "1"  # every human-facing time of this run (forensics.times)
    try:
        with fewer_collections():
            return int(args.func(args))
    except ForensicsError as e:
        sys.stderr.write(f"{PROG}: error: {e.one_line()}\n")
        return int(e.code)
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130
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
            path.write_text(traceback.format_exc())
            where = f"; details in {path}"
        except OSError:
            where = ""
        from forensics.safe import inert

        sys.stderr.write(f"{PROG}: internal error: {type(e).__name__}: {inert(str(e), 300)}{where}\n")
        return int(ExitCode.INTERNAL)


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    run()
