"""The client side of the warm engine: whether this command goes to it, reaching it (starting
one when the command reads a table and none runs), and printing what it answers.

Imported by the CLI's dispatch on every run, so it imports nothing heavy (no pyspark, polars,
pyarrow; subprocess only to start an engine). Any failure to reach the engine, a decline, or an
engine that dies mid-request means the command runs in-process: the answer is the same, only slower.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import socket
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from forensics.engine import place as places
from forensics.engine.key import EngineKey, current_key
from forensics.engine.protocol import (OUTPUT_FRAME_BYTES, SILENCE_S, Output, ProtocolError, Request, output_header, pack,
                                       receive, receive_bytes, send, unpack)
from forensics.engine.routing import Route, request_env, route
from forensics.runtime.allocator import return_freed_memory

DEFAULT_IDLE_S = 20 * 60
MAX_ENGINES = 3  # per user (DELTA_FORENSICS_ENGINE_MAX): starting one more stops the longest idle
START_TIMEOUT_S = 120.0  # Python's imports in a new engine on a busy 2-core machine, with margin
STDIN_LIMIT = 64 << 20


@dataclass
class Reply:
    """How asking went: `done` (code, output), `declined`, `lost` (the engine died after taking
    the request), or no engine answering: `absent` (none, or a stale socket), `refused` (a foreign
    engine: wrong token, another key, another user), `closing` (shutting down)."""

    kind: str
    code: int = 0
    output: "HeldOutput | Output | None" = None
    info: dict[str, Any] | None = None
    why: str = ""


def idle_seconds(text: str | None = None) -> float:
    """The idle timeout: `1200` (seconds), `90s`, `20m`, `1h` (DELTA_FORENSICS_ENGINE_IDLE; default 20 minutes)."""
    from forensics.times import parse_duration

    text = (text if text is not None else os.environ.get("DELTA_FORENSICS_ENGINE_IDLE", "")).strip().lower()
    if not text:
        return float(DEFAULT_IDLE_S)
    ms = int(text) * 1000 if text.isdigit() else parse_duration(text)
    if ms is None or "ago" in text:
        raise ValueError(f"not a duration: {text!r} (e.g. 90s, 20m, 1h)")
    if ms <= 0:
        raise ValueError("the idle timeout must be positive")
    return ms / 1000


def cache_dir() -> Path:
    from forensics import cache_root

    return cache_root()


# ---- the CLI's dispatch hook ---------------------------------------------------------------


def engine_answer(args: argparse.Namespace, argv: Sequence[str]) -> int | None:
    """Run the parsed command in the warm engine and print its output; None: run it in-process."""
    argv = [a for a in argv if a != "--no-engine"]
    r = route(args, argv)
    if not r.engine:
        return None
    try:
        idle = idle_seconds()
        root = cache_dir()
        key = current_key(r.static_conf, str(root))
        place = places.place_for(root, key.digest())
        request = _request(r, argv)
    except (ValueError, OSError, AttributeError):  # AttributeError: a stdin without bytes (a test's StringIO)
        return None
    reply = ask(place, request)
    if reply.kind == "done":
        print_output(reply.output or Output())
        return reply.code
    if reply.kind not in ("declined", "lost") and r.starts_engine:
        # No engine answers: this command runs here (a short-lived JVM, C1 only, the fastest cold
        # read) and starts the engine as it ends, for the commands after it (start_deferred).
        global _deferred
        _deferred = (place, key, idle)
    if request.stdin is not None:  # the text read for the engine, for the in-process run to read again
        import io

        sys.stdin = io.TextIOWrapper(io.BytesIO(unpack(request.stdin)), encoding=getattr(sys.stdin, "encoding", None) or "utf-8",
                                     errors=getattr(sys.stdin, "errors", None) or "strict")
    return None


_deferred: tuple[places.EnginePlace, EngineKey, float] | None = None


def start_deferred() -> None:
    """Start the engine a command found missing, now that the command has run in-process: in the
    background, not waited for (it starts Spark and warms its JIT by itself, forensics/engine/warmup.py).
    Under the place's lock, so parallel callers start one; never raises."""
    global _deferred
    deferred, _deferred = _deferred, None
    if deferred is None:
        return
    place, key, idle = deferred
    try:
        places.prepare(place)
        with _locked(place.lock, time.monotonic() + 2.0):  # held longer: another caller is starting it
            reply = status(place)
            if (reply.kind == "done" and reply.info) or (reply.kind == "absent" and _starting(place) is not None):
                return
            _replace(place, key, idle)
    except (places.PlaceUnsafe, StartFailed, OSError):
        pass


