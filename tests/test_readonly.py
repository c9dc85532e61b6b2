"""Read-only guarantee: no command ever writes under a table path.

Tests run as root, and root ignores permissions, so `chmod -R a-w` alone proves nothing here:
every file's (path, kind, size, mtime, sha256) and every directory's listing is recorded before
and after, and must be equal. Caches must land in DELTA_FORENSICS_CACHE_DIR instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from forensics.cli.main import command_modules
from helpers import run_cli, tree_state

TABLE = "f-delta-rs-aborted"  # delta-rs writes, orphan files of aborted attempts, an error text


def make_readonly(root: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        for n in filenames:
            p = Path(dirpath) / n
            if not p.is_symlink():
                p.chmod(p.stat().st_mode & ~0o222)
        Path(dirpath).chmod(Path(dirpath).stat().st_mode & ~0o222)


def make_writable(root: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        Path(dirpath).chmod(Path(dirpath).stat().st_mode | 0o200)
        for n in filenames:
            p = Path(dirpath) / n
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | 0o200)


@pytest.fixture
def ro_table(tmp_path, sample_logs):
    """A copy of a sample table with a checkpoint added (so checkpoint reading is exercised), read-only."""
    src = sample_logs / TABLE / "table"
    t = tmp_path / "ro" / "table"
    shutil.copytree(src, t, symlinks=True)
    import deltalake
    deltalake.DeltaTable(str(t)).create_checkpoint()  # before the "before" state: a real delta-rs checkpoint
    assert list((t / "_delta_log").glob("*.checkpoint.parquet"))
    err = tmp_path / "error.txt"
    shutil.copy(sample_logs / TABLE / "error.txt", err)
    make_readonly(t)
    yield t, err
    make_writable(t)


def _commands(t: Path, err: Path, out_dir: Path) -> list[list[str]]:
    have = set(command_modules())
    cmds = [
        ["history", str(t)],
        ["snapshot", str(t)],
        ["snapshot", str(t), "--version", "3"],
        ["sets", str(t)],
        ["replay", str(t), "--all"],
        ["replay", str(t), "--isolation-level", "SnapshotIsolation"],
        ["explain", str(t), "6"],
        ["explain", str(t), "3", "--error-file", str(err)],
        ["whatif", str(t), "--read-version", "2", "--operation", "DELETE", "--predicate", "date = '2024-08-02'"],
    ]
    # Commands added by other work: only when present (import-guarded through the CLI's own discovery).
    if "evidence" in have:
        cmds.append(["evidence", str(t)])
    if "explain_error" in have:
        cmds.append(["explain-error", str(t), "--error-file", str(err)])
    if "stats" in have:
        cmds.append(["stats", str(t)])
    if "find" in have:
        cmds.append(["find", str(t), "--operation", "DELETE", "--since", "2000-01-01"])
    if "export" in have:
        cmds.append(["export", str(t), "--format", "json", "-o", str(out_dir / "timeline.json")])
        cmds.append(["export", str(t), "--format", "html", "-o", str(out_dir / "report.html")])
    return cmds


def test_every_command_leaves_the_table_untouched(ro_table, tmp_path, spark):
    t, err = ro_table
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    before = tree_state(t)
    cache = Path(os.environ["DELTA_FORENSICS_CACHE_DIR"])
    ran = []
    for argv in _commands(t, err, out_dir):
        for extra in ([], ["--json"]):
            rc, out, errtext = run_cli(argv + extra)
            assert rc == 0, (argv + extra, errtext)
            if extra:
                json.loads(out)
            ran.append(argv[0])
        assert tree_state(t) == before, argv  # checked after each command: names the culprit
    # Once more without the cache: everything read afresh, still nothing written.
    for argv in _commands(t, err, out_dir)[:5]:
        rc, _, errtext = run_cli(argv + ["--no-cache"])
        assert rc == 0, (argv, errtext)
    assert tree_state(t) == before
    assert {"history", "snapshot", "sets", "replay", "explain", "whatif"} <= set(ran)
    # The cache went where it should: the cache directory, never the table.
    assert any(cache.rglob("meta.json"))


def test_export_refuses_an_output_inside_the_table(ro_table, spark):
    t, _ = ro_table
    if "export" not in command_modules():
        pytest.skip("export command not present")
    before = tree_state(t)
    for target in (t / "report.json", t / "_delta_log" / "x.json", t / "date=2024-08-01" / ".." / "y.json"):
        rc, _, err = run_cli(["export", str(t), "--format", "json", "-o", str(target)])
        assert rc == 2, err
        assert "inside the table" in err and "Traceback" not in err
    assert tree_state(t) == before


def test_fresh_process_run_from_inside_the_table_writes_nothing(ro_table, tmp_path):
    """A fresh JVM started with the table as working directory (spark-warehouse, derby.log,
    metastore_db and the like would land there) must leave it untouched."""
    t, _ = ro_table
    before = tree_state(t)
    env = dict(os.environ)
    env["DELTA_FORENSICS_CACHE_DIR"] = str(tmp_path / "fresh-cache")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "forensics", "snapshot", ".", "--json"],
        cwd=t, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    snap = json.loads(proc.stdout)
    assert snap["baseCheckpoint"] is not None  # the checkpoint was read, by a JVM started in the table dir
    assert "Traceback" not in proc.stderr
    assert tree_state(t) == before
    assert any((tmp_path / "fresh-cache").rglob("meta.json"))
