"""explain-error on real delta-rs conflicts: compaction winners, what the user knows of the loser,
and texts that cannot belong to the table.

The conflicts are produced by the engine itself (deltalake): a handle pinned at a read version,
a winner committed through a fresh handle, then the stale operation, whose CommitFailedError text
is what the user pastes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError

from forensics import Table

pytestmark = pytest.mark.usefixtures("spark")


def _small_files(path: str, n: int = 4) -> None:
    for i in range(n):
        write_deltalake(path, pa.table({"id": pa.array([i * 10 + j for j in range(5)], pa.int64())}), mode="append")


def _compaction_beats_a_delete(tmp_path: Path) -> tuple[str, int, int, str]:
    """(table, the delete's read version, the compaction's version, the delete's error text)."""
    path = str(tmp_path / "t")
    _small_files(path)
    stale = DeltaTable(path)
    read = stale.version()
    DeltaTable(path).optimize.compact()
    compaction = DeltaTable(path).version()
    with pytest.raises(CommitFailedError) as err:
        stale.delete("id = 12")
    return path, read, compaction, str(err.value)


def test_a_compaction_that_won_the_append_rule_is_found(tmp_path):
    """deltalake: optimize.compact() then a stale delete("id = 12") fails with "a concurrent transactions
    added new data". The compaction's adds are dataChange=false, and they are what fired the rule."""
    path, read, compaction, text = _compaction_beats_a_delete(tmp_path)
    assert "added new data" in text
    ex = Table(path).explain_error(text)
    assert ex.winning_version == compaction, ex.why
    assert ex.report.exception == "ConcurrentAppendException"


def test_what_the_user_knows_of_the_loser_is_used(tmp_path):
    path, read, compaction, text = _compaction_beats_a_delete(tmp_path)
    ex = Table(path).explain_error(text, read_version=read, operation="DELETE", predicate="id = 12")
    assert ex.winning_version == compaction
    assert ex.reproduced, ex.why
    assert ex.hypothesis.startswith("as stated: DELETE")
    assert f"readVersion {read}: as stated" in ex.why
    by_sql = Table(path).explain_error(text, read_version=read, sql="DELETE FROM t WHERE id = 12")
    assert by_sql.reproduced and by_sql.hypothesis == ex.hypothesis


def test_failed_at_before_every_candidate_leaves_no_winner(tmp_path):
    path, read, compaction, text = _compaction_beats_a_delete(tmp_path)
    first_commit_ms = Table(path).commit(0).timestamp
    ex = Table(path).explain_error(text, failed_at=first_commit_ms - 60_000)
    assert ex.winning_version is None


def test_a_text_whose_winner_the_table_cannot_hold_says_so(tmp_path, repo_root):
    """A delta-spark text whose Conflicting commit read version 274, against a 4-version table."""
    path = str(tmp_path / "t")
    _small_files(path)
    text = ("io.delta.exceptions.ConcurrentAppendException: Files were added to the root of the table by a concurrent "
            "update. Please try the operation again.\nConflicting commit: {\"timestamp\":1718870534200,\"operation\":"
            "\"WRITE\",\"operationParameters\":{\"mode\":Append,\"partitionBy\":[]},\"readVersion\":274,"
            "\"isolationLevel\":\"Serializable\",\"isBlindAppend\":true}")
    ex = Table(path).explain_error(text)
    assert ex.winning_version is None
    assert "274" in ex.why and "ends at version 3" in ex.why and "another table" in ex.why
    err = tmp_path / "error.txt"
    err.write_text(text)
    out = subprocess.run([sys.executable, "-m", "forensics", "explain-error", path, "--error-file", str(err), "--json"],
                         capture_output=True, text=True, cwd=repo_root, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "another table" in out.stdout


def test_cli_flags_for_the_loser(tmp_path, repo_root):
    path, read, compaction, text = _compaction_beats_a_delete(tmp_path)
    err = tmp_path / "error.txt"
    err.write_text(text)
    base = [sys.executable, "-m", "forensics", "explain-error", path, "--error-file", str(err), "--json"]
    out = subprocess.run([*base, "--read-version", str(read), "--sql", "DELETE FROM t WHERE id = 12"],
                         capture_output=True, text=True, cwd=repo_root, timeout=300)
    assert out.returncode == 0, out.stderr
    assert f'"winningVersion": {compaction}' in out.stdout and "as stated: DELETE" in out.stdout
    bad = subprocess.run([*base, "--failed-at", "yesterday"], capture_output=True, text=True, cwd=repo_root, timeout=300)
    assert bad.returncode == 2 and "--failed-at" in bad.stderr and "Traceback" not in bad.stderr
    bad_sql = subprocess.run([*base, "--sql", "SELECT 1"], capture_output=True, text=True, cwd=repo_root, timeout=300)
    assert bad_sql.returncode == 2 and "--sql" in bad_sql.stderr
