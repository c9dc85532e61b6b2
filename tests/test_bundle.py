"""A local session reads commit files from a bundle (forensics/log/bundle.py): the rows must be the
ones Spark gives when it reads each file whole and splits it, whatever the bytes of a line are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics.errors import ExitCode, ForensicsError
from forensics.log import bundle, reader
from forensics.log.listing import list_log
from forensics.runtime import spill

# Lines a commit file can hold: real actions, broken JSON, blank and space-only lines, a "\r"
# (CRLF files), tabs (the bundle's separator, inside and between tokens), bytes that are not UTF-8.
_LINES = st.sampled_from([
    b'{"commitInfo":{"timestamp":1,"operation":"WRITE","readVersion":0,"isBlindAppend":true}}',
    b'{"add":{"path":"p=1/a.parquet","partitionValues":{"p":"1"},"size":10,"modificationTime":2,"dataChange":true}}',
    b'{"remove":{"path":"b\\tc.parquet","deletionTimestamp":3,"dataChange":true}}',
    b'{"txn":{"appId":"app\\t1","version":4}}',
    b'{\t"metaData":{"id":"x","format":{"provider":"parquet"},"schemaString":"{}","partitionColumns":[]}}',
    b'{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}\r',
    b'{"unknownAction":{"x":1}}',
    b'{"add":{"path":"trunc',
    b'{"txn":{"appId":"a","version":1}}\r{"txn":{"appId":"b","version":2}}',  # a lone "\r" is no line break
    b"", b"   ", b"\t", b"\r", b"garbage \xff\xfe not utf-8",
    b'{"commitInfo":{"operation":"caf\xc3\xa9 \xe2\x80\x94 ok"}}',
    b'{"commitInfo":{"operation":"valid UTF-8 holding U+FFFD: \xef\xbf\xbd"}}',
])


def _write_log(root: Path, commits: list[list[bytes]], trailing: list[bool]) -> list:
    log = root / "_delta_log"
    log.mkdir(parents=True)
    for v, (lines, nl) in enumerate(zip(commits, trailing)):
        (log / f"{v:020d}.json").write_bytes(b"\n".join(lines) + (b"\n" if nl else b""))
    return [f for _, f in sorted(list_log(str(root)).commits.items())]


def _rows(t):
    """Row order is Spark's partitioning (not a meaning): compare in (version, line, kind) order."""
    return t.sort_by([("version", "ascending"), ("line", "ascending"), ("kind", "ascending")]).combine_chunks()


def _both(spark, files, monkeypatch):
    assert reader.can_bundle(spark, files)
    bundled = reader.read_commit_files(spark, files)
    with monkeypatch.context() as m:
        m.setattr(reader, "can_bundle", lambda *_: False)  # the cluster's way: each file read whole
        whole = reader.read_commit_files(spark, files)
    return (_rows(bundled.actions), _rows(bundled.others)), (_rows(whole.actions), _rows(whole.others))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(st.lists(_LINES, min_size=1, max_size=6), min_size=1, max_size=5), data=st.data())
def test_the_bundle_gives_the_rows_of_the_whole_file_read(commits, data, spark, tmp_path_factory, monkeypatch):
    trailing = data.draw(st.lists(st.booleans(), min_size=len(commits), max_size=len(commits)))
    files = _write_log(tmp_path_factory.mktemp("t"), commits, trailing)
    bundled, whole = _both(spark, files, monkeypatch)
    assert bundled == whole


def test_a_sample_log_reads_the_same_both_ways_and_the_scratch_is_gone(sample_logs, spark, monkeypatch):
    busy = sample_logs / "busy" / "table"
    if not busy.exists():
        pytest.skip("sample_logs/busy not generated yet")
    files = [f for _, f in sorted(list_log(str(busy)).commits.items())]
    bundled, whole = _both(spark, files, monkeypatch)
    assert bundled[0].num_rows > 100
    assert bundled == whole
    root = spill.scratch_root()
    assert not [p for p in root.iterdir() if p.name.startswith(f"{os.getpid()}-")] if root.exists() else True


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(alphabet=" \t\r\n{x\u00e9\u3000\ufffd", max_size=6), min_size=1, max_size=30))
def test_a_line_is_skipped_as_blank_exactly_when_trim_leaves_nothing(spark, texts):
    """The reader's cheap blank test keeps the lines Spark's `length(trim(text)) > 0` keeps."""
    import pyspark.sql.functions as F

    df = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "i int, text string")
    kept = sorted(r.i for r in df.where(F.expr(reader.NONBLANK_SQL)).collect())
    assert kept == sorted(r.i for r in df.where(F.length(F.trim("text")) > 0).collect())
    assert kept == [i for i, t in enumerate(texts) if t.strip(" ")]


@given(st.binary(max_size=64) | st.text(max_size=16).map(lambda t: t.encode("utf-8")))
def test_the_copy_knows_which_bytes_can_decode_to_u_fffd(data):
    """The reader leaves its per-line search for U+FFFD out only when the copy says no file can
    hold it: exactly the bytes whose decoding (invalid bytes replaced) contains the character."""
    from forensics.log.bundle import may_hold_fffd

    assert may_hold_fffd(data) == ("\ufffd" in data.decode("utf-8", "replace"))


