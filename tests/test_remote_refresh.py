"""A refresh of a remote table costs what changed, not what the log holds: the mirror scans its
copy once and leaves an unchanged manifest alone; the cache's meta.json is read a few times, not
once per listed version (a 20,000-commit refresh parsed it 20,000 times: minutes); the JVM starts
as soon as the store's listing shows new commits, while they download, and never when none is new.

Against moto (S3) on 127.0.0.1 (tests/servers.py), no mocks: the file-system work is observed
through Python's audit hooks (every `open`, `os.open` and `os.scandir` raises an event), and the
Spark sessions asked for join the same timeline (`get_spark` as it is, its calls recorded).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import pytest
import servers
from servers import upload_dir

from forensics.log import cache as C
from forensics.runtime.paths import mirror_dir
from forensics.storage import mirror_log
from forensics.storage.mirror import _TMP_DIR, MANIFEST

REPO = Path(__file__).resolve().parent.parent
BUSY = REPO / "sample_logs" / "busy" / "table"
LOG = "_delta_log"

s3_server = servers.s3_server

_events: list[tuple[str, tuple]] | None = None  # where the hook records, while `observed()` is on
_gate: Callable[[str, tuple], None] | None = None  # called after each recorded event, in its thread


def _hook(event: str, args: tuple) -> None:
    seen = _events
    if seen is not None and event in ("open", "os.scandir"):
        seen.append((event, args))
        gate = _gate
        if gate is not None:
            gate(event, args)


sys.addaudithook(_hook)  # for the life of the process: records only inside `observed()`


@contextmanager
def observed(gate: Callable[[str, tuple], None] | None = None) -> Iterator[list[tuple[str, tuple]]]:
    global _events, _gate
    seen: list[tuple[str, tuple]] = []
    _events, _gate = seen, gate
    try:
        yield seen
    finally:
        _events = _gate = None


def _path(arg: object) -> str | None:
    return os.fsdecode(arg) if isinstance(arg, (str, bytes, os.PathLike)) else None


def _is_scan(event: str, args: tuple, directory: Path) -> bool:
    p = _path(args[0]) if event == "os.scandir" and args else None
    return bool(p) and os.path.realpath(p) == os.path.realpath(directory)


def _scans(events: list, directory: Path) -> int:
    return sum(1 for e, a in events if _is_scan(e, a, directory))


def _reads(events: list, name: str) -> int:
    """Opens for reading of files called `name` (builtin `open` gives a mode, `os.open` flags)."""
    n = 0
    for e, a in events:
        p = _path(a[0]) if e == "open" and a else None
        if p and os.path.basename(p) == name:
            mode, flags = (a[1] if len(a) > 1 else None), (a[2] if len(a) > 2 else 0)
            if (mode is None or "r" in mode) and not flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
                n += 1
    return n


def _writes_under(events: list, root: Path) -> list[str]:
    out = []
    for e, a in events:
        p = _path(a[0]) if e == "open" and a else None
        if p and os.path.realpath(p).startswith(os.path.realpath(root) + os.sep):
            mode, flags = (a[1] if len(a) > 1 else None), (a[2] if len(a) > 2 else 0)
            if (mode is not None and any(c in mode for c in "wax+")) or flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
                out.append(p)
    return out


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(autouse=True)
def _no_cloud_env(monkeypatch, tmp_path):
    """Credentials come from the test's options only; none from the machine."""
    for k in list(os.environ):
        if k.upper().startswith(("AWS_", "AZURE_", "GOOGLE_", "DELTA_FORENSICS_PROFILE")) or "PROXY" in k.upper():
            monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("DELTA_FORENSICS_CONFIG", str(tmp_path / "no-config.toml"))


def _table(s3_server, tmp_path: Path, hold: int = 0) -> tuple[str, object, Path, dict[str, bytes]]:
    """busy (405 versions) in a new bucket, its newest `hold` commits held back: (uri, store, local copy, held)."""
    src = tmp_path / "busy"
    shutil.copytree(BUSY, src)
    commits = sorted((src / LOG).glob("0*.json"))
    held = {p.name: p.read_bytes() for p in (commits[len(commits) - hold:] if hold else [])}
    for name in held:
        (src / LOG / name).unlink()
    bucket = f"b{uuid.uuid4().hex[:12]}"
    s3_server.create_bucket(bucket)
    store = s3_server.store(bucket, "busy")
    upload_dir(store, src)
    return f"s3://{bucket}/busy", store, src, held


