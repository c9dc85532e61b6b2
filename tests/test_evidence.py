"""evidence: orphan data files, stray commit files and aborted attempts, on the sample incidents
and on a real delta-rs conflict produced here. Expectations come from attempts.json, error.txt,
README.md and an independent walk of the directory minus every path in the raw log files."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from contextlib import redirect_stdout
from pathlib import Path
from urllib.parse import unquote

import pytest

from forensics.cli.main import main


def run_cli(argv: list[str]) -> tuple[int, str]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = main(argv)
    return code, buf.getvalue()


def independent_orphans(table: Path) -> set[str]:
    """Every data file under the root (outside _delta_log, no hidden files) minus every path in the log."""
    logged = set()
    for f in (table / "_delta_log").glob("*.json"):
        for line in f.read_text().splitlines():
            if not line.strip():
                continue
            obj = json.loads(line)
            for k in ("add", "remove", "cdc"):
                if k in obj:
                    logged.add(unquote(obj[k]["path"]))
    on_disk = set()
    for dirpath, dirnames, filenames in os.walk(table):
        dirnames[:] = [d for d in dirnames if d != "_delta_log" and not d.startswith(".")]
        for n in filenames:
            if not n.startswith((".", "_")):
                on_disk.add(os.path.relpath(os.path.join(dirpath, n), table))
    return on_disk - logged


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, _d, filenames in os.walk(root):
        for n in filenames:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns)
    return out


def test_delta_rs_sample(spark, sample_logs):
    d = sample_logs / "f-delta-rs-aborted"
    attempts = json.loads((d / "attempts.json").read_text())
    written = {f for a in attempts for f in a["files_written"]}
    before = tree_state(d / "table")
    code, out = run_cli(["evidence", str(d / "table"), "--json", "-q"])
    assert code == 0
    assert tree_state(d / "table") == before, "evidence must not write under the table path"
    j = json.loads(out)
    assert set(j["orphanFiles"]) == written == independent_orphans(d / "table")
    assert j["unknownFiles"] == [] and j["strayCommitFiles"] == []
    got = {tuple(sorted(a["files"])): a for a in j["attempts"]}
    assert len(got) == len(attempts)
    exc_of = {"a concurrent transactions added new data": "ConcurrentAppendException",
              "a concurrent transaction deleted data this operation read": "ConcurrentDeleteReadException"}
    for a in attempts:
        g = got[tuple(sorted(a["files_written"]))]
        col, val = a["partition"].split("=", 1)
        assert g["partitions"] == [{col: val}]
        assert g["firstSeen"] <= g["lastSeen"] and g["concurrentVersions"]
        # the real error of this attempt (attempts.json) names the rule; the replay must agree
        expected = next(v for k, v in exc_of.items() if k in a["error"])
        assert g["likelyException"] == expected, g["why"]
        assert g["why"].startswith("inferred")


# (a),(c),(d),(e): the README names each orphan; error.txt names the exception.
@pytest.mark.parametrize("name", ["a-merge-partitions", "c-optimize-vs-delete", "d-alter-table", "e-streaming-shared-checkpoint"])
def test_spark_format_incidents(spark, sample_logs, tmp_path, name):
    d = sample_logs / name
    readme = (sample_logs / "README.md").read_text()
    line = next(ln for ln in readme.splitlines() if ln.startswith(f"- `{name}/`"))
    named = set(re.findall(r"`(date=[^`]+\.parquet)`", line.split("Orphan files:", 1)[1]))
    from forensics.synth.mtimes import restored_copy

    table = restored_copy(d, tmp_path / "table")  # the file times delta-spark left (git keeps none)
    code, out = run_cli(["evidence", str(table), "--json", "-q"])
    assert code == 0
    j = json.loads(out)
    assert set(j["orphanFiles"]) == named == independent_orphans(d / "table")
    (att,) = j["attempts"]
    assert set(att["files"]) == named
    exc = re.match(r"io\.delta\.exceptions\.(\w+):", (d / "error.txt").read_text()).group(1)
    # Written by delta-spark: the committed files' times agree with the log, so the times are trusted;
    # the replay tells the exception each of them raised.
    assert j["fileTimesTrusted"] is True
    if name != "e-streaming-shared-checkpoint":
        assert att["likelyException"] == exc, att["why"]
        return
    # (e): the twin wrote its file 1.8 s before its winner v4 landed, then committed after it; this
    # table's batches commit 16-255 ms after their last file. A winner after the last file ranks
    # after those before it, so the engine's answer is a candidate, not the first (FIDELITY.md).
    assert (4, exc) in [(c["winningVersion"], c["exception"]) for c in att["candidates"]], att["why"]


def test_no_orphans_in_clean_tables(spark, sample_logs):
    for name in ("quickstart", "b-writeserializable-reorder"):
        code, out = run_cli(["evidence", str(sample_logs / name / "table"), "--json", "-q"])
        j = json.loads(out)
        assert set(j["orphanFiles"]) == independent_orphans(sample_logs / name / "table")
        assert j["orphanFiles"] == []
        assert j["attempts"] == []


def test_stray_commit_and_symlink(spark, sample_logs, tmp_path):
    """A leftover Hadoop-style temporary commit naming an orphan file: parsed as an attempted commit."""
    t = tmp_path / "t"
    shutil.copytree(sample_logs / "a-merge-partitions" / "table", t)
    (orphan,) = independent_orphans(t)  # the aborted MERGE's output
    tmp_commit = t / "_delta_log" / ".00000000000000000003.json.5f0e7f1a-3c7d-4a47-9a43-0f8d1d0f9d11.tmp"
    tmp_commit.write_text(
        json.dumps({"commitInfo": {"timestamp": 1718870535000, "operation": "MERGE", "readVersion": 2, "isBlindAppend": False}}) + "\n"
        + json.dumps({"add": {"path": orphan, "partitionValues": {"date": "2024-06-18"}, "size": 1535, "modificationTime": 1, "dataChange": True}}) + "\n"
        + '{"remove": {"path": "date=2024-06-18/part-00000-5bd2'  # cut mid-line, as a crash leaves it
    )
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "part-00000-11111111-2222-3333-4444-555555555555.c000.snappy.parquet").write_bytes(b"x")
    os.symlink(outside, t / "date=2024-06-20")
    code, out = run_cli(["evidence", str(t), "--json", "-q"])
    assert code == 0
    j = json.loads(out)
    (s,) = j["strayCommitFiles"]
    assert s["kind"] == "temporary" and s["version"] == 3 and s["operation"] == "MERGE" and s["readVersion"] == 2
    assert s["adds"] == [orphan]
    assert j["orphanFiles"] == [orphan]  # the symlinked directory is not followed
    (att,) = j["attempts"]
    assert att["strayCommit"] == s["file"] and att["readVersion"] == 2
    assert att["likelyException"] == "ConcurrentAppendException"  # error.txt of (a)


def test_real_delta_rs_conflict(spark, tmp_path):
    """Stale delta-rs handles pinned at R lose to fresh-handle winners; their files stay as orphans."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake
    from deltalake.exceptions import CommitFailedError

    path = str(tmp_path / "rs")

    def rows(d: str, start: int, n: int = 6):
        return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "amount": pa.array([1.5] * n),
                         "day": pa.array([d] * n)})

    write_deltalake(path, rows("a", 0), partition_by=["day"])
    write_deltalake(path, rows("b", 100), partition_by=["day"], mode="append")
    stale_delete = DeltaTable(path)  # pinned at v1
    stale_update = DeltaTable(path)
    write_deltalake(path, rows("a", 0), partition_by=["day"], mode="append")  # winner: adds to day=a (same id range)
    DeltaTable(path).delete("day = 'b' AND id < 102")  # winner: rewrites day=b
    failures = 0
    with pytest.raises(CommitFailedError):
        stale_delete.delete("day = 'a' AND id < 3")
    failures += 1
    with pytest.raises(CommitFailedError):
        stale_update.update(predicate="day = 'b'", updates={"amount": "amount + 1"})
    failures += 1
    expected = independent_orphans(Path(path))
    assert len(expected) >= failures
    code, out = run_cli(["evidence", path, "--json", "-q"])
    assert code == 0
    j = json.loads(out)
    assert set(j["orphanFiles"]) == expected
    assert j["fileTimesTrusted"] is True
    parts = sorted({p["day"] for a in j["attempts"] for p in a["partitions"]})
    assert parts == sorted({f.split("/")[0].split("=")[1] for f in expected})
    for a in j["attempts"]:
        assert a["likelyException"] in ("ConcurrentAppendException", "ConcurrentDeleteReadException"), a["why"]