def test_a_log_with_no_u_fffd_is_read_without_searching_for_it(tmp_path, spark, monkeypatch):
    """ASCII and valid UTF-8 commits skip the search and still give the rows of the whole-file read;
    one file that holds U+FFFD brings the search back and its line is reported."""
    from forensics.log import bundle

    seen: list[bool] = []
    real = reader._parsed  # noqa: SLF001

    def spy(lines, check_fffd=True):
        seen.append(check_fffd)
        return real(lines, check_fffd)

    monkeypatch.setattr(reader, "_parsed", spy)
    clean = [[b'{"commitInfo":{"operation":"caf\xc3\xa9"}}', b'{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}']]
    files = _write_log(tmp_path / "clean", clean, [True])
    bundled, whole = _both(spark, files, monkeypatch)
    assert bundled == whole and seen == [False, True]  # the bundle skipped it; the whole-file read (cluster) never does
    seen.clear()
    files = _write_log(tmp_path / "fffd", clean + [[b'{"commitInfo":{"operation":"x\xff"}}']], [True, True])
    bundled, whole = _both(spark, files, monkeypatch)
    assert bundled == whole and seen == [True, True]
    kinds = bundled[1].to_pylist()
    assert [r["kind"] for r in kinds if r["version"] == 1] == ["corrupt"]
    assert bundle.may_hold_fffd(b"x\xff")


@pytest.mark.parametrize("processes", [1, 2])
def test_a_commit_file_gone_since_the_listing_is_named(tmp_path, spark, monkeypatch, processes):
    from forensics.log import bundle

    monkeypatch.setattr(bundle, "PARALLEL_MIN_FILES", 2 if processes == 2 else 10**9)
    files = _write_log(tmp_path / "t", [[b'{"commitInfo":{"timestamp":1}}']] * 3, [True] * 3)
    os.unlink(files[1].uri)  # log cleanup between the listing and the read
    with pytest.raises(ForensicsError) as e:
        reader.read_commit_files(spark, files)
    assert e.value.code == ExitCode.UNREADABLE
    assert e.value.file == "_delta_log/00000000000000000001.json" and e.value.version == 1
    assert "No such file" in str(e.value)
    root = spill.scratch_root()
    assert not [p for p in root.iterdir() if p.name.startswith(f"{os.getpid()}-")]


def test_a_large_copy_in_two_processes_gives_the_same_rows(sample_logs, spark, monkeypatch):
    from forensics.log import bundle

    busy = sample_logs / "busy" / "table"
    if not busy.exists():
        pytest.skip("sample_logs/busy not generated yet")
    files = [f for _, f in sorted(list_log(str(busy)).commits.items())]
    one = reader.read_commit_files(spark, files)
    monkeypatch.setattr(bundle, "PARALLEL_MIN_FILES", 2)
    two = reader.read_commit_files(spark, files)
    assert (_rows(two.actions), _rows(two.others)) == (_rows(one.actions), _rows(one.others))


