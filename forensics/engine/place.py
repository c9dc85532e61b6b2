"""Where one engine's files live: a private directory per key in the user's cache directory.

    <cache>/engine/<key digest>/   0700
        token      the random token a client must send (0600, written by the engine)
        sock       the engine's Unix socket (0600; in a private temp directory if this path is too long)
        pid        the engine's process id
        lock       held (flock) by the client that starts an engine, so parallel callers get one
        engine.log the engine's own stderr (Spark's log is the cache's spark.log, as in-process)
        failed     one line and an exit code when the engine could not start
        key.json   what the engine is keyed by (forensics/engine/key.py)

A directory, token or socket not owned by this user, or readable by others, is not trusted.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

_SOCKET_PATH_MAX = 100  # sun_path holds 108 bytes on Linux, 104 on macOS


class PlaceUnsafe(Exception):
    """An engine directory or file this user does not own, or that others can read."""


@dataclass(frozen=True)
class EnginePlace:
    dir: Path

    @property
    def digest(self) -> str:
        return self.dir.name

    @property
    def token(self) -> Path:
        return self.dir / "token"

    @property
    def pid(self) -> Path:
        return self.dir / "pid"

    @property
    def lock(self) -> Path:
        return self.dir / "lock"

    @property
    def log(self) -> Path:
        return self.dir / "engine.log"

    @property
    def key(self) -> Path:
        return self.dir / "key.json"

    @property
    def failed(self) -> Path:
        return self.dir / "failed"

    @property
    def socket(self) -> Path:
        path = self.dir / "sock"
        if len(os.fsencode(str(path))) <= _SOCKET_PATH_MAX:
            return path
        name = hashlib.sha256(str(self.dir).encode()).hexdigest()[:20] + ".sock"
        # $TMPDIR first; a TMPDIR itself too deep for a socket path falls back to /tmp
        for base in (tempfile.gettempdir(), "/tmp"):
            short = Path(base) / f"delta-forensics-{os.getuid()}" / name
            if len(os.fsencode(str(short))) <= _SOCKET_PATH_MAX:
                return short
        return short


def registry() -> Path:
    """One file per running engine of this user, whatever its cache directory (`<pid>` holding its
    directory), so a new engine can find the others: a user runs at most a few (client.MAX_ENGINES)."""
    return Path(tempfile.gettempdir()) / f"delta-forensics-{os.getuid()}" / "engines"


def engines_root(cache_root: Path) -> Path:
    return cache_root / "engine"


def place_for(cache_root: Path, digest: str) -> EnginePlace:
    return EnginePlace(engines_root(cache_root) / digest)


def all_places(cache_root: Path) -> list[EnginePlace]:
    root = engines_root(cache_root)
    return [EnginePlace(p) for p in sorted(root.iterdir()) if p.is_dir()] if root.is_dir() else []


def private_dir(path: Path) -> Path:
    """`path` as a directory only this user can enter (made if missing), or PlaceUnsafe."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise PlaceUnsafe(f"{path} is not a directory owned by this user")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def prepare(place: EnginePlace) -> None:
    """The engine's directory (and the short socket directory, when used), private."""
    private_dir(place.dir.parent)
    private_dir(place.dir)
    if place.socket.parent != place.dir:
        private_dir(place.socket.parent)


def write_private(path: Path, text: str) -> None:
    """Write a file only this user can read, atomically (a reader sees the old file or the new)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def read_private(path: Path) -> str | None:
    """A file's text when it is a regular file of this user that others cannot read; else None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return None


def remove(*paths: Path) -> None:
    for p in paths:
        try:
            p.unlink()
        except OSError:
            pass