def _replace(place: places.EnginePlace, key: EngineKey, idle: float) -> Any:
    """Under the place's lock: retire what is there, make room, spawn a new engine. Its pid is
    written now, not at the end of its boot, so the next caller sees it starting and neither
    retires it as hung nor starts a second one (_starting)."""
    retire(place)
    _retire_superseded(place, key)
    _make_room()
    proc = _spawn(place, key, idle)
    places.write_private(place.pid, f"{proc.pid}\n")
    return proc


def _starting(place: places.EnginePlace) -> int | None:
    """The pid of an engine of ours that may still be starting at `place` (its pid file written
    less than START_TIMEOUT_S ago; asked only when no socket answers there), else None."""
    pid = _pid(place)
    if pid is None or place.token.exists() or not _is_our_engine(pid, place):
        return None  # a token file there: its boot is over (the engine writes it last)
    try:
        age = time.time() - place.pid.stat().st_mtime
    except OSError:
        return None
    return pid if age < START_TIMEOUT_S else None


def _request(r: Route, argv: list[str]) -> Request:
    tty = _isatty(sys.stdout)
    stdin = None
    if r.reads_stdin:
        stdin = pack(sys.stdin.buffer.read(STDIN_LIMIT))
    return Request(
        op="run", token="", key="", argv=argv, cwd=os.getcwd(), env=request_env(tty), stdout_tty=tty,
        stdout_encoding=getattr(sys.stdout, "encoding", None) or "utf-8",
        stdout_errors=getattr(sys.stdout, "errors", None) or "strict",
        stderr_encoding=getattr(sys.stderr, "encoding", None) or "utf-8",
        stderr_errors=getattr(sys.stderr, "errors", None) or "backslashreplace",
        stdin=stdin, umask=_umask(), runtime_conf=r.runtime_conf,
    )


def control_request(op: str) -> Request:
    """A request that runs no command (`warm`): the client's directory and per-run settings still go."""
    return Request(op=op, token="", key="", cwd=os.getcwd(), env=request_env(False), umask=_umask(),
                   stderr_encoding=getattr(sys.stderr, "encoding", None) or "utf-8")


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class HeldOutput:
    """An answer's output, held until the answer is whole (an engine lost mid-answer is re-run
    in-process with nothing printed): in memory up to two frames, beyond that in an unnamed
    private temporary file, so a 170 MB answer does not sit in the client's memory."""

    def __init__(self) -> None:
        import tempfile

        self._file = tempfile.SpooledTemporaryFile(max_size=2 * OUTPUT_FRAME_BYTES)

    def add(self, output: Output) -> None:
        for fd, data in output.chunks:
            self.add_stream(fd, len(data), [data])

    def add_stream(self, fd: int, n: int, pieces: Iterable[bytes | bytearray]) -> None:
        """`n` bytes of stream `fd`, written as they arrive (a frame is never joined in memory)."""
        self._file.write(struct.pack(">BQ", fd, n))
        for piece in pieces:
            self._file.write(piece)

    @property
    def chunks(self) -> Iterator[tuple[int, bytes]]:
        """(1 or 2, bytes) in the order written, read back a frame at a time."""
        f = self._file
        f.seek(0)
        while head := f.read(9):
            fd, n = struct.unpack(">BQ", head)
            while n > 0:
                data = f.read(min(n, OUTPUT_FRAME_BYTES))
                if not data:
                    return  # our own file cut short: never loop on it
                n -= len(data)
                yield fd, data


