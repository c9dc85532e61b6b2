"""List and classify the files of a `_delta_log` directory, without starting a JVM.

Listing is cheap and tells us whether anything changed since the cache was written, so a
repeat look never waits for Spark. Every name is classified; names that are not part of the
Delta protocol become findings (stray files never break reading).
"""

from __future__ import annotations

import itertools
import os
import re
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Iterable
from urllib.parse import urlparse

from forensics.errors import ExitCode, ForensicsError
from forensics.model import Finding

# ASCII digits only, as Delta's own patterns match them: Java's `\d` (delta-io/delta v4.0.0,
# spark/src/main/scala/org/apache/spark/sql/delta/util/FileNames.scala, deltaFileRegex,
# checksumFileRegex, checkpointFileRegex; the same `\d` in v2.4.0 and v3.2.0's
# storage/src/main/java/io/delta/storage/internal/FileNameUtils.java, DELTA_FILE_PATTERN).
# Python's `\d` also takes other scripts' digits, which `int` reads as a version.
_V = r"([0-9]{20})"
RE_COMMIT = re.compile(rf"^{_V}\.json$")
_COMMIT_LINES = re.compile(rf"^{_V}\.json$", re.M)  # RE_COMMIT's names among names joined by newlines
RE_CHECKPOINT_CLASSIC = re.compile(rf"^{_V}\.checkpoint\.parquet$")
RE_CHECKPOINT_MULTI = re.compile(rf"^{_V}\.checkpoint\.([0-9]{{10}})\.([0-9]{{10}})\.parquet$")
RE_CHECKPOINT_V2 = re.compile(rf"^{_V}\.checkpoint\.([0-9a-fA-F-]{{36}})\.(json|parquet)$")
RE_COMPACTED = re.compile(rf"^{_V}\.{_V}\.compacted\.json$")
RE_CRC = re.compile(rf"^{_V}\.crc$")
RE_STAGED = re.compile(rf"^{_V}\.([0-9a-fA-F-]{{36}})\.json$")
RE_HADOOP_CRC = re.compile(r"^\..+\.crc$")
RE_TMP_COMMIT = re.compile(rf"^\.?{_V}\.json\..*\.?tmp$|^\.{_V}\.json\.[0-9a-fA-F-]+\.tmp$")

STAGED_DIRS = ("_staged_commits", "_commits")


def commit_version(name: str) -> int | None:
    """The version a commit file's name (RE_COMMIT) gives, or None. The usual name, twenty ASCII
    digits and ".json", is told without the regex: over a million names the regex cost ~3 s."""
    if len(name) == 25 and name.endswith(".json"):
        head = name[:20]
        if head.isascii() and head.isdigit():
            return int(head)
    m = RE_COMMIT.match(name)
    return int(m.group(1)) if m else None


def _by_name(entry: tuple) -> str:
    """Entries sort by name alone (names in a folder are unique): a million tuples compared whole cost more."""
    return entry[0]


@dataclass(frozen=True, slots=True)  # slots: a million of them on a long log (0.5 s less to build)
class LogFile:
    name: str  # relative to _delta_log (e.g. "00000000000000000003.json", "_sidecars/x.parquet")
    uri: str  # full path/URI Spark can open
    size: int
    mtime_ms: int


@dataclass(frozen=True)
class Checkpoint:
    version: int
    kind: str  # "classic" | "multipart" | "v2"
    files: tuple[LogFile, ...]
    complete: bool  # multi-part: every part present
    fmt: str = "parquet"  # v2 manifests may be json


