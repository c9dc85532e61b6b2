"""Many small commit files handed to a local Spark session as a few large scratch files.

Spark pays per file, not per byte: on 1,000,000 commit files it spent 27 s listing the directory,
12 s planning the scan and about 0.1 ms of executor time opening each file (100,000 files: 10 s to
read 170 MB that Python reads in 1.9 s). When the session is local (its executors read this disk),
this process copies the commit files into scratch files of about BUNDLE_BYTES under the cache
root, one row per line: `version <TAB> line number <TAB> the line as written`. Spark reads them
with its text source (split into tasks by size, lines separated by "\\n" only, so a "\\r" stays in
its line as it does when the whole file is read and split), and the rows are the same as the
whole-file read gives (`tests/test_bundle.py` compares both on the samples and the corpus). The
directory is removed as soon as the rows are collected. Clusters and Spark Connect read the
commit files themselves (`reader._file_texts`).
"""

from __future__ import annotations

import os
import shutil
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from forensics.errors import ExitCode, ForensicsError
from forensics.log.listing import LogFile, is_local
from forensics.runtime.children import child_environment
from forensics.runtime.spill import new_scratch_dir, shares_this_disk

# Scratch file size: Spark splits text files at spark.sql.files.maxPartitionBytes (64 MB here)
# anyway; one file per 64 MB keeps the directory listing trivial and every task a whole file.
BUNDLE_BYTES = 64 << 20


def can_bundle(spark: Any, files: Sequence[LogFile]) -> bool:
    """A local session reading local files: the executors read what this process writes."""
    parents = {f.uri.rsplit("/", 1)[0] for f in files}  # a handful of directories, not a URI parse per file
    return bool(files) and shares_this_disk(spark) and all(is_local(p) for p in parents)


@dataclass(frozen=True)
class Bundle:
    """Where Spark reads the bundle, and whether any line may hold U+FFFD (bytes that are not
    UTF-8, or the character itself). When none can, the reader leaves out its per-line search
    for it (about 8% of the parse's CPU): the copy sees every byte anyway, and checking a file
    that is ASCII costs next to nothing."""

    uri: str
    may_hold_fffd: bool


@contextmanager
def bundled(files: Sequence[LogFile], versions: dict[str, int], ahead: "WriteAhead | None" = None) -> Iterator[Bundle]:
    """Write the bundle for `files` (rows attributed to `versions[f.uri]`), or take the one
    `ahead` wrote for the same files; yield where it is; remove it on leaving, whatever happened."""
    if ahead is not None and ahead.holds(files, versions):
        tmp, fffd = ahead.take()
    else:
        tmp = new_scratch_dir()
        fffd = None
    try:
        if fffd is None:
            fffd = _write(tmp, files, versions)
        yield Bundle(tmp.as_uri(), fffd)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class WriteAhead:
    """The bundle written on a thread while the JVM starts (a cold first look: the copy of 20,000
    commit files, ~0.45 s, no longer waits for the JVM's ~4 s). Whoever starts one discards it
    unless `bundled` took it: the session that starts may not be local, and then no bundle is read."""

    def __init__(self, files: Sequence[LogFile], versions: dict[str, int]) -> None:
        self.files = files
        self.uris = [f.uri for f in files]
        self.versions = versions
        self.dir = new_scratch_dir()
        self.taken = False
        self._fffd: bool | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._done = False
        self._discarded = False
        self._thread = threading.Thread(target=self._run, args=(list(files),), name="bundle-ahead", daemon=True)
        self._thread.start()

    def _run(self, files: list[LogFile]) -> None:
        try:
            self._fffd = _write(self.dir, files, self.versions)
        except BaseException as e:  # noqa: BLE001 - raised where the bundle is taken, as an inline write would
            self._error = e
        with self._lock:
            self._done = True
            if self.taken and self._discarded:
                shutil.rmtree(self.dir, ignore_errors=True)  # discarded while it copied: its own to remove

    def holds(self, files: Sequence[LogFile], versions: dict[str, int]) -> bool:
        """Whether the copy is of `files` with these versions (the same objects, a first look's
        usual case, are not compared a million items over)."""
        if self.taken:
            return False
        same_files = files is self.files or [f.uri for f in files] == self.uris
        return same_files and (versions is self.versions or all(versions[u] == self.versions[u] for u in self.uris))

    def take(self) -> tuple[Path, bool]:
        """The written directory (the caller removes it) and its U+FFFD answer; a failed copy raises here."""
        self._thread.join()
        self.taken = True
        if self._error is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise self._error
        assert self._fffd is not None
        return self.dir, self._fffd

    def discard(self, wait_s: float = 5.0) -> None:
        """Remove it unread. A copy still running after `wait_s` (a million files, the command
        interrupted) is not waited for: it removes its directory when it ends, and a process that
        exits first leaves it to the next scratch use's sweep."""
        if self.taken:
            return
        self.taken = True
        self._thread.join(wait_s)
        with self._lock:
            if self._done:
                shutil.rmtree(self.dir, ignore_errors=True)
            else:
                self._discarded = True