def print_output(output: "HeldOutput | Output") -> None:
    """Write the engine's captured output to this process's stdout and stderr, in its order."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    for fd, data in output.chunks:
        stream = sys.stdout if fd == 1 else sys.stderr
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:  # a text-only stream (a test's StringIO)
            stream.write(data.decode(getattr(stream, "encoding", None) or "utf-8", "replace"))
            stream.flush()


# ---- asking ------------------------------------------------------------------------------


def ask(place: places.EnginePlace, request: Request, *, on_accept: Callable[[int], None] | None = None) -> Reply:
    """Send one request to the engine at `place` (its directory is named by its key's digest) and
    wait for its answer."""
    token = places.read_private(place.token)
    if not token:
        return Reply("absent", why="no token file")
    request.token, request.key = token, place.digest
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(5)
        try:
            sock.connect(str(place.socket))
        except OSError as e:
            return Reply("absent", why=f"connect: {errno.errorcode.get(e.errno or 0, e)}")
        try:
            send(sock, request.to_dict())
            sock.settimeout(10)
            first = receive(sock)
        except (OSError, ProtocolError) as e:
            return Reply("refused", why=f"no answer: {e}")
        status = first.get("status")
        if status == "refused":
            return Reply("refused", why=str(first.get("why", "")))
        if status == "closing":
            return Reply("closing")
        if status == "done":  # status / stop
            return Reply("done", info=first.get("info"))
        if status != "accepted":
            return Reply("refused", why=f"unexpected answer {status!r}")
        if on_accept is not None:
            on_accept(int(first.get("pid", 0)))
        sock.settimeout(SILENCE_S)
        output = HeldOutput()  # held until the answer is whole: an engine lost mid-answer is re-run in-process
        while True:
            try:
                message = receive(sock)
            except (OSError, ProtocolError) as e:
                return Reply("lost", why=str(e))
            status = message.get("status")
            if status == "working":
                continue
            if status == "output":
                try:
                    fd, n = output_header(message)
                    output.add_stream(fd, n, receive_bytes(sock, n))
                except (OSError, ProtocolError) as e:
                    return Reply("lost", why=str(e))
                continue
            if status == "done":
                return Reply("done", code=int(message.get("code", 0)), output=output, why=str(message.get("why") or ""))
            return Reply("declined", why=str(message.get("why", "")))
    finally:
        sock.close()


# ---- starting, stopping --------------------------------------------------------------------


class StartFailed(Exception):
    """The engine did not come up; `code` is the exit code its failure maps to."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def status(place: places.EnginePlace) -> Reply:
    return ask(place, Request(op="status", token="", key=""))


def start(place: places.EnginePlace, key: EngineKey, idle: float, *, timeout: float = START_TIMEOUT_S) -> dict[str, Any]:
    """An engine for `key` at `place`: the running one, or a new one started under the place's lock
    (so parallel callers start one). A stale, foreign or hung engine there is retired first."""
    places.prepare(place)
    deadline = time.monotonic() + timeout
    with _locked(place.lock, deadline):
        reply = status(place)
        if reply.kind == "done" and reply.info:
            return reply.info
        booting = _starting(place) if reply.kind == "absent" else None
        while booting is not None and reply.kind == "absent" and time.monotonic() < deadline and _is_our_engine(booting, place):
            time.sleep(0.05)
            reply = status(place)  # one a command started as it ended (start_deferred): wait for it
            if reply.kind == "done" and reply.info:
                return reply.info
        proc = _replace(place, key, idle)
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise _failure(place, proc.returncode)
            reply = status(place)
            if reply.kind == "done" and reply.info:
                return reply.info
            time.sleep(0.05)
        proc.kill()
        raise StartFailed(f"the engine did not answer within {timeout:.0f} s; its log: {place.log}", 20)


def stop(place: places.EnginePlace) -> dict[str, Any] | None:
    """Ask the engine at `place` to stop; retire it if it does not answer. Returns what it said of
    itself ({"pid": ...} when it had to be ended), None when none ran."""
    reply = ask(place, Request(op="stop", token="", key=""))
    pid = _pid(place)
    if reply.kind == "done":
        _wait_gone(pid, 20)
        retire(place)
        return reply.info
    if pid is not None and _is_our_engine(pid, place):
        retire(place)
        return {"pid": pid}
    retire(place)
    return None


class _locked:
    """flock on the place's lock file, waiting up to the deadline."""

    def __init__(self, path: Path, deadline: float):
        self.path, self.deadline, self.fd = path, deadline, -1

    def __enter__(self) -> "_locked":
        import fcntl

        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except OSError:
                if time.monotonic() > self.deadline:
                    os.close(self.fd)
                    raise StartFailed(f"another process is starting the engine ({self.path} is locked)", 20) from None
                time.sleep(0.05)

    def __exit__(self, *exc: Any) -> None:
        os.close(self.fd)  # closing releases the flock


def _spawn(place: places.EnginePlace, key: EngineKey, idle: float) -> Any:
    import subprocess

    from forensics.runtime.children import child_environment

    env = child_environment(_engine_environment())
    env["DELTA_FORENSICS_CACHE_DIR"] = key.cache_root
    return_freed_memory(env)  # polars' allocator in a long-lived process (forensics/runtime/allocator.py)
    places.write_private(place.key, json.dumps(key.to_dict(), sort_keys=True))
    _trim_log(place.log)
    log = os.open(place.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    places.remove(place.failed)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "forensics.engine.server", "--dir", str(place.dir), "--key", key.digest(),
             "--idle", str(idle), "--describe", json.dumps(key.describe())],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=str(place.dir), env=env,
            start_new_session=True, close_fds=True,
        )
    finally:
        os.close(log)