def test_a_refresh_scans_the_mirror_once_and_leaves_an_unchanged_manifest_alone(s3_server, tmp_path):
    uri, store, src, held = _table(s3_server, tmp_path, hold=2)
    dest = tmp_path / "m"
    first = mirror_log(uri, s3_server.options(), dest)
    for name, data in held.items():
        store.put(f"{LOG}/{name}", data)
        (src / LOG / name).write_bytes(data)

    with observed() as seen:
        second = mirror_log(uri, s3_server.options(), dest)
    assert second.listed_from is not None and (second.fetched, second.removed) == (2, 0)
    assert second.files == first.files + 2
    assert _tree(dest / LOG) == _tree(src / LOG)
    # one pass over the copy decides what changed and what to remove (was: a stat per file, then two walks)
    assert _scans(seen, dest / LOG) == 1

    before = (dest / MANIFEST).stat()
    with observed() as seen:
        third = mirror_log(uri, s3_server.options(), dest)
    after = (dest / MANIFEST).stat()
    assert (third.fetched, third.removed, third.reused) == (0, 0, second.files)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # not rewritten
    assert [p for p in _writes_under(seen, dest) if not p.endswith(".lock")] == []  # the lock file is opened to append
    assert _reads(seen, MANIFEST) == 1


def test_a_local_copy_removed_or_stray_below_the_tail_is_put_right(s3_server, tmp_path):
    uri, store, src, _ = _table(s3_server, tmp_path)
    dest = tmp_path / "m"
    mirror_log(uri, s3_server.options(), dest)
    (dest / LOG / "00000000000000000002.json").unlink()
    (dest / LOG / "_sidecars" / "nested").mkdir(parents=True)
    (dest / LOG / "_sidecars" / "nested" / "stray.parquet").write_bytes(b"x")
    (dest / LOG / "00000000000000000001.json").write_text("tampered")

    again = mirror_log(uri, s3_server.options(), dest)
    assert again.listed_from is not None  # the tail only: the damage is below it
    assert (again.fetched, again.removed) == (2, 1)
    assert not (dest / LOG / "_sidecars").exists()  # emptied directories go
    assert _tree(dest / LOG) == _tree(src / LOG)


def test_a_damaged_manifest_entry_brings_back_the_whole_listing(s3_server, tmp_path):
    """An entry the manifest cannot vouch for is not trusted below the tail: the whole log is
    listed and that file fetched again (was: a KeyError, reported as a store failure)."""
    uri, _, src, _ = _table(s3_server, tmp_path)
    dest = tmp_path / "m"
    first = mirror_log(uri, s3_server.options(), dest)
    data = json.loads((dest / MANIFEST).read_text())
    del data["files"][f"{LOG}/00000000000000000003.json"]["size"]
    (dest / MANIFEST).write_text(json.dumps(data))

    again = mirror_log(uri, s3_server.options(), dest)
    assert again.listed_from is None
    assert (again.fetched, again.removed, again.files) == (1, 0, first.files)
    assert _tree(dest / LOG) == _tree(src / LOG)
    assert json.loads((dest / MANIFEST).read_text())["files"][f"{LOG}/00000000000000000003.json"]["size"] > 0


@pytest.mark.usefixtures("spark")
def test_a_remote_refresh_reads_the_cache_meta_a_few_times_not_once_per_version(s3_server, tmp_path):
    from forensics import Table

    uri, store, _, held = _table(s3_server, tmp_path, hold=3)
    first = Table(uri, storage_options=s3_server.options())
    for name, data in held.items():
        store.put(f"{LOG}/{name}", data)
    with observed() as seen:
        again = Table(uri, storage_options=s3_server.options())
    assert again.store.mirror.fetched == 3 and again.store.mirror.listed_from is not None
    assert len(again.versions) == len(first.versions) + 3
    assert _reads(seen, "meta.json") <= 4  # was one per listed version: 405 here, 20,000 on the benchmark's log
    # the mirror's pass only: the listing of the copy takes each entry's lstat from it (was: a second scan)
    assert _scans(seen, again.store.mirror.log_dir) == 1


# ---- the JVM starts while the new commits download, and only when some are new ---------------------


def _sessions_asked(monkeypatch) -> threading.Event:
    """`get_spark` as it is, each call entered in the `observed()` timeline as ("spark", ()); the
    event is set at the first call (from whichever thread made it)."""
    import forensics.runtime.spark as S

    real, asked = S.get_spark, threading.Event()

    def get_spark(*args, **kwargs):
        seen = _events
        if seen is not None:
            seen.append(("spark", ()))
        asked.set()
        return real(*args, **kwargs)

    monkeypatch.setattr(S, "get_spark", get_spark)
    return asked


def _download(event: str, args: tuple, dest: Path) -> bool:
    """The mirror creating a download's temporary file (before it is renamed into the copy)."""
    p = _path(args[0]) if event == "open" and args else None
    flags = args[2] if p and len(args) > 2 and isinstance(args[2], int) else 0
    return bool(flags & os.O_CREAT) and os.path.dirname(os.path.realpath(p)) == os.path.realpath(dest / _TMP_DIR)


def _spark_calls(events: list) -> list[int]:
    return [i for i, (e, _) in enumerate(events) if e == "spark"]