def test_a_script_without_a_main_guard_runs_once(sample_logs, tmp_path):
    """The copy's helper processes must not run the caller's script again: multiprocessing's spawn
    imports the main module, and a script without `if __name__ == "__main__"` then ran twice (a
    second Spark session) and the read failed."""
    import subprocess
    import sys

    script, runs = tmp_path / "look.py", tmp_path / "runs.txt"
    table = str(sample_logs / "busy" / "table")
    script.write_text(
        "import forensics.log.bundle as b\n"
        "b.PARALLEL_MIN_FILES = 2\n"
        f"open({str(runs)!r}, 'a').write('run\\n')\n"
        "from forensics import Table\n"
        f"print(Table({table!r}, use_cache=False).history().height)\n")
    env = {**os.environ, "DELTA_FORENSICS_ENGINE": "off"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert runs.read_text() == "run\n"
    assert int(done.stdout.split()[-1]) == len(list((sample_logs / "busy" / "table" / "_delta_log").glob("*.json")))


def _mine() -> list:
    """This process's scratch directories (bundles, spills) still on disk."""
    root = spill.scratch_root()
    return [p for p in root.iterdir() if p.name.startswith(f"{os.getpid()}-")] if root.exists() else []


def test_a_bundle_written_while_spark_starts_is_the_one_read(tmp_path, spark):
    """`WriteAhead` copies on a thread (a cold first look writes it while the JVM starts); the read
    takes that copy instead of writing its own, gives the same rows, and removes it."""
    from forensics.log.bundle import WriteAhead

    files = _write_log(tmp_path / "t", [[b'{"commitInfo":{"timestamp":1}}', b'{"add":{"path":"a","size":1}}']] * 4, [True] * 4)
    versions = {f.uri: reader._version_of(f.name) for f in files}
    inline = reader.read_commit_files(spark, files)
    ahead = WriteAhead(files, versions)
    written = ahead.dir
    got = reader.read_commit_files(spark, files, ahead=ahead)
    assert ahead.taken and not written.exists() and not _mine()
    assert (_rows(got.actions), _rows(got.others)) == (_rows(inline.actions), _rows(inline.others))
    other = WriteAhead(files[:2], versions)  # not the files read: written again, this one left alone
    reader.read_commit_files(spark, files, ahead=other)
    assert not other.taken and other.dir.exists()
    other.discard()
    assert not _mine()


def test_a_commit_file_gone_before_the_copy_ahead_is_named(tmp_path, spark):
    from forensics.log.bundle import WriteAhead

    files = _write_log(tmp_path / "t", [[b'{"commitInfo":{"timestamp":1}}']] * 3, [True] * 3)
    os.unlink(files[2].uri)
    ahead = WriteAhead(files, {f.uri: reader._version_of(f.name) for f in files})
    with pytest.raises(ForensicsError) as e:
        reader.read_commit_files(spark, files, ahead=ahead)
    assert e.value.code == ExitCode.UNREADABLE and e.value.file == "_delta_log/00000000000000000002.json"
    assert not _mine()


def test_a_cold_open_leaves_no_bundle_whatever_the_session(tmp_path, spark, monkeypatch):
    """The first look of a table writes its bundle while Spark starts. A session that reads no
    bundle (a cluster's) and a start that fails both leave nothing behind."""
    from forensics.log.delta_log import DeltaLog

    from forensics.log import delta_log

    _write_log(tmp_path / "t", [[b'{"commitInfo":{"timestamp":1,"operation":"WRITE"}}']] * 3, [True] * 3)
    table = str(tmp_path / "t")
    written: list = []

    class Seen(delta_log.WriteAhead):  # the real copy, counted
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            written.append(self)

    monkeypatch.setattr(delta_log, "WriteAhead", Seen)
    local = DeltaLog.open(table, use_cache=False, spark_factory=lambda: spark, session_is_local=True)
    assert local.versions == [0, 1, 2] and not _mine() and len(written) == 1 and written[0].taken
    with monkeypatch.context() as m:
        m.setattr(reader, "can_bundle", lambda *_: False)  # the cluster's way: each file read whole
        whole = DeltaLog.open(table, use_cache=False, spark_factory=lambda: spark, session_is_local=True)
    assert whole.commits.equals(local.commits) and not _mine() and len(written) == 2

    def refused():
        raise ForensicsError(ExitCode.SPARK, "Spark failed to start")

    with pytest.raises(ForensicsError):
        DeltaLog.open(table, use_cache=False, spark_factory=refused, session_is_local=True)
    assert not _mine() and len(written) == 3
    # A session that will not be local (a cluster, Connect), or a caller's factory that does not
    # say: nothing is copied ahead, for nothing would read it.
    DeltaLog.open(table, use_cache=False, spark_factory=lambda: spark, session_is_local=False)
    DeltaLog.open(table, use_cache=False, spark_factory=lambda: spark)
    assert len(written) == 3 and not _mine()


def test_a_copy_discarded_while_it_runs_removes_itself(tmp_path):
    """Interrupted while a long copy runs (a million files), the command does not wait for it:
    `discard` returns, and the copy removes its directory when it ends."""
    from forensics.log.bundle import WriteAhead

    files = _write_log(tmp_path / "t", [[b'{"commitInfo":{"timestamp":1}}']] * 3000, [True] * 3000)
    ahead = WriteAhead(files, {f.uri: reader._version_of(f.name) for f in files})
    ahead.discard(wait_s=0)
    ahead._thread.join(60)
    assert not ahead._thread.is_alive() and not ahead.dir.exists() and not _mine()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=st.one_of(st.integers(0, 2), st.integers(-2, 2).map(lambda d: bundle._FIRST_READ + d),
                      st.integers(2 * bundle._FIRST_READ - 2, 5 * bundle._FIRST_READ)))
def test_a_file_is_copied_whole_whatever_its_size(tmp_path_factory, size):
    """The copy reads with `os.read`, a first read of `_FIRST_READ` bytes and more until one reads
    nothing: a file longer than the first read is read to its end, an empty one gives no bytes."""
    path = tmp_path_factory.mktemp("f") / "00000000000000000000.json"
    data = bytes((i * 7 + size) % 251 for i in range(size))
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert bundle._read_all(fd) == data
    finally:
        os.close(fd)


def test_a_copy_made_ahead_holds_the_same_files_and_versions_only(tmp_path):
    """`holds` is true for the very lists the copy was made from and for equal ones, false for
    other files or another version of one of them."""
    from forensics.log.bundle import WriteAhead

    files = _write_log(tmp_path / "t", [[b'{"commitInfo":{"timestamp":1}}']] * 3, [True] * 3)
    versions = {f.uri: reader._version_of(f.name) for f in files}
    ahead = WriteAhead(files, versions)
    try:
        assert ahead.holds(files, versions) and ahead.holds(list(files), dict(versions))
        assert not ahead.holds(files[:2], versions)
        assert not ahead.holds(files, {**versions, files[1].uri: 7})
    finally:
        ahead.discard()
    assert not ahead.holds(files, versions)  # discarded: nothing to take
    assert not _mine()