def _engine_environment() -> dict[str, str]:
    """The engine's environment before `child_environment` drops credentials: this process's
    without what each request brings (terminal, zone, per-run settings)."""
    from forensics.engine.routing import per_request

    return {k: v for k, v in os.environ.items() if not per_request(k)}


def _trim_log(path: Path, limit: int = 1 << 20) -> None:
    try:
        if path.stat().st_size > limit:
            os.replace(path, path.with_suffix(".log.1"))
    except OSError:
        pass


def _failure(place: places.EnginePlace, returncode: int) -> StartFailed:
    text = places.read_private(place.failed) or ""
    code, _, line = text.partition("\t")
    if code.isdigit() and line:
        return StartFailed(line, int(code))
    return StartFailed(f"the engine exited ({returncode}) before it was ready; its log: {place.log}", 20)


def _pid(place: places.EnginePlace) -> int | None:
    text = places.read_private(place.pid)
    return int(text) if text and text.isdigit() else None


def _is_our_engine(pid: int, place: places.EnginePlace) -> bool:
    """Whether `pid` is an engine of this user serving `place` (never signal anything else)."""
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return False
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            args = fh.read().split(b"\0")
    except OSError:
        return False
    return b"forensics.engine.server" in args and os.fsencode(str(place.dir)) in args


def retire(place: places.EnginePlace) -> None:
    """End a stale, hung or foreign engine of ours at `place` (by its pid file, checked) and clear
    its files, so a new one can take the place."""
    import signal

    pid = _pid(place)
    if pid is not None and _is_our_engine(pid, place):
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
        if not _wait_gone(pid, 5):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            _wait_gone(pid, 5)
    places.remove(place.socket, place.token, place.pid)


def _retire_superseded(place: places.EnginePlace, key: EngineKey) -> None:
    """Stop engines of an older build of this same key (an edited checkout, an upgrade): they
    would otherwise sit on their heap until their idle timeout."""
    for other in places.all_places(Path(key.cache_root) if key.cache_root else place.dir.parent.parent):
        if other.dir == place.dir:
            continue
        try:
            theirs = json.loads(places.read_private(other.key) or "{}")
        except ValueError:
            continue
        if isinstance(theirs, dict) and key.supersedes(theirs):
            stop(other)


def _make_room() -> None:
    """Keep this user's running engines under MAX_ENGINES (each may hold a JVM with gigabytes of
    heap): stop the longest idle of the others. A stale registry entry is removed."""
    try:
        limit = int(os.environ.get("DELTA_FORENSICS_ENGINE_MAX", MAX_ENGINES))
        entries = list(places.registry().iterdir())
    except (OSError, ValueError):
        return
    idle: list[tuple[float, places.EnginePlace]] = []
    running = 0
    for entry in entries:
        directory = places.read_private(entry)
        other = places.EnginePlace(Path(directory)) if directory else None
        if not entry.name.isdigit() or other is None or not _is_our_engine(int(entry.name), other):
            places.remove(entry)
            continue
        running += 1
        reply = status(other)
        info = reply.info or {}
        if reply.kind == "done" and not info.get("busy"):
            idle.append((float(info.get("idleFor") or 0.0), other))
        elif reply.kind != "done":
            idle.append((float("inf"), other))  # not answering: the first to go
    for _, other in sorted(idle, key=lambda t: t[0], reverse=True):
        if running < max(limit, 1):
            break
        stop(other)
        running -= 1


def _wait_gone(pid: int | None, seconds: float) -> bool:
    if pid is None:
        return True
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return True
        if _zombie(pid):
            return True
        time.sleep(0.05)
    return False


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False
