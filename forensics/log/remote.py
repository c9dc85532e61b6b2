"""A remote table's log, read from a local mirror of its `_delta_log`.

pip's pyspark ships no object-store file systems, so Spark cannot open `s3://`, `abfss://` or
`gs://` here. The log is mirrored through forensics.storage (obstore, read-only) into the
user's cache directory, keyed by the remote URI; a repeat look fetches only new or changed
files. Spark then reads the mirror, and everything downstream speaks of the remote URI.
`use_cache=False` mirrors into a temporary directory removed when the process ends.
The commit files the store lists are announced before they are fetched (`on_commits`), so a
caller can start the JVM that will parse them while they download.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from forensics.log.listing import LogFile, commit_version, normalize_location
from forensics.runtime.paths import mirror_dir
from forensics.storage import Mirror, RemoteFile, StorageOptions, StoreLocation, list_table_files, mirror_log, resolve_options
from forensics.storage.mirror import LOG_DIR


@dataclass(frozen=True)
class RemoteTable:
    """Where a remote table is, how to reach it, and where its log was mirrored."""

    location: StoreLocation
    options: StorageOptions
    mirror: Mirror

    @property
    def uri(self) -> str:
        return self.location.uri

    def data_files(self) -> list[Any]:
        """Every object under the table root except the log (path, size, last-modified): for evidence."""
        return list_table_files(self.location, self.options)


@dataclass(frozen=True)
class ListedCommits:
    """What a store's listing of `_delta_log` shows before the mirror fetches it: the commit
    files, named as `list_log` will name their copies (size and time are the store's, which the
    copies keep), and the size of the largest JSON file listed (a staged or compacted commit,
    which Spark may parse too)."""

    commits: dict[int, LogFile]
    largest_json: int = 0


def mirror_table(location: StoreLocation, explicit: Mapping[str, str] | None, *, profile: str | None,
                 use_cache: bool, progress: Callable[[str], None] | None = None,
                 on_commits: Callable[[ListedCommits], None] | None = None) -> RemoteTable:
    """Resolve the storage options and bring the table's `_delta_log` up to date locally;
    `on_commits` is told what the store listed before any file is fetched
    (forensics.log.delta_log.SparkStarter)."""
    options = resolve_options(location, dict(explicit or {}), profile=profile)
    if use_cache:
        dest = mirror_dir(location.uri)
    else:
        dest = Path(tempfile.mkdtemp(prefix="delta-forensics-mirror-"))
    say = (lambda p: progress(str(p))) if progress else None
    listed = (lambda files: on_commits(listed_commits(files, dest))) if on_commits else None
    try:
        mirror = mirror_log(location, options, dest, progress=say, on_listed=listed)
    except BaseException:
        if not use_cache:
            shutil.rmtree(dest, ignore_errors=True)
        raise
    remote = RemoteTable(location, options, mirror)
    if not use_cache:
        weakref.finalize(remote, shutil.rmtree, str(dest), True)
    return remote


def listed_commits(files: list[RemoteFile], root: Path) -> ListedCommits:
    """The commit files among objects a store listed, as their copies under the mirror `root`
    will be, and the largest JSON object's size."""
    log_uri = normalize_location(str(root / LOG_DIR))
    commits: dict[int, LogFile] = {}
    for r in files:
        folder, _, name = r.path.rpartition("/")
        v = commit_version(name) if folder == LOG_DIR else None
        if v is not None:
            commits[v] = LogFile(name, f"{log_uri}/{name}", r.size, r.last_modified_ms)
    return ListedCommits(commits, max((r.size for r in files if r.path.endswith(".json")), default=0))
