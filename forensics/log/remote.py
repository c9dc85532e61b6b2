"""A remote table's log, read from a local mirror of its `_delta_log`.

pip's pyspark ships no object-store file systems, so Spark cannot open `s3://`, `abfss://` or
`gs://` here. The log is mirrored through forensics.storage (obstore, read-only) into the
user's cache directory, keyed by the remote URI; a repeat look fetches only new or changed
files. Spark then reads the mirror, and everything downstream speaks of the remote URI.
`use_cache=False` mirrors into a temporary directory removed when the process ends.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from forensics.runtime.paths import mirror_dir
from forensics.storage import Mirror, StorageOptions, StoreLocation, list_table_files, mirror_log, resolve_options


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


def mirror_table(location: StoreLocation, explicit: Mapping[str, str] | None, *, profile: str | None,
                 use_cache: bool, progress: Callable[[str], None] | None = None) -> RemoteTable:
    """Resolve the storage options and bring the table's `_delta_log` up to date locally."""
    options = resolve_options(location, dict(explicit or {}), profile=profile)
    if use_cache:
        dest = mirror_dir(location.uri)
    else:
        dest = Path(tempfile.mkdtemp(prefix="delta-forensics-mirror-"))
    say = (lambda p: progress(str(p))) if progress else None
    try:
        mirror = mirror_log(location, options, dest, progress=say)
    except BaseException:
        if not use_cache:
            shutil.rmtree(dest, ignore_errors=True)
        raise
    remote = RemoteTable(location, options, mirror)
    if not use_cache:
        weakref.finalize(remote, shutil.rmtree, str(dest), True)
    return remote
