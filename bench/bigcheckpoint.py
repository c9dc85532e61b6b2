"""Write a table whose state lives in one large classic checkpoint (default 1,000,000 adds):
forensics/synth/big_checkpoint.py says what it holds.

    python bench/bigcheckpoint.py OUT [--files 1000000] [--partitions 100]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from forensics.synth.big_checkpoint import write  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--files", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=100)
    a = ap.parse_args(argv)
    print(json.dumps(write(Path(a.out), a.files, a.partitions)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
