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
# Folder under the table root ("_delta_log", "_delta_log/_sidecars") -> name -> that entry's `lstat`.
Entries = dict[str, dict[str, os.stat_result]]


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
    # Every entry of the copy as this run left it (its scan, then its writes and removals): a listing
    # of the copy right after (forensics.log.listing.list_log) need not stat each file again.
    entries: Entries | None = field(default=None, repr=False, compare=False)

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


def _has_manifest(dest: Path) -> bool:
    """Whether `dest` is (or was begun as) a mirror: `_read_manifest` would not give None. Only
    looked at, not parsed: it is read under the lock."""
    try:
        os.stat(dest / MANIFEST)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # unreadable: ours, as `_read_manifest` says
    return True


def _write_json_atomic(path: Path, data: Any) -> None:
    """`dumps`, compact: `json.dump` and any indent use json's pure-Python encoder (0.15 s for
    the 20,000-entry manifest a refresh writes; the C encoder takes a third of that)."""
    text = json.dumps(data, separators=(",", ":"), sort_keys=True)
    fd, tmp = tempfile.mkstemp(prefix=".manifest-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
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


def _unchanged(local: tuple[int, int] | None, remote: RemoteFile, recorded: Mapping[str, Any] | None) -> bool:
    """The object is what the manifest recorded and the local copy (size, mtime in ms, from
    `_local_state`) is still what was written."""
    if not recorded:
        return False
    if (
        recorded.get("size") != remote.size
        or recorded.get("last_modified_ms") != remote.last_modified_ms
        or recorded.get("etag") != remote.etag
    ):
        return False
    return local == (remote.size, remote.last_modified_ms)


def _kept_unchanged(local: tuple[int, int] | None, recorded: Mapping[str, Any]) -> bool:
    """A file below a tail listing: the store was not asked again (commits are immutable), so
    only the local copy is checked against what the manifest recorded."""
    return local == (recorded.get("size"), recorded.get("last_modified_ms"))


def _recorded(path: str, recorded: Mapping[str, Any]) -> RemoteFile:
    """A manifest entry as the object it recorded (to fetch it again)."""
    return RemoteFile(path, int(recorded["size"]), int(recorded["last_modified_ms"]), recorded.get("etag"))


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


def _local_state(log_dir: Path) -> tuple[dict[str, tuple[int, int]], list[str], Entries]:
    """Every file of the local mirror ("_delta_log/...": (size, mtime in ms)), its subdirectories
    ("_delta_log/..."), and every entry's `lstat` by folder, in one `scandir` pass: the
    changed-file check, the removals and the listing of the copy all use it (an `os.walk` with
    `relpath` and a pathlib `stat` per file took ~0.5 s at 20,000 files). Directories are
    classified as `os.walk` does (a link to one is neither entered nor removed). A regular file's
    `stat` is its `lstat` (os.DirEntry keeps it): no second system call."""
    files: dict[str, tuple[int, int]] = {}
    dirs: list[str] = []
    entries: Entries = {}
    stack = [(os.fspath(log_dir), LOG_DIR)]
    while stack:
        path, rel = stack.pop()
        try:
            it = os.scandir(path)
        except OSError:
            continue
        here = entries[rel] = {}
        with it:
            for e in it:
                name = f"{rel}/{e.name}"
                try:
                    here[e.name] = e.stat(follow_symlinks=False)
                except OSError:  # gone: a listing would not show it either
                    pass
                try:
                    if e.is_dir():
                        if not e.is_symlink():
                            dirs.append(name)
                            stack.append((e.path, name))
                        continue
                    st = e.stat()
                except OSError:  # gone, or a dangling link: no copy to trust
                    files[name] = (-1, -1)
                    continue
                files[name] = (st.st_size, st.st_mtime_ns // 1_000_000)
    return files, dirs, entries


def _note_folder(entries: Entries, dest: Path, folder: str) -> None:
    """Enter a folder of the copy (and those above it, up to `_delta_log`) if the scan did not see it."""
    if folder in entries:
        return
    entries[folder] = {}
    parent, _, name = folder.rpartition("/")
    if parent:
        _note_folder(entries, dest, parent)
        try:
            entries[parent][name] = os.lstat(dest / folder)
        except OSError:
            entries[parent].pop(name, None)


def _note_written(entries: Entries, dest: Path, rel: str) -> None:
    """Enter a file this run wrote, as a listing of the copy would see it."""
    folder, _, name = rel.rpartition("/")
    _note_folder(entries, dest, folder)
    try:
        entries[folder][name] = os.lstat(dest / rel)
    except OSError:
        entries[folder].pop(name, None)


def _note_gone(entries: Entries, rel: str) -> None:
    """Forget a file or folder this run removed."""
    folder, _, name = rel.rpartition("/")
    entries.get(folder, {}).pop(name, None)
    entries.pop(rel, None)


def _prune_empty_dirs(dest: Path, dirs: list[str]) -> list[str]:
    """Remove the folders left empty, deepest first; the ones removed."""
    removed = []
    for rel in sorted(dirs, key=len, reverse=True):
        try:
            os.rmdir(dest / rel)
        except OSError:
            continue
        removed.append(rel)
    return removed


def mirror_log(
    location: StoreLocation | str,
    options: StorageOptions | Mapping[str, Any] | None,
    dest: Path | str,
    *,
    progress: Callable[[MirrorProgress], None] | None = None,
    max_workers: int = 8,
    on_listed: Callable[[list[RemoteFile]], None] | None = None,
) -> Mirror:
    """Make `dest/_delta_log/` an exact copy of the table's remote `_delta_log/`.

    Fetches only objects that are new or changed since the last mirror into `dest` (name,
    size, ETag, last-modified), with up to `max_workers` concurrent GETs; writes each file
    atomically (a temporary file, its size checked against the listing, then renamed: an
    interrupted run leaves no partial file) with the object's last-modified time as mtime;
    deletes local files whose object is gone. `dest` must be empty, absent, or an earlier mirror. Raises `NotADeltaTable` when
    the location has no `_delta_log`, and the store errors of `forensics.storage.errors`.
    `on_listed` is given the objects the store listed (a refresh: only the log's tail) as soon as
    the listing is in, before the local scan and the downloads: what the new files will need (a
    JVM to parse them) can start while they arrive.
    """
    started = time.monotonic()
    loc, options = _resolve(location, options)
    dest = Path(dest).expanduser().absolute()
    log_dir = dest / LOG_DIR
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create the mirror directory {dest}: {e.strerror}") from None
    if not _has_manifest(dest) and log_dir.exists() and any(log_dir.iterdir()):
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
            remote, kept, listed_from = retried(lambda: _list_log(store, manifest), budget, listing_cut)
        if not remote and not kept:
            raise NotADeltaTable(f"not a Delta table (no _delta_log under it): {loc.uri}")

        skipped = tuple(sorted(r.path for r in remote if not _safe_relative(r.path)))
        remote = [r for r in remote if _safe_relative(r.path)]
        if on_listed is not None:
            on_listed(remote)
        kept = [p for p in kept if _safe_relative(p)]  # the manifest's own names: checked all the same
        local, local_dirs, entries = _local_state(log_dir)
        todo = [r for r in remote if not _unchanged(local.get(r.path), r, manifest.get(r.path))]
        todo += [_recorded(p, manifest[p]) for p in kept if not _kept_unchanged(local.get(p), manifest[p])]
        reused = len(remote) + len(kept) - len(todo)
        tmp_dir = dest / _TMP_DIR
        shutil.rmtree(tmp_dir, ignore_errors=True)  # leftovers of an interrupted run
        with _writing(tmp_dir):
            tmp_dir.mkdir(parents=True, exist_ok=True)
        vanished: set[str] = set()
        fetched = 0
        bytes_fetched = 0
        new_manifest = {p: manifest[p] for p in kept}
        new_manifest.update((r.path, manifest[r.path]) for r in remote if r.path in manifest)
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
                _note_written(entries, dest, r.path)

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
            # An unchanged log leaves the manifest as it is (`watch` refreshes every few seconds).
            if new_manifest != manifest:
                with _writing(dest / MANIFEST):
                    _write_json_atomic(dest / MANIFEST, {"version": _MANIFEST_VERSION, "uri": loc.uri, "files": new_manifest})
            shutil.rmtree(tmp_dir, ignore_errors=True)

        keep = ({r.path for r in remote} | set(kept)) - vanished
        removed = 0
        for rel in sorted(local.keys() - keep):
            try:
                (dest / rel).unlink()
                removed += 1
            except FileNotFoundError:
                pass
            _note_gone(entries, rel)
        for rel in _prune_empty_dirs(dest, local_dirs):
            _note_gone(entries, rel)
    logger.info("mirrored %s: %d objects listed (%d more known from the manifest), %d fetched (%d bytes), %d unchanged, "
                "%d removed, in %.2f s", loc.uri, len(remote), len(kept), fetched, bytes_fetched, reused, removed,
                time.monotonic() - started)
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
        entries=entries,
    )


TAIL_VERSIONS = 100  # a refresh re-lists this many versions below the newest mirrored commit


def _version_of(path: str) -> int | None:
    """The version a `_delta_log/` key's name starts with (twenty ASCII digits, as Delta names its
    files: forensics/log/listing.py), else None."""
    name = path[len(LOG_DIR) + 1:] if path.startswith(LOG_DIR + "/") else None
    head = name[:20] if name else ""
    return int(head) if len(head) == 20 and head.isascii() and head.isdigit() else None


def _list_log(store, manifest: Mapping[str, Mapping[str, Any]]) -> tuple[list[RemoteFile], list[str], str | None]:
    """The remote `_delta_log` as (objects listed, manifest paths taken as they are, offset):
    listed whole on the first look and after a log clean-up, else only its tail: commits are
    immutable and Delta's clean-up removes from the oldest, so when the oldest mirrored file is
    still there, everything below the tail is what the mirror holds (its manifest entries are
    kept as paths: no object per entry). The tail (the last TAIL_VERSIONS versions, and every name
    that sorts after the versions: `_last_checkpoint`, `_staged_commits/`, `_sidecars/`) catches
    late checkpoints and checksums. Listing 20,000 keys costs seconds on a store; the tail,
    milliseconds."""
    import obstore

    oldest: str | None = None  # zero-padded versions: the smallest name is the oldest version's
    newest = newest_commit = -1
    for p, r in manifest.items():
        if type(r) is not dict or type(r.get("size")) is not int or type(r.get("last_modified_ms")) is not int:
            return list(_list(store, LOG_DIR)), [], None  # a damaged entry: the listing says what it was
        v = _version_of(p)
        if v is None:
            continue
        if oldest is None or p < oldest:
            oldest = p
        newest = max(newest, v)
        if v > newest_commit and p.endswith(".json"):
            newest_commit = v
    if oldest is None:
        return list(_list(store, LOG_DIR)), [], None
    try:
        meta = obstore.head(store, oldest)
    except FileNotFoundError:
        return list(_list(store, LOG_DIR)), [], None  # cleaned up: removals must reach the mirror
    rec = manifest[oldest]
    if int(meta["size"]) != rec.get("size") or _etag(meta.get("e_tag")) != rec.get("etag"):
        return list(_list(store, LOG_DIR)), [], None
    floor = max(0, (newest_commit if newest_commit >= 0 else newest) - TAIL_VERSIONS)
    offset = f"{LOG_DIR}/{floor:020d}"
    kept = [p for p in manifest if p <= offset]
    tail = []
    for batch in obstore.list(store, LOG_DIR, offset=offset, chunk_size=1000):
        # filtered here too: a store (Azurite) may not honour the offset and list from the start
        tail.extend(_remote(m) for m in batch if str(m["path"]) > offset and not str(m["path"]).endswith("/"))
    return tail, kept, offset


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