@dataclass
class LogListing:
    table_uri: str
    log_uri: str
    commits: dict[int, LogFile] = field(default_factory=dict)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    compacted: list[tuple[int, int, LogFile]] = field(default_factory=list)
    crc: dict[int, LogFile] = field(default_factory=dict)
    staged: list[tuple[int, str, LogFile]] = field(default_factory=list)
    sidecars: dict[str, LogFile] = field(default_factory=dict)
    last_checkpoint: LogFile | None = None
    temp_commits: list[LogFile] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    # Where Spark reads the log when it is not where it was listed: a cluster's executors read a
    # remote table from the store, not from this machine's mirror (forensics/storage/connectors.py).
    spark_log_uri: str | None = None

    def spark_uri(self, f: LogFile) -> str:
        """The URI Spark reads `f` from: the store's for a mirrored log read by a cluster, else `f.uri`."""
        base = self.log_uri.rstrip("/")
        if self.spark_log_uri and f.uri.startswith(base + "/"):
            return self.spark_log_uri.rstrip("/") + f.uri[len(base):]
        return f.uri

    @property
    def versions(self) -> list[int]:
        return sorted(self.commits)

    @property
    def latest_version(self) -> int | None:
        cands = list(self.commits)
        cands += [c.version for c in self.checkpoints if c.complete]
        return max(cands) if cands else None

    def commit_times(self) -> list[tuple[int, int]]:
        """(version, commit file's mtime in epoch ms) of every listed commit, ascending: what
        `commit_versions_local(times=True)` gives without classifying the rest."""
        return [(v, f.mtime_ms) for v, f in sorted(self.commits.items())]

    def fingerprint(self) -> list[tuple[str, int, int]]:
        """What the cache compares: every commit file's name, size and mtime."""
        return [(f.name, f.size, f.mtime_ms) for _, f in sorted(self.commits.items())]


# --------------------------------------------------------------------------------------
# File systems: local (os.scandir) or pyarrow.fs for object stores
# --------------------------------------------------------------------------------------


def normalize_location(location: str) -> str:
    """A stable URI for a table: absolute local path, or the URI as given without a trailing slash."""
    loc = location.strip()
    parsed = urlparse(loc)
    if parsed.scheme in ("", "file") or (len(parsed.scheme) == 1 and os.name == "nt"):
        path = parsed.path if parsed.scheme == "file" else loc
        return os.path.abspath(os.path.expanduser(path))
    return loc.rstrip("/")


def is_local(uri: str) -> bool:
    return urlparse(uri).scheme in ("", "file")


Entry = tuple[str, int, int, bool, bool]  # (name, size, mtime_ms, is_dir, is_link)
Known = Mapping[str, Mapping[str, os.stat_result]]  # folder under the table root -> name -> lstat


def _entry(name: str, st: os.stat_result) -> Entry:
    """An entry from its `lstat`: one definition, for a scan here and for a mirror's own."""
    return (name, st.st_size, int(st.st_mtime * 1000), stat.S_ISDIR(st.st_mode), stat.S_ISLNK(st.st_mode))


def _entries_local(dir_path: str) -> Iterable[Entry]:
    """(name, size, mtime_ms, is_dir, is_link) for each entry; never follows links."""
    with os.scandir(dir_path) as it:
        for e in it:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            yield _entry(e.name, st)


def _entries_known(known: Known, table_uri: str, dir_uri: str) -> list[Entry]:
    """The entries of a folder under `table_uri` from the `lstat`s a mirror has just taken
    (forensics.storage.mirror.Mirror.entries), instead of a scan: the mirror made the folder so."""
    return [_entry(name, st) for name, st in known.get(dir_uri[len(table_uri) + 1:], {}).items()]


def commit_versions_local(location: str, *, times: bool) -> list[tuple[int, int | None]]:
    """(version, commit file's mtime in epoch ms, or None without `times`) of every commit file a
    local `_delta_log` names, ascending: what a first paint needs. Names alone are one directory
    read (about 0.1 s at 100k commits, where `list_log`'s stat and classification of every entry
    take about 1 s) and may include an entry named like a commit that is no file (a link, a
    directory); with `times` each is stat'ed and only regular files count, as in `list_log`.
    Raises OSError when the directory cannot be read."""
    path = _join(normalize_location(location), "_delta_log")
    path = urlparse(path).path if path.startswith("file:") else path
    listed = os.listdir(path)
    joined = "\n".join(listed)
    if joined.count("\n") == len(listed) - 1:  # no name holds a newline: one regex pass, not a call per name
        heads = _COMMIT_LINES.findall(joined)
    else:
        heads = [n[:20] for n in listed if commit_version(n) is not None]
    if not times:  # zero-padded: the names' order is the versions'
        if heads:
            first, last = int(min(heads)), int(max(heads))
            if last - first + 1 == len(heads):  # names are unique, so no gap (the usual log): no sort, no parse each
                return list(zip(range(first, last + 1), itertools.repeat(None)))
        return [(int(h), None) for h in sorted(heads)]
    names = [h + ".json" for h in sorted(heads)]
    prefix = path.rstrip("/") + "/"
    out: list[tuple[int, int | None]] = []
    for n in names:
        try:
            st = os.lstat(prefix + n)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out.append((int(n[:20]), int(st.st_mtime * 1000)))
    return out


