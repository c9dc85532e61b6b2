"""A refresh of a remote table costs what changed, not what the log holds: the mirror scans its
copy once and leaves an unchanged manifest alone; the cache's meta.json is read a few times, not
once per listed version (a 20,000-commit refresh parsed it 20,000 times: minutes).

Against moto (S3) on 127.0.0.1 (tests/servers.py), no mocks: the file-system work is observed
through Python's audit hooks (every `open`, `os.open` and `os.scandir` raises an event).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import pytest
import servers
from servers import upload_dir

from forensics.log import cache as C
from forensics.storage import mirror_log
from forensics.storage.mirror import MANIFEST

REPO = Path(__file__).resolve().parent.parent
BUSY = REPO / "sample_logs" / "busy" / "table"
LOG = "_delta_log"

s3_server = servers.s3_server

_events: list[tuple[str, tuple]] | None = None  # where the hook records, while `observed()` is on


def _hook(event: str, args: tuple) -> None:
    seen = _events
    if seen is not None and event in ("open", "os.scandir"):
        seen.append((event, args))


sys.addaudithook(_hook)  # for the life of the process: records only inside `observed()`


@contextmanager
def observed() -> Iterator[list[tuple[str, tuple]]]:
    global _events
    seen: list[tuple[str, tuple]] = []
    _events = seen
    try:
        yield seen
    finally:
        _events = None


def _path(arg: object) -> str | None:
    return os.fsdecode(arg) if isinstance(arg, (str, bytes, os.PathLike)) else None


def _scans(events: list, directory: Path) -> int:
    return sum(1 for e, a in events if e == "os.scandir" and a and _path(a[0]) and os.path.realpath(_path(a[0])) == os.path.realpath(directory))


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
    assert _scans(seen, again.store.mirror.log_dir) <= 2  # the mirror's pass and the lister's
