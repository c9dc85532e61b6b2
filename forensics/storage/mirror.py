"""Keep a local, exact copy of a remote `_delta_log` so local-mode Spark can read it.

pip's pyspark has no cloud filesystem jars, so instead of teaching Spark to reach the store we
copy the log (commits, checkpoints, `_last_checkpoint`, `.crc`, `_staged_commits/`,
`_sidecars/`) through obstore. A manifest beside the copy records each object's size, ETag and
last-modified time, so a refresh fetches only what changed. Every local file carries the
object's last-modified time as its mtime, so commit timestamps read from the mirror are the
store's. Only list, head and get are ever called: the remote table cannot be changed from here.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from forensics.errors import NotADeltaTable, UsageError
from forensics.runtime.logs import logger
from forensics.storage.errors import store_errors
from forensics.storage.location import StoreLocation, parse_location
from forensics.storage.options import StorageOptions, resolve_options
from forensics.storage.retry import RetryBudget, TransferCutShort, listing_cut, retried

LOG_DIR = "_delta_log"
MANIFEST = ".delta-forensics-mirror.json"
_TMP_DIR = ".delta-forensics-mirror.tmp"
_LOCK = ".delta-forensics-mirror.lock"
_MANIFEST_VERSION = 1
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class RemoteFile:
    """One object under the table root, as the store lists it."""

    path: str  # relative to the table root, e.g. "date=2024-04-01/part-0.parquet"
    size: int
    last_modified_ms: int
    etag: str | None = None


@dataclass(frozen=True)
class MirrorProgress:
    """How far a mirror has got; `str()` is a one-line message."""

    done: int
    total: int
    bytes_fetched: int
    path: str = ""

    def __str__(self) -> str:
        return f"mirroring _delta_log: {self.done}/{self.total} files fetched ({self.bytes_fetched:,} bytes)"


@dataclass(frozen=True)
class Mirror:
    """The result of `mirror_log`: `root` is a local table directory Spark can read."""

    root: Path
    location: StoreLocation
    fetched: int
    reused: int
    removed: int
    bytes_fetched: int
    seconds: float
    skipped: tuple[str, ...] = field(default=())  # remote names that cannot be a local path
    listed_from: str | None = None  # None: the whole `_delta_log` was listed; else the offset of a tail listing

    @property
    def log_dir(self) -> Path:
        return self.root / LOG_DIR

    @property
    def files(self) -> int:
        return self.fetched + self.reused


# --------------------------------------------------------------------------------------
# Listing
# --------------------------------------------------------------------------------------


def _ms(value: Any) -> int:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return (value - _EPOCH) // timedelta(milliseconds=1)
    return int(value or 0)


def _etag(value: Any) -> str | None:
    """ETags compare without quotes or a weak marker (list and GET quote them differently)."""
    if not value:
        return None
    text = str(value).strip()
    text = text.removeprefix("W/")
    return text.strip('"') or None


def _remote(meta: Mapping[str, Any]) -> RemoteFile:
    return RemoteFile(
        path=str(meta["path"]), size=int(meta["size"]), last_modified_ms=_ms(meta["last_modified"]), etag=_etag(meta.get("e_tag"))
    )


def _list(store, prefix: str | None) -> Iterator[RemoteFile]:
    import obstore

    for batch in obstore.list(store, prefix, chunk_size=1000):
        for meta in batch:
            if str(meta["path"]).endswith("/"):  # "directory marker" objects some tools write
                continue
            yield _remote(meta)


def _resolve(location: StoreLocation | str, options: StorageOptions | Mapping[str, Any] | None) -> tuple[StoreLocation, StorageOptions]:
    loc = parse_location(location) if isinstance(location, str) else location
    if loc.kind == "catalog":
        raise UsageError(f"{loc.uri} is a catalog table name: resolve it to a storage location first")
    if not isinstance(options, StorageOptions):
        options = resolve_options(loc, options)
    return loc, options


def list_table_files(
    location: StoreLocation | str, options: StorageOptions | Mapping[str, Any] | None = None, *, max_workers: int = 8
) -> list[RemoteFile]:
    """Every object under the table root except `_delta_log/`, without downloading any.

    The root is listed with a delimiter first, then each top-level "directory" (partition)
    is listed on its own thread, so `_delta_log` is never walked.
    """
    import obstore

    loc, options = _resolve(location, options)
    with store_errors(loc, options):
        store = options.store(loc)
        budget = RetryBudget.of(options)
        top = retried(lambda: obstore.list_with_delimiter(store), budget, listing_cut)
        out = [_remote(m) for m in top["objects"] if not str(m["path"]).endswith("/")]
        prefixes = [p.rstrip("/") for p in top["common_prefixes"] if p.rstrip("/") != LOG_DIR]
        with ThreadPoolExecutor(max_workers=max(1, max_workers)) as pool:
            for files in pool.map(lambda p: retried(lambda: list(_list(store, p)), budget, listing_cut), prefixes):
                out.extend(files)
    return sorted(out, key=lambda f: f.path)


# --------------------------------------------------------------------------------------
# Mirroring
# --------------------------------------------------------------------------------------


def _safe_relative(path: str) -> bool:
    """A remote name we can write under dest without escaping it."""
    parts = path.split("/")
    return (
        bool(path) and not path.startswith("/") and "\\" not in path and all(p not in ("", ".", "..") for p in parts) and "\x00" not in path
    )


def _read_manifest(dest: Path) -> dict[str, dict[str, Any]] | None:
    try:
        data = json.loads((dest / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}  # unreadable: ours, but fetch everything again
    if not isinstance(data, dict) or data.get("version") != _MANIFEST_VERSION or not isinstance(data.get("files"), dict):
        return {}
    return data["files"]


def _write_json_atomic(path: Path, data: Any) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".manifest-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def _locked(dest: Path) -> Iterator[None]:
    """One mirror at a time per destination (the CLI and the TUI may share a cache)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no advisory lock
        yield
        return
    with open(dest / _LOCK, "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def _unchanged(local: Path, remote: RemoteFile, recorded: Mapping[str, Any] | None) -> bool:
    if not recorded:
        return False
    if (
        recorded.get("size") != remote.size
        or recorded.get("last_modified_ms") != remote.last_modified_ms
        or recorded.get("etag") != remote.etag
    ):
        return False
    try:
        st = local.stat()
    except OSError:
        return False
    return st.st_size == remote.size and st.st_mtime_ns // 1_000_000 == remote.last_modified_ms


class _LocalWriteFailed(UsageError):
    """The mirror directory could not be written (disk full, permissions): not a store failure."""


@contextmanager
def _writing(path: Path) -> Iterator[None]:
    try:
        yield
    except OSError as e:
        raise _LocalWriteFailed(f"cannot write the mirror file {path}: {e.strerror or e}") from None


def _fetch(store, remote: RemoteFile, target: Path, tmp_dir: Path, budget: RetryBudget) -> RemoteFile | None:
    """Download one object to `target` atomically, whole or not at all; the object as written
    (the GET's size, ETag and time if it was rewritten since the listing), or None if it vanished.
    A body shorter than the listing's size is fetched again within the retry budget."""
    return retried(lambda: _fetch_once(store, remote, target, tmp_dir), budget, lambda e: isinstance(e, TransferCutShort))


def _fetch_once(store, remote: RemoteFile, target: Path, tmp_dir: Path) -> RemoteFile | None:
    import obstore
    from obstore.exceptions import NotFoundError

    try:
        result = obstore.get(store, remote.path)
    except (NotFoundError, FileNotFoundError):
        return None  # deleted between the listing and the GET (log cleanup)
    got = _remote({**result.meta, "path": remote.path})
    # Rewritten since the listing (`_last_checkpoint`): keep what the GET says it sent.
    expected = got if got.etag and remote.etag and got.etag != remote.etag else remote
    with _writing(tmp_dir):
        fd, tmp = tempfile.mkstemp(prefix="get-", dir=tmp_dir)
    written = 0
    try:
        with _writing(target), os.fdopen(fd, "wb") as f:
            for chunk in result.stream(min_chunk_size=4 * 1024 * 1024):  # network errors: the store's
                with _writing(target):
                    f.write(chunk)
                written += len(chunk)
        if written != expected.size:  # never renamed into the mirror: the temporary file goes
            raise TransferCutShort(f"transfer cut short: {written:,} of {expected.size:,} bytes of {remote.path}")
        with _writing(target):
            ns = expected.last_modified_ms * 1_000_000
            os.utime(tmp, ns=(ns, ns))
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return expected


def _local_files(log_dir: Path) -> set[str]:
    out = set()
    if not log_dir.is_dir():
        return out
    for dirpath, _dirs, files in os.walk(log_dir):
        for name in files:
            out.add(os.path.relpath(os.path.join(dirpath, name), log_dir.parent).replace(os.sep, "/"))
    return out


def _prune_empty_dirs(log_dir: Path) -> None:
    for dirpath, _dirs, _files in sorted(os.walk(log_dir), key=lambda t: -len(t[0])):
        if Path(dirpath) != log_dir:
            try:
                os.rmdir(dirpath)
            except OSError:
                pass


def mirror_log(
    location: StoreLocation | str,
    options: StorageOptions | Mapping[str, Any] | None,
    dest: Path | str,
    *,
    progress: Callable[[MirrorProgress], None] | None = None,
    max_workers: int = 8,
) -> Mirror:
    """Make `dest/_delta_log/` an exact copy of the table's remote `_delta_log/`.

    Fetches only objects that are new or changed since the last mirror into `dest` (name,
    size, ETag, last-modified), with up to `max_workers` concurrent GETs; writes each file
    atomically (a temporary file, its size checked against the listing, then renamed: an
    interrupted run leaves no partial file) with the object's last-modified time as mtime;
    deletes local files whose object is gone. `dest` must be empty, absent, or an earlier mirror. Raises `NotADeltaTable` when
    the location has no `_delta_log`, and the store errors of `forensics.storage.errors`.
    """
    started = time.monotonic()
    loc, options = _resolve(location, options)
    dest = Path(dest).expanduser().absolute()
    log_dir = dest / LOG_DIR
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create the mirror directory {dest}: {e.strerror}") from None
    manifest = _read_manifest(dest)
    if manifest is None and log_dir.exists() and any(log_dir.iterdir()):
        raise UsageError(f"{dest} already holds a _delta_log that is not a delta-forensics mirror: choose an empty directory")

    with _locked(dest):
        manifest = _read_manifest(dest)
        if manifest is None:  # mark the directory as ours before the first byte arrives
            with _writing(dest / MANIFEST):
                _write_json_atomic(dest / MANIFEST, {"version": _MANIFEST_VERSION, "uri": loc.uri, "files": {}})
            manifest = {}
        with store_errors(loc, options):
            store = options.store(loc)
            budget = RetryBudget.of(options)
            remote, listed_from = retried(lambda: _list_log(store, manifest), budget, listing_cut)
        if not remote:
            raise NotADeltaTable(f"not a Delta table (no _delta_log under it): {loc.uri}")

        skipped = tuple(sorted(r.path for r in remote if not _safe_relative(r.path)))
        remote = [r for r in remote if _safe_relative(r.path)]
        todo = [r for r in remote if not _unchanged(dest / r.path, r, manifest.get(r.path))]
        reused = len(remote) - len(todo)
        tmp_dir = dest / _TMP_DIR
        shutil.rmtree(tmp_dir, ignore_errors=True)  # leftovers of an interrupted run
        with _writing(tmp_dir):
            tmp_dir.mkdir(parents=True, exist_ok=True)
        vanished: set[str] = set()
        fetched = 0
        bytes_fetched = 0
        new_manifest = {r.path: manifest[r.path] for r in remote if r.path in manifest}
        lock = threading.Lock()

        def record(r: RemoteFile, got: RemoteFile | None) -> None:
            nonlocal fetched, bytes_fetched
            with lock:
                if got is None:
                    vanished.add(r.path)
                    new_manifest.pop(r.path, None)
                    return
                fetched += 1
                bytes_fetched += got.size
                new_manifest[r.path] = {"size": got.size, "etag": got.etag, "last_modified_ms": got.last_modified_ms}

        try:
            if progress:
                progress(MirrorProgress(0, len(todo), 0))
            with store_errors(loc, options, listing=False), ThreadPoolExecutor(max_workers=max(1, max_workers)) as pool:
                pending: dict[Future, RemoteFile] = {pool.submit(_fetch, store, r, dest / r.path, tmp_dir, budget): r for r in todo}
                try:
                    while pending:
                        done, _ = wait(pending, return_when=FIRST_COMPLETED)
                        for fut in done:
                            r = pending.pop(fut)
                            record(r, fut.result())
                            if progress:
                                progress(MirrorProgress(fetched + len(vanished), len(todo), bytes_fetched, r.path))
                except BaseException:
                    for fut in pending:
                        fut.cancel()
                    raise
        finally:
            # What was fetched stays recorded even if a later GET failed, so a retry resumes.
            with _writing(dest / MANIFEST):
                _write_json_atomic(dest / MANIFEST, {"version": _MANIFEST_VERSION, "uri": loc.uri, "files": new_manifest})
            shutil.rmtree(tmp_dir, ignore_errors=True)

        keep = {r.path for r in remote} - vanished
        removed = 0
        for rel in sorted(_local_files(log_dir) - keep):
            try:
                (dest / rel).unlink()
                removed += 1
            except FileNotFoundError:
                pass
        _prune_empty_dirs(log_dir)
    logger.info("mirrored %s: %d objects listed, %d fetched (%d bytes), %d unchanged, %d removed, in %.2f s",
                loc.uri, len(remote), fetched, bytes_fetched, reused, removed, time.monotonic() - started)
    return Mirror(
        root=dest,
        location=loc,
        fetched=fetched,
        reused=reused,
        removed=removed,
        bytes_fetched=bytes_fetched,
        seconds=round(time.monotonic() - started, 3),
        skipped=skipped,
        listed_from=listed_from,
    )


TAIL_VERSIONS = 100  # a refresh re-lists this many versions below the newest mirrored commit


def _version_of(path: str) -> int | None:
    name = path[len(LOG_DIR) + 1:] if path.startswith(LOG_DIR + "/") else None
    head = name[:20] if name else ""
    return int(head) if len(head) == 20 and head.isdigit() else None


def _list_log(store, manifest: Mapping[str, Mapping[str, Any]]) -> tuple[list[RemoteFile], str | None]:
    """The remote `_delta_log`, listed whole on the first look and after a log clean-up, else
    only its tail: commits are immutable and Delta's clean-up removes from the oldest, so when the
    oldest mirrored file is still there, everything below the tail is what the mirror holds. The
    tail (the last TAIL_VERSIONS versions, and every name that sorts after the versions:
    `_last_checkpoint`, `_staged_commits/`, `_sidecars/`) catches late checkpoints and checksums.
    Listing 20,000 keys costs seconds on a store; the tail, milliseconds."""
    import obstore

    versioned = sorted((v, p) for p in manifest if (v := _version_of(p)) is not None)
    if not versioned:
        return list(_list(store, LOG_DIR)), None
    oldest = versioned[0][1]
    try:
        meta = obstore.head(store, oldest)
    except FileNotFoundError:
        return list(_list(store, LOG_DIR)), None  # cleaned up: removals must reach the mirror
    rec = manifest[oldest]
    if int(meta["size"]) != rec.get("size") or _etag(meta.get("e_tag")) != rec.get("etag"):
        return list(_list(store, LOG_DIR)), None
    newest_commit = max((v for v, p in versioned if p.endswith(".json")), default=versioned[-1][0])
    floor = max(0, newest_commit - TAIL_VERSIONS)
    offset = f"{LOG_DIR}/{floor:020d}"
    kept = [RemoteFile(p, int(r["size"]), int(r["last_modified_ms"]), r.get("etag")) for p, r in manifest.items() if p <= offset]
    tail = []
    for batch in obstore.list(store, LOG_DIR, offset=offset, chunk_size=1000):
        # filtered here too: a store (Azurite) may not honour the offset and list from the start
        tail.extend(_remote(m) for m in batch if str(m["path"]) > offset and not str(m["path"]).endswith("/"))
    return kept + tail, offset


def read_object(uri: str, options: StorageOptions | Mapping[str, Any] | None = None, *, profile: str | None = None,
                limit: int = 2 * 1024 * 1024) -> bytes:
    """The first `limit` bytes (0: all) of one object (an error text, an event log file), read-only."""
    import obstore

    loc = parse_location(uri)
    parent, _, name = loc.prefix.rpartition("/")
    folder = replace(loc, prefix=parent, uri=loc.uri.rsplit("/", 1)[0])
    if not isinstance(options, StorageOptions):
        options = resolve_options(folder, dict(options or {}), profile=profile)
    with store_errors(loc, options, listing=False):
        store = options.store(folder)
        size = int(obstore.head(store, name)["size"])
        got = obstore.get(store, name, options={"range": (0, limit)} if limit and size > limit else None)
        return bytes(got.bytes())
