"""`tui TABLE`: the Textual table browser (versions, windows, conflicts, what-if)."""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    from tui import add_arguments

    p = sub.add_parser("tui", help="browse versions, concurrency windows and conflicts in a terminal app")
    add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tui import run as run_app

    return run_app(args)