def _arrow_fs(uri: str):
    import pyarrow.fs as pafs

    u = uri
    if u.startswith("s3a://") or u.startswith("s3n://"):
        u = "s3://" + u.split("://", 1)[1]
    return pafs.FileSystem.from_uri(u)


def _entries_remote(dir_uri: str) -> Iterable[tuple[str, int, int, bool, bool]]:
    import pyarrow.fs as pafs

    fs, path = _arrow_fs(dir_uri)
    for info in fs.get_file_info(pafs.FileSelector(path, recursive=False, allow_not_found=True)):
        mtime = int(info.mtime.timestamp() * 1000) if info.mtime else 0
        yield (info.base_name, info.size or 0, mtime, info.type == pafs.FileType.Directory, False)


def list_dir(dir_uri: str) -> list[Entry]:
    if is_local(dir_uri):
        return list(_entries_local(urlparse(dir_uri).path if dir_uri.startswith("file:") else dir_uri))
    try:
        return list(_entries_remote(dir_uri))
    except Exception as e:  # noqa: BLE001 - any store error becomes one line
        raise ForensicsError(ExitCode.NOT_A_TABLE, f"cannot list {dir_uri}: {str(e).splitlines()[0][:200]}") from e


def _join(base: str, name: str) -> str:
    return base.rstrip("/") + "/" + name


# --------------------------------------------------------------------------------------
# Classification
# --------------------------------------------------------------------------------------


def list_log(location: str, known: Known | None = None) -> LogListing:
    """List `_delta_log` and classify every entry. Raises NOT_A_TABLE when there is no log.
    `known`: each entry's `lstat` by folder under the table root, from a mirror that has just
    scanned and written this copy (`Mirror.entries`): the same listing without a second stat of
    every file (20,000 of them on a refresh)."""
    table_uri = normalize_location(location)
    log_uri = _join(table_uri, "_delta_log")
    if is_local(table_uri):
        if not os.path.exists(table_uri):
            raise ForensicsError(ExitCode.NOT_A_TABLE, f"no such path: {table_uri}")
        if not os.path.isdir(log_uri):
            raise ForensicsError(ExitCode.NOT_A_TABLE, f"not a Delta table (no _delta_log directory): {table_uri}")
    ls = _lister(table_uri, known)
    entries = ls(log_uri)
    listing = LogListing(table_uri=table_uri, log_uri=log_uri)
    multipart: dict[tuple[int, int], list[tuple[int, LogFile]]] = {}

    for name, size, mtime, is_dir, is_link in sorted(entries, key=_by_name):
        f = LogFile(name=name, uri=_join(log_uri, name), size=size, mtime_ms=mtime)
        if is_link:
            listing.findings.append(
                Finding("stray.link", "symbolic link in _delta_log; not followed", "warning", f"_delta_log/{name}")
            )
            continue
        if is_dir:
            if name in STAGED_DIRS:
                _classify_staged(listing, ls(_join(log_uri, name)), _join(log_uri, name), name)
            elif name == "_sidecars":
                for sname, ssize, smtime, sdir, slink in ls(_join(log_uri, name)):
                    if not sdir and not slink:
                        listing.sidecars[sname] = LogFile(f"_sidecars/{sname}", _join(_join(log_uri, name), sname), ssize, smtime)
            elif name == ".tmp":
                for tname, tsize, tmtime, tdir, tlink in ls(_join(log_uri, name)):
                    if not tdir and not tlink:
                        tf = LogFile(f".tmp/{tname}", _join(_join(log_uri, name), tname), tsize, tmtime)
                        listing.temp_commits.append(tf)
                        listing.findings.append(
                            Finding("stray.tmp", "leftover temporary file (an unfinished commit attempt?)", "warning", f"_delta_log/{tf.name}")
                        )
            else:
                listing.findings.append(Finding("stray.dir", "unknown directory in _delta_log", "info", f"_delta_log/{name}"))
            continue
        v = commit_version(name)
        if v is not None:
            listing.commits[v] = f
            if size == 0:
                listing.findings.append(Finding("commit.empty", "commit file is empty (0 bytes)", "error", f"_delta_log/{name}", v))
            continue
        m = RE_CHECKPOINT_CLASSIC.match(name)
        if m:
            listing.checkpoints.append(Checkpoint(int(m.group(1)), "classic", (f,), True))
            continue
        m = RE_CHECKPOINT_MULTI.match(name)
        if m:
            v, part, parts = int(m.group(1)), int(m.group(2)), int(m.group(3))
            multipart.setdefault((v, parts), []).append((part, f))
            continue
        m = RE_CHECKPOINT_V2.match(name)
        if m:
            listing.checkpoints.append(Checkpoint(int(m.group(1)), "v2", (f,), True, fmt=m.group(3)))
            continue
        m = RE_COMPACTED.match(name)
        if m:
            listing.compacted.append((int(m.group(1)), int(m.group(2)), f))
            continue
        m = RE_CRC.match(name)
        if m:
            listing.crc[int(m.group(1))] = f
            continue
        if name == "_last_checkpoint":
            listing.last_checkpoint = f
            continue
        if RE_HADOOP_CRC.match(name):
            continue  # Hadoop checksum side files: expected on local/HDFS stores, not findings
        if name.startswith("._"):
            listing.findings.append(Finding("stray.appledouble", "macOS AppleDouble file; ignored", "info", f"_delta_log/{name}"))
            continue
        if name.endswith(".tmp") or ".tmp" in name:
            listing.temp_commits.append(f)
            listing.findings.append(
                Finding("stray.tmp", "leftover temporary file (an unfinished commit attempt?)", "warning", f"_delta_log/{name}")
            )
            continue
        listing.findings.append(Finding("stray.unknown", "unrecognised file name in _delta_log; ignored", "info", f"_delta_log/{name}"))

    for (v, parts), got in sorted(multipart.items()):
        got.sort()
        complete = [p for p, _ in got] == list(range(1, parts + 1))
        listing.checkpoints.append(Checkpoint(v, "multipart", tuple(f for _, f in got), complete))
        if not complete:
            listing.findings.append(
                Finding(
                    "checkpoint.incomplete",
                    f"multi-part checkpoint has {len(got)} of {parts} parts; not used",
                    "warning",
                    f"_delta_log/{got[0][1].name}",
                    v,
                )
            )
    listing.checkpoints.sort(key=lambda c: (c.version, c.kind))
    _note_gaps(listing)
    return listing