def may_hold_fffd(data: bytes) -> bool:
    """Whether text decoded from `data` can contain U+FFFD: bytes that are not UTF-8 (Spark and
    Arrow decode them to it) or the character itself."""
    if data.isascii():
        return False
    if b"\xef\xbf\xbd" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


# From this many files the copy runs in two processes (reading a million small files is ~40 s of
# system calls in one); below it a process's start costs more than it saves.
PARALLEL_MIN_FILES = 50_000


def _write(out: Path, files: Sequence[LogFile], versions: dict[str, int]) -> bool:
    """Copy the files; whether any may hold U+FFFD (`may_hold_fffd`)."""
    work = [(f.uri[5:] if f.uri.startswith("file:") else f.uri, f.name, versions[f.uri]) for f in files]
    procs = min(2, os.cpu_count() or 1) if len(work) >= PARALLEL_MIN_FILES else 1
    if procs == 1:
        failed, fffd = _write_part(str(out), "a", work)
    else:
        step = -(-len(work) // procs)
        failed, fffd = _in_workers(out, [work[i:i + step] for i in range(0, len(work), step)])
    if failed is not None:
        name, version, why = failed
        # Gone since the listing (log cleanup ran) or not readable: the one file named, nothing kept.
        raise ForensicsError(ExitCode.UNREADABLE, f"commit file could not be read: {why}", file=f"_delta_log/{name}", version=version)
    return fffd


def _in_workers(out: Path, slices: list[list[tuple[str, str, int]]]) -> tuple[tuple[str, int, str] | None, bool]:
    """Each slice copied by a `python -m forensics.log.bundle` of its own. Not multiprocessing: its
    spawn imports the caller's main module again, and a script without a `__main__` guard would
    run twice (a second Spark session) or fail. Each slice goes through a hidden file in `out`
    (Spark's file index skips names starting with "."); every worker is waited for before any
    failure is raised, so none writes into a directory being removed."""
    import json
    import subprocess
    import sys

    jobs = []
    for tag, work in zip("abcdefgh", slices):
        spec = out / f".work-{tag}.json"
        spec.write_text(json.dumps(work), encoding="utf-8")
        jobs.append((spec, subprocess.Popen([sys.executable, "-m", "forensics.log.bundle", str(out), tag, str(spec)],
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_environment())))
    done = [(proc.communicate(), proc.returncode) for _, proc in jobs]
    for spec, _ in jobs:
        spec.unlink(missing_ok=True)
    for (stdout, stderr), code in done:
        if code != 0:
            last = (stderr.decode("utf-8", "replace").strip().splitlines() or ["no output"])[-1]
            raise OSError(f"copying the commit files for Spark failed: {last}")  # as a failed write in this process would
    said = [json.loads(stdout) for (stdout, _), _ in done]
    failed = [tuple(w["failed"]) for w in said if w["failed"] is not None]
    return (failed[0] if failed else None), any(w["fffd"] for w in said)  # type: ignore[return-value]


def _write_part(out: str, tag: str, work: list[tuple[str, str, int]]) -> tuple[tuple[str, int, str] | None, bool]:
    """Copy `work` (path, name, version) into `out`/part-<tag>-N.tsv: the first unreadable file (or
    None), and whether any file copied may hold U+FFFD. Each file is read with `os.open`/`os.read`:
    `open()`'s buffered layers cost ~6 µs a file, ~6 s of CPU over a million (by hand, warm
    pages, 100,000 files: 2.2-2.5 s against 1.7-1.8 s)."""
    n, size, fffd = 0, 0, False
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
    sink = open(os.path.join(out, f"part-{tag}-{n:05d}.tsv"), "wb")
    try:
        for path, name, version in work:
            try:
                fd = os.open(path, flags)
                try:
                    data = _read_all(fd)
                finally:
                    os.close(fd)
            except OSError as e:
                return (name, version, e.strerror or str(e)), fffd
            fffd = fffd or may_hold_fffd(data)
            prefix = b"%d\t" % version
            rows = b"".join(b"%s%d\t%s\n" % (prefix, i, line) for i, line in enumerate(data.split(b"\n")))
            sink.write(rows)
            size += len(rows)
            if size >= BUNDLE_BYTES:
                sink.close()
                n, size = n + 1, 0
                sink = open(os.path.join(out, f"part-{tag}-{n:05d}.tsv"), "wb")
    finally:
        sink.close()
    return None, fffd


_FIRST_READ = 1 << 16  # most commit files fit: one read, then the empty read that says the file ended


def _read_all(fd: int) -> bytes:
    """Every byte of an open file, read until a read returns nothing (a file that grows while it
    is read is read to its end then, as `open().read()` would)."""
    parts = [os.read(fd, _FIRST_READ)]
    total = len(parts[0])
    while total and (chunk := os.read(fd, max(_FIRST_READ, total))):
        parts.append(chunk)
        total += len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


if __name__ == "__main__":  # python -m forensics.log.bundle OUT TAG WORK.json (_in_workers)
    import json
    import sys

    _out, _tag, _spec = sys.argv[1:4]
    _failed, _fffd = _write_part(_out, _tag, [tuple(w) for w in json.loads(Path(_spec).read_text(encoding="utf-8"))])
    print(json.dumps({"failed": None if _failed is None else list(_failed), "fffd": _fffd}))
