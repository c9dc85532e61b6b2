"""`delta-forensics synth OUT`: write a synthetic delta-spark-format log (no data files).

For benchmarks and demos: blind appends, MERGE/DELETE/UPDATE, OPTIMIZE, property changes and
a share of stale-readVersion commits whose windows pass delta-spark's conflict checks.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from forensics.cli.common import add_utc_argument
from forensics.errors import ExitCode, ForensicsError

DEFAULT_ENGINE = "Apache-Spark/3.5.1 Delta-Lake/3.2.0"  # = forensics.synth.sparkformat.DEFAULT_ENGINE (kept cheap to import)


def _share(text: str) -> float:
    value = float(text)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError("must be in [0, 1)")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return value


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "synth",
        help="write a synthetic delta-spark-format _delta_log (benchmarks, demos)",
        description=(
            "Write a synthetic Delta log in delta-spark's on-disk format (log only, no data "
            "files): mostly blind appends, MERGE/DELETE/UPDATE rewrites, OPTIMIZE, SET "
            "TBLPROPERTIES, and a share of commits with a stale readVersion whose windows pass "
            "delta-spark's conflict checks. Deterministic for a seed."
        ),
    )
    p.add_argument("out", help="output table directory (must be absent or empty)")
    p.add_argument("--commits", type=_positive, default=1000, help="number of versions to write (default 1000)")
    p.add_argument("--partitions", type=_positive, default=8, help="number of date partitions (default 8)")
    p.add_argument("--stale", type=_share, default=0.1, help="share of commits with readVersion < version-1 (default 0.1)")
    p.add_argument("--checkpoint-interval", type=int, default=100, help="write a checkpoint every K versions; 0 = none (default 100)")
    p.add_argument("--files-per-commit", type=_positive, default=2, help="mean files added by an append (default 2)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--engine-info", default=DEFAULT_ENGINE,
                   help="commitInfo.engineInfo; a Databricks-Runtime/… value makes the table WriteSerializable")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print the summary as JSON")
    add_utc_argument(p, prints_times=False)
    p.set_defaults(func=run)


def run(args) -> int:
    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ForensicsError(ExitCode.USAGE, f"output directory {out} exists and is not empty", file=str(out))
    from forensics import SynthConfig, synthesize

    cfg = SynthConfig(
        commits=args.commits,
        partitions=args.partitions,
        stale=args.stale,
        checkpoint_interval=max(0, args.checkpoint_interval),
        files_per_commit=args.files_per_commit,
        seed=args.seed,
        engine_info=args.engine_info,
    )
    result = synthesize(out, cfg)  # UsageError (TableDirNotEmpty) for a non-empty directory
    if getattr(args, "json", False):
        from forensics.cli.common import print_json

        print_json(result.to_dict(), "synth")
    else:
        from rich.console import Console

        from forensics.safe import inert

        Console(highlight=False, soft_wrap=True).print(
            f"synth: wrote {result.versions} versions to {inert(result.out)} "
            f"({result.stale_commits} stale, {result.checkpoints} checkpoints, "
            f"{result.active_files} active files, {result.isolation_level}) in {result.seconds:.1f}s",
            markup=False,
        )
    return int(ExitCode.OK)