def _lister(table_uri: str, known: Known | None) -> Callable[[str], list[Entry]]:
    """How `list_log` lists a folder: a scan, or what a mirror knows of its copy."""
    if known is None:
        return list_dir
    return lambda dir_uri: _entries_known(known, table_uri, dir_uri)


def _classify_staged(listing: LogListing, entries: list[Entry], dir_uri: str, dirname: str) -> None:
    for name, size, mtime, is_dir, is_link in sorted(entries):
        if is_dir or is_link:
            continue
        f = LogFile(f"{dirname}/{name}", _join(dir_uri, name), size, mtime)
        m = RE_STAGED.match(name)
        if m:
            listing.staged.append((int(m.group(1)), m.group(2), f))
        elif RE_HADOOP_CRC.match(name):
            continue
        else:
            listing.findings.append(Finding("stray.unknown", f"unrecognised file in {dirname}; ignored", "info", f"_delta_log/{f.name}"))


def _note_gaps(listing: LogListing) -> None:
    """Report versions missing between the first and last retained commit (never skip silently)."""
    vs = listing.versions
    if not vs:
        return
    present = set(vs)
    covered = set()
    for a, b, _ in listing.compacted:
        covered.update(range(a, b + 1))
    missing = [v for v in range(vs[0], vs[-1] + 1) if v not in present and v not in covered]
    if not missing:
        return
    ranges = _ranges(missing)
    listing.findings.append(
        Finding(
            "log.gap",
            f"commit files missing for version(s) {ranges}; state after the gap is only exact from a later checkpoint",
            "error",
            "_delta_log",
            missing[0],
        )
    )


def _ranges(vs: list[int]) -> str:
    out = []
    start = prev = vs[0]
    for v in vs[1:]:
        if v == prev + 1:
            prev = v
            continue
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
        start = prev = v
    out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ", ".join(out)
