"""The delta-forensics Textual app (`delta-forensics tui TABLE`, `python -m tui TABLE`)."""

from __future__ import annotations

import argparse
from typing import Sequence


def build_parser(prog: str = "python -m tui") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Browse a Delta table's versions, concurrency windows and conflicts.")
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("table", metavar="TABLE", help="table path or URI")
    p.add_argument("--utc", action="store_true", help="show times in UTC (also DELTA_FORENSICS_UTC=1); u toggles")
    p.add_argument("--no-cache", action="store_true", help="read the log afresh; neither use nor update the cache")
    p.add_argument("--no-replay", action="store_true", help="do not replay the concurrency windows")
    p.add_argument("--master", metavar="URL", help="Spark master for a cache miss (default local[2])")
    p.add_argument("--remote", metavar="URL", help="Spark Connect endpoint for a cache miss")


def run(args: argparse.Namespace) -> int:
    """Run the app; its exit code (0 on q / ctrl+q, 1 when it stopped on an error)."""
    from tui.app import ForensicsApp

    app = ForensicsApp(
        args.table,
        utc=args.utc,
        use_cache=not args.no_cache,
        replay=not args.no_replay,
        master=getattr(args, "master", None),
        remote=getattr(args, "remote", None),
    )
    app.run()
    return app.return_code or 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))
