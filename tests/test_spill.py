"""A large local read goes through a scratch Parquet directory (forensics/runtime/spill.py):
the same tables as the driver-side collection, nothing left behind, leftovers of killed runs swept."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from forensics.log.delta_log import DeltaLog
from forensics.log.listing import list_log
from forensics.log.reader import read_commit_files
from forensics.runtime import spill


@pytest.fixture()
def busy(sample_logs):
    t = sample_logs / "busy" / "table"
    if not t.exists():
        pytest.skip("sample_logs/busy not generated yet")
    return t


def test_a_spilled_read_gives_the_collected_tables_and_leaves_no_scratch(busy, spark, monkeypatch):
    assert spill.shares_this_disk(spark)  # local[2]: the executors write where this process reads
    files = list(list_log(str(busy)).commits.values())
    assert len(files) > 100
    collected = read_commit_files(spark, files)
    root = spill.scratch_root()
    root.mkdir(parents=True, exist_ok=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left_by_dead = root / f"{dead.stdout.strip()}-killed"  # a run killed mid-read left this
    left_by_dead.mkdir()
    left_by_live = root / f"{os.getppid()}-running"  # another process's read in progress
    left_by_live.mkdir()
    monkeypatch.setattr(spill, "SPILL_MIN_BYTES", 0)
    spilled = read_commit_files(spark, files)
    assert spilled.actions.num_rows > 100
    assert spilled.actions.equals(collected.actions)
    assert spilled.others.equals(collected.others)
    assert sorted(p.name for p in root.iterdir()) == [left_by_live.name]


def test_the_log_opened_through_the_scratch_reads_the_same_history(busy, spark, monkeypatch):
    plain = DeltaLog.open(str(busy), use_cache=False)
    monkeypatch.setattr(spill, "SPILL_MIN_BYTES", 0)
    through = DeltaLog.open(str(busy), use_cache=False)
    assert through.commits.equals(plain.commits)
    assert through.actions.equals(plain.actions)



def test_a_cluster_collects_a_slice_of_partitions_per_job_in_partition_order(busy, spark, monkeypatch):
    """The cluster's way (executors that do not share this disk), run here on local[2]: each
    partition's rows as one Arrow stream, a few partitions per job, the same table as toArrow()."""
    from forensics.log import reader

    files = list(list_log(str(busy)).commits.values())
    seen_jobs: list[int] = []
    sc = spark.sparkContext
    real = sc.runJob
    monkeypatch.setattr(sc, "runJob", lambda rdd, f, parts: seen_jobs.append(len(parts)) or real(rdd, f, parts))
    versions = {f.uri: reader._version_of(f.name) for f in files}  # noqa: SLF001
    df = reader._parsed(reader._split_lines(reader._file_texts(spark, files, versions)[0]))  # noqa: SLF001
    whole = df.toArrow()
    monkeypatch.setattr(spill, "CLUSTER_JOB_INPUT_BYTES", 1)  # one partition per job
    sliced = spill.by_partitions(df, 1 << 30)
    assert sliced.num_rows == whole.num_rows > 100
    assert sliced.equals(whole)
    assert len(seen_jobs) == df.rdd.getNumPartitions() > 1 and set(seen_jobs) == {1}


def test_a_large_checkpoint_reaches_python_through_the_scratch_with_the_same_rows(busy, spark, monkeypatch):
    """A checkpoint from CHECKPOINT_SPILL_MIN_BYTES of Parquet is collected through the scratch
    directory, not the driver JVM: the same two tables, in the same order, nothing left behind."""
    from forensics.log import reader

    listing = list_log(str(busy))
    cp = max(listing.checkpoints, key=lambda c: c.version)
    collected = reader.read_checkpoint(spark, listing, cp, stats=False)
    assert collected.actions.num_rows > 10
    calls = []
    monkeypatch.setattr(spill, "_through_parquet", lambda df, cols, real=spill._through_parquet: calls.append(1) or real(df, cols))
    monkeypatch.setattr(reader, "CHECKPOINT_SPILL_MIN_BYTES", 0)
    spilled = reader.read_checkpoint(spark, listing, cp, stats=False)
    assert calls  # it went through the scratch directory
    assert spilled.actions.equals(collected.actions)
    assert spilled.others.equals(collected.others)
    root = spill.scratch_root()
    assert not root.exists() or not [p for p in root.iterdir() if p.name.startswith(f"{os.getpid()}-")]


def test_the_warm_ups_reads_spill_whatever_their_size_and_a_command_thread_keeps_the_thresholds(busy, spark, monkeypatch):
    """The engine's JIT warm-up reads its small log within `spilling_everything` so the large
    checkpoint's path gets compiled; a command served meanwhile, on another thread, keeps the
    thresholds. Either way the rows are the same."""
    import threading

    from forensics.log import reader

    listing = list_log(str(busy))
    cp = max(listing.checkpoints, key=lambda c: c.version)
    threads = []
    monkeypatch.setattr(spill, "_through_parquet",
                        lambda df, cols, real=spill._through_parquet: threads.append(threading.get_ident()) or real(df, cols))
    other = []
    with spill.spilling_everything():
        spilled = reader.read_checkpoint(spark, listing, cp, stats=False)
        t = threading.Thread(target=lambda: other.append(reader.read_checkpoint(spark, listing, cp, stats=False)))
        t.start()
        t.join()
    after = reader.read_checkpoint(spark, listing, cp, stats=False)
    assert threads == [threading.get_ident()]  # this thread's read, within, and no other
    assert spilled.actions.equals(other[0].actions) and spilled.actions.equals(after.actions)
    assert spilled.others.equals(other[0].others)
