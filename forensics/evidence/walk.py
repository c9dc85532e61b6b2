"""Data files under the table root that the retained log never mentions (orphans).

An aborted transaction writes its data files before it tries to commit; when the commit
fails they stay behind, referenced by nothing. We list the table root (never following
symbolic links, never leaving the root), skip `_delta_log` and hidden/underscore entries
(except partition directories and `_change_data`, whose files cdc actions reference), and
compare decoded paths with every add/remove/cdc path and deletion-vector file of the log.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from urllib.parse import unquote

import polars as pl

from forensics.log import listing as L
from forensics.log.delta_log import DeltaLog
from forensics.model import Finding

MAX_FILES = 200_000  # a walk bound: a huge table root is reported, not hung on
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_INDEX = {c: i for i, c in enumerate(_Z85)}
RE_DV_FILE = re.compile(r"^deletion_vector_[0-9a-fA-F-]{36}\.bin$")


@dataclass(frozen=True)
class DataFile:
    path: str  # relative to the table root, as on disk (not URL-encoded)
    size: int
    mtime_ms: int


@dataclass
class Walk:
    files: list[DataFile]
    referenced: set[str]
    findings: list[Finding] = field(default_factory=list)
    truncated: bool = False
    time_source: str = "the file system's modification times"  # where the files' times come from


def z85_decode(s: str) -> bytes | None:
    """Z85 (ZeroMQ) decoding, used by Delta for deletion-vector UUIDs (storageType 'u')."""
    if len(s) % 5:
        return None
    out = bytearray()
    for i in range(0, len(s), 5):
        n = 0
        for ch in s[i : i + 5]:
            if ch not in _Z85_INDEX:
                return None
            n = n * 85 + _Z85_INDEX[ch]
        if n >= 1 << 32:
            return None
        out += n.to_bytes(4, "big")
    return bytes(out)


def dv_relative_path(storage_type: str | None, path_or_inline: str | None, table_uri: str) -> str | None:
    """The table-relative path of a deletion-vector file (Delta protocol: 'u' = prefix + z85(uuid))."""
    if not storage_type or not path_or_inline:
        return None
    if storage_type == "u":
        if len(path_or_inline) < 20:
            return None
        prefix, enc = path_or_inline[:-20], path_or_inline[-20:]
        raw = z85_decode(enc)
        if raw is None or len(raw) != 16:
            return None
        h = raw.hex()
        uuid = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        name = f"deletion_vector_{uuid}.bin"
        return f"{prefix}/{name}" if prefix else name
    if storage_type == "p":
        return canonical(path_or_inline, table_uri)
    return None  # 'i' = inline, no file


def canonical(path: str, table_uri: str) -> str | None:
    """Decoded table-relative path of a log path; None when it points outside the table root."""
    q = unquote(path) if "%" in path else path
    root = table_uri.rstrip("/") + "/"
    for r in (root, "file:" + root, "file://" + root):
        if q.startswith(r):
            q = q[len(r) :]
            break
    else:
        if "://" in q or q.startswith("file:") or q.startswith("/"):
            return None  # an absolute path elsewhere (shallow clone, external file)
    norm = os.path.normpath(q)
    if norm.startswith("..") or os.path.isabs(norm):
        return None
    return norm.replace(os.sep, "/")


def referenced_paths(log: DeltaLog, extra: pl.DataFrame | None = None) -> set[str]:
    """Every data, cdc and deletion-vector file named by the retained log (and its base checkpoint)."""
    out: set[str] = set()
    frames = [log.actions] + ([extra] if extra is not None and extra.height else [])
    for fr in frames:
        cols = [c for c in ("path", "dv_storage_type", "dv_path") if c in fr.columns]
        for row in fr.select(cols).unique().iter_rows(named=True):
            if row.get("path"):
                c = canonical(row["path"], log.location)
                if c:
                    out.add(c)
            dv = dv_relative_path(row.get("dv_storage_type"), row.get("dv_path"), log.location)
            if dv:
                out.add(dv)
    return out


def _skip_file(name: str) -> bool:
    """Hadoop .crc side files, _SUCCESS, _started_/_committed_ markers: not data (deletion vectors are)."""
    return name.startswith((".", "_")) and not RE_DV_FILE.match(name)


def _skip_dir(name: str) -> bool:
    if name == "_delta_log":
        return True
    if name == "_change_data":
        return False
    if "=" in name:
        return False  # a partition directory, even for a column named `_x`
    return name.startswith(("_", "."))


def _walk_store(log: DeltaLog, extra_actions: pl.DataFrame | None) -> Walk:
    """The data files of a remote table, listed in the store (sizes and last-modified times; nothing
    downloaded). Their times are the store's: when each object was written there."""
    files = [DataFile(f.path, f.size, f.last_modified_ms) for f in log.store.data_files()
             if not any(_skip_dir(part) for part in f.path.split("/")[:-1]) and not _skip_file(f.path.rsplit("/", 1)[-1])]
    findings: list[Finding] = []
    truncated = len(files) > MAX_FILES
    if truncated:
        files = files[:MAX_FILES]
        findings.append(Finding("evidence.truncated", f"stopped after {MAX_FILES} files", "warning", "."))
    return Walk(files=files, referenced=referenced_paths(log, extra_actions), findings=findings, truncated=truncated,
                time_source="the object store's last-modified times")


def walk_table(log: DeltaLog, extra_actions: pl.DataFrame | None = None) -> Walk:
    """List the data files under the table root (local or object store) without following links."""
    if log.store is not None:
        return _walk_store(log, extra_actions)
    root = log.location
    files: list[DataFile] = []
    findings: list[Finding] = []
    truncated = False
    stack = [""]
    while stack:
        rel = stack.pop()
        uri = root.rstrip("/") + ("/" + rel if rel else "")
        try:
            entries = L.list_dir(uri)
        except Exception as e:  # noqa: BLE001 - an unreadable subdirectory is reported, not fatal
            findings.append(Finding("evidence.unreadable_dir", f"cannot list: {str(e)[:200]}", "warning", rel or "."))
            continue
        for name, size, mtime, is_dir, is_link in sorted(entries):
            p = f"{rel}/{name}" if rel else name
            if name in (".", "..") or "/" in name:
                continue
            if is_link:
                findings.append(Finding("evidence.symlink", "symbolic link under the table root; not followed", "info", p))
                continue
            if is_dir:
                if not _skip_dir(name):
                    stack.append(p)
                continue
            if _skip_file(name):
                continue
            files.append(DataFile(p, size, mtime))
            if len(files) >= MAX_FILES:
                truncated = True
                stack.clear()
                findings.append(Finding("evidence.truncated", f"stopped after {MAX_FILES} files", "warning", "."))
                break
    return Walk(files=files, referenced=referenced_paths(log, extra_actions), findings=findings, truncated=truncated)
