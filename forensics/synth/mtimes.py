"""File modification times of a sample table, kept beside it because git does not keep them.

Evidence places aborted attempts in time by their files' modification times; a git checkout
sets every mtime to the checkout time, which `forensics.evidence` rightly reports as
untrusted. `record` writes `mtimes.json` next to a generated table; `restore` applies it to a
copy (never to the committed sample), giving back the times the engine really left.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

MANIFEST = "mtimes.json"


def record(sample_dir: Path) -> Path:
    table = sample_dir / "table"
    times = {}
    for p in sorted(table.rglob("*")):
        if p.is_file() and not p.is_symlink():
            times[p.relative_to(table).as_posix()] = int(p.stat().st_mtime * 1000)
    out = sample_dir / MANIFEST
    out.write_text(json.dumps(times, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    return out


def restored_copy(sample_dir: Path, dest: Path) -> Path:
    """Copy `sample_dir/table` to `dest` and give its files their recorded modification times."""
    shutil.copytree(sample_dir / "table", dest)
    manifest = sample_dir / MANIFEST
    if manifest.exists():
        for rel, ms in json.loads(manifest.read_text(encoding="utf-8")).items():
            p = dest / rel
            if p.is_file() and not p.is_symlink() and dest.resolve() in p.resolve().parents:
                os.utime(p, ns=(ms * 1_000_000, ms * 1_000_000))
    return dest


def restore_in_place(sample_dir: Path) -> int:
    """Give a checked-out sample its recorded file times (test fixtures: a git checkout resets them).

    Only modification times change; no file content is written. Returns the number of files.
    """
    manifest = sample_dir / MANIFEST
    if not manifest.exists():
        return 0
    table = (sample_dir / "table").resolve()
    n = 0
    for rel, ms in json.loads(manifest.read_text(encoding="utf-8")).items():
        p = table / rel
        if p.is_file() and not p.is_symlink() and table in p.resolve().parents:
            os.utime(p, ns=(ms * 1_000_000, ms * 1_000_000))
            n += 1
    return n
