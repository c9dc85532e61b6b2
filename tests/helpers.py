"""Helpers shared by the reliability tests (read-only, mutation and terminal-safety checks)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import stat
from pathlib import Path

from forensics.cli.main import main


def tree_state(root: Path) -> dict[str, tuple]:
    """Everything that could change under `root`: entries, kinds, sizes, mtimes, contents, listings."""
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        d = Path(dirpath)
        st = os.lstat(d)
        out[str(d.relative_to(root)) + "/"] = ("dir", st.st_mtime_ns, stat.S_IMODE(st.st_mode), tuple(sorted(dirnames + filenames)))
        for name in filenames + [n for n in dirnames if os.path.islink(d / n)]:
            p = d / name
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[str(p.relative_to(root))] = ("link", os.readlink(p))
            else:
                out[str(p.relative_to(root))] = ("file", st.st_size, st.st_mtime_ns, stat.S_IMODE(st.st_mode), hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()