@pytest.mark.usefixtures("spark")
@pytest.mark.parametrize("how", ["open again", "Table.refresh"])
def test_a_refresh_starts_the_jvm_while_the_new_commits_download(s3_server, tmp_path, monkeypatch, how):
    """Spark is asked for as soon as the store's tail listing shows commits past the cache: before
    the first new file is fetched, and so before the listing of the mirror (was: after both). Each
    download waits (at most 10 s) for the start's thread to get going, so the order does not hang
    on the scheduler; the old code asks only after the downloads and the listing: it fails."""
    from forensics import Table

    uri, store, _, held = _table(s3_server, tmp_path, hold=3)
    first = Table(uri, storage_options=s3_server.options())
    for name, data in held.items():
        store.put(f"{LOG}/{name}", data)
    dest = mirror_dir(uri)
    asked = _sessions_asked(monkeypatch)

    def gate(event: str, args: tuple) -> None:
        if _download(event, args, dest):
            asked.wait(10)

    with observed(gate) as seen:
        again = Table(uri, storage_options=s3_server.options()) if how == "open again" else first.refresh()
    assert again.store.mirror.fetched == 3 and len(again.versions) == len(first.versions) + 3
    downloads = [i for i, (e, a) in enumerate(seen) if _download(e, a, dest)]
    spark = _spark_calls(seen)
    assert len(downloads) == 3 and spark and spark[0] < downloads[0]


@pytest.mark.usefixtures("spark")
def test_a_refresh_with_nothing_new_never_asks_for_spark(s3_server, tmp_path, monkeypatch):
    """Nothing past the cache (a reopen, `refresh`) or past what the Table parsed (`refresh`
    without a cache: every listed commit is past a cache that does not exist): no JVM."""
    from forensics import Table

    uri, _, _, _ = _table(s3_server, tmp_path)
    first = Table(uri, storage_options=s3_server.options())
    uncached = Table(uri, storage_options=s3_server.options(), use_cache=False)
    _sessions_asked(monkeypatch)
    with observed() as seen:
        again = Table(uri, storage_options=s3_server.options())
        followed = first.refresh()
        followed_uncached = uncached.refresh()
    assert _spark_calls(seen) == []
    assert again.read_from_cache and followed.log is first.log and followed_uncached.log is uncached.log


def test_the_listing_of_a_fresh_copy_from_the_mirrors_entries_is_the_listing_of_a_scan(s3_server, tmp_path):
    """`list_log` given the entries a mirror knows (its scan, writes and removals) equals a fresh
    scan's, through a first look, new commits, a staged commit, and a copy damaged by hand (a file
    gone, one tampered, stray folders and links): nothing the listing reports differs."""
    from forensics.log.listing import list_log

    uri, store, src, held = _table(s3_server, tmp_path, hold=2)
    dest = tmp_path / "m"

    def same(m) -> None:
        assert m.entries is not None
        assert list_log(str(dest), m.entries) == list_log(str(dest))

    same(mirror_log(uri, s3_server.options(), dest))
    for name, data in held.items():
        store.put(f"{LOG}/{name}", data)
    store.put(f"{LOG}/_staged_commits/{10**6:020d}.{uuid.uuid4()}.json", b'{"commitInfo":{}}\n')
    same(mirror_log(uri, s3_server.options(), dest))
    (dest / LOG / "00000000000000000002.json").unlink()
    (dest / LOG / "00000000000000000001.json").write_text("tampered")
    (dest / LOG / "_sidecars" / "nested").mkdir(parents=True)
    (dest / LOG / "_sidecars" / "nested" / "stray.parquet").write_bytes(b"x")
    (dest / LOG / "_commits").mkdir()
    (dest / LOG / "_commits" / "x").symlink_to(tmp_path)
    (dest / LOG / "a-link").symlink_to(dest / LOG / "00000000000000000003.json")
    (dest / LOG / "a-folder-link").symlink_to(tmp_path)
    (dest / LOG / "dangling").symlink_to(tmp_path / "nothing")
    again = mirror_log(uri, s3_server.options(), dest)
    assert again.fetched == 2 and again.removed >= 2
    same(again)
    assert list_log(str(dest)).findings  # the link left in place is reported, from either


@pytest.mark.usefixtures("spark")
def test_a_new_commit_too_large_to_size_from_the_listing_waits_for_its_copy(s3_server, tmp_path, monkeypatch):
    """A JSON file of SCAN_MIN_BYTES or more in the listing: only a scan of its local copy's lines
    sizes the heap, so Spark is asked for after the downloads, as before the early start."""
    from forensics import Table
    from forensics.log.sizes import SCAN_MIN_BYTES

    uri, store, _, _ = _table(s3_server, tmp_path)
    first = Table(uri, storage_options=s3_server.options())
    new = first.versions[-1] + 1
    info = {"timestamp": 1_718_000_000_000, "operation": "SET TBLPROPERTIES", "operationParameters": {},
            "readVersion": new - 1, "userMetadata": "x" * SCAN_MIN_BYTES}
    store.put(f"{LOG}/{new:020d}.json", (json.dumps({"commitInfo": info}) + "\n").encode())
    dest = mirror_dir(uri)
    _sessions_asked(monkeypatch)
    with observed() as seen:
        again = Table(uri, storage_options=s3_server.options())
    assert again.versions[-1] == new and again.commit(new).read_version == new - 1
    downloads = [i for i, (e, a) in enumerate(seen) if _download(e, a, dest)]
    spark = _spark_calls(seen)
    assert len(downloads) == 1 and spark and downloads[0] < spark[0]