# ---- one job's tasks, spaced by a loaded machine ------------------------------------------------

def _written(root: Path, names_and_ms: list[tuple[str, int]]):
    """Real files with the given modification times (epoch ms), as the table walk sees them."""
    from forensics.evidence.walk import DataFile

    out = []
    for name, ms in names_and_ms:
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"PAR1" + name.encode() + b"PAR1")
        os.utime(p, ns=(ms * 1_000_000, ms * 1_000_000))
        st = os.stat(p)
        out.append(DataFile(name, st.st_size, st.st_mtime_ns // 1_000_000))
    return out


def _part(task: int, folder: str = "", counter: int = 0) -> str:
    import uuid

    return f"{folder}part-{task:05d}-{uuid.uuid4()}-c{counter:03d}.snappy.parquet"


T0 = 1_790_000_000_000


@pytest.mark.parametrize("layout, attempts", [
    # found by a loaded CI machine: a REPLACE WHERE's two tasks ended 300 ms apart (each file its own UUID)
    ([(0, "", 0, 0), (1, "", 0, 300)], [[0, 1]]),
    ([(1, "", 0, 0), (0, "", 0, 400)], [[0, 1]]),  # task 1 ended first
    ([(0, "", 0, 0), (0, "", 0, 300)], [[0], [1]]),  # two one-task jobs of one shape stay apart
    ([(0, "", 0, 0), (1, "", 0, 1), (0, "", 0, 300), (1, "", 0, 301)], [[0, 1], [2, 3]]),
    ([(0, "", 0, 0), (1, "", 0, 5_000)], [[0], [1]]),  # seconds apart: not one job's tasks
    ([(0, "a=1/", 0, 0), (0, "a=1/", 1, 300)], [[0, 1]]),  # task 0 rolled over to c001
    ([(1, "a=1/", 0, 0), (1, "a=2/", 0, 300), (1, "a=1/", 0, 600)], [[0, 1], [2]]),  # a slot written twice is another job
    ([(0, "a=1/", 1, 0), (0, "a=1/", 0, 300)], [[0], [1]]),  # a c001 before its c000: two jobs
])
def test_one_jobs_tasks_spaced_by_a_loaded_machine_are_one_attempt(tmp_path, layout, attempts):
    from forensics.evidence.attempts import Clock, group_attempts

    names = [(_part(t, folder, c), T0 + ms) for t, folder, c, ms in layout]
    files = _written(tmp_path, names)
    got = group_attempts(files, ("a",), Clock(True, "test", 1))
    want = [sorted(names[i][0] for i in group) for group in attempts]
    assert sorted([f.path for f in a.files] for a in got) == sorted(want)
    assert all(a.grouped_by == "mtime-cluster" for a in got)
