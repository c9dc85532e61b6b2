"""Helpers shared by the reliability tests (read-only, mutation and terminal-safety checks)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
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


def spark_event_log(error_text: str, path: Path, winner_ms: int | None = None) -> Path:
    """A Spark event log whose failed SQL execution (id 7, `MERGE INTO t`) ended with `error_text`,
    started 20 s before and ended 5 s after the winner's time: `winner_ms`, else the timestamp of the
    winner the text quotes (delta-spark 4.1+ texts of file conflicts quote none)."""
    import re

    m = re.search(r'"timestamp":(\d+)', error_text)
    ts = winner_ms if winner_ms is not None else int(m.group(1)) if m else 1_718_870_534_200
    events = [
        {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart", "executionId": 7,
         "description": "MERGE INTO t", "time": ts - 20_000},
        {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd", "executionId": 7,
         "time": ts + 5_000, "errorMessage": error_text},
    ]
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    return path


def winner_named_by(table: Path, error_text: str) -> int | None:
    """The version a delta-spark error text names, read without forensics: `committed at version N`
    (4.1+ file conflicts), else the commit whose txnId the quoted `Conflicting commit` JSON carries."""
    import re

    m = re.search(r"committed at version (\d+)", error_text)
    if m:
        return int(m.group(1))
    txn = re.search(r'"txnId":"([0-9a-f-]{36})"', error_text)
    if not txn:
        return None
    found = [int(f.name[:20]) for f in sorted((table / "_delta_log").glob("[0-9]" * 20 + ".json"))
             if f'"txnId":"{txn.group(1)}"' in f.read_text(encoding="utf-8")]
    return found[0] if len(found) == 1 else None


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


SNAPSHOT_DIR = Path(__file__).parent / "text_snapshots"  # not under __snapshots__: syrupy counts every file there as its own
UPDATE_SNAPSHOTS = "DELTA_FORENSICS_UPDATE_SNAPSHOTS"


def assert_text_snapshot(name: str, text: str) -> None:
    """`text` equals tests/text_snapshots/<name>.txt (trailing spaces aside); with
    DELTA_FORENSICS_UPDATE_SNAPSHOTS=1 the file is (re)written instead. A missing file fails."""
    import difflib

    path = SNAPSHOT_DIR / f"{name}.txt"
    got = "\n".join(line.rstrip() for line in text.splitlines()) + "\n"
    if os.environ.get(UPDATE_SNAPSHOTS) == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8")
        return
    assert path.exists(), f"no snapshot {path}; run with {UPDATE_SNAPSHOTS}=1 to write it, then review it"
    want = "\n".join(line.rstrip() for line in path.read_text(encoding="utf-8").splitlines()) + "\n"
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), f"{name}.txt (stored)", f"{name}.txt (now)"))
        raise AssertionError(f"snapshot {name} differs ({UPDATE_SNAPSHOTS}=1 rewrites it after review):\n{diff}")


def as_cloned(src: Path, dst: Path, at: float | None = None) -> Path:
    """A copy of the table at `src` whose every file time is `at` (default now), as after `git clone`:
    file times that say nothing about when the files were written."""
    import os
    import shutil
    import time

    shutil.copytree(src, dst)
    when = time.time() if at is None else at
    for dirpath, _dirs, files in os.walk(dst):
        for f in files:
            os.utime(os.path.join(dirpath, f), (when, when))
    return dst
