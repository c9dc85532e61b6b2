"""One request at a time, as if it were its own process: the engine's sys.stdout and sys.stderr
write into the request's capture, and everything a run may change in the process (environment,
working directory, umask, time zone, stdin, remembered secrets, warning and logging state, the
Spark settings it set) is put back when it ends, so no request sees another's state.
"""

from __future__ import annotations

import io
import logging
import os
import sys
import threading
import time
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from forensics.engine.protocol import OUTPUT_FRAME_BYTES, Output, Request, unpack

_current: "Capture | None" = None
_lock = threading.Lock()


class Capture:
    """The bytes a request wrote to stdout (1) and stderr (2), in order, encoded as the client's
    streams would have encoded them (an unencodable character fails here as it would there)."""

    def __init__(self, request: Request, sink: Callable[[Output], None] | None = None):
        self.tty = {1: request.stdout_tty, 2: False}  # stderr: no spinner (it would only be replayed)
        self.encoding = {1: request.stdout_encoding, 2: request.stderr_encoding}
        self.errors = {1: request.stdout_errors, 2: request.stderr_errors}
        self.output = Output()
        self.sink = sink  # takes each OUTPUT_FRAME_BYTES written, in order, while the command runs
        self.held = 0

    def write_bytes(self, fd: int, data: bytes) -> None:
        if not data:
            return
        chunks = self.output.chunks
        if chunks and chunks[-1][0] == fd:
            chunks[-1][1].extend(data)  # type: ignore[union-attr] - a bytearray: grows in place, not copied per write
        else:
            chunks.append((fd, bytearray(data)))
        self.held += len(data)
        if self.sink is not None and self.held >= OUTPUT_FRAME_BYTES:
            # On its way to the client now: a 170 MB answer is never held whole in the engine.
            out, self.output, self.held = self.output, Output(), 0
            self.sink(out)

    def write(self, fd: int, text: str) -> None:
        self.write_bytes(fd, text.encode(self.encoding[fd], self.errors[fd]))


class _Binary(io.RawIOBase):
    def __init__(self, stream: "RoutedStream"):
        self._stream = stream

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        data = bytes(data)
        target = _current
        if target is None:
            self._stream.fallback.buffer.write(data)
        else:
            target.write_bytes(self._stream.fd, data)
        return len(data)


class RoutedStream(io.TextIOBase):
    """What sys.stdout / sys.stderr are in the engine: the running request's capture, else the log."""

    def __init__(self, fd: int, fallback: Any):
        self.fd = fd
        self.fallback = fallback
        self._buffer = _Binary(self)

    @property
    def buffer(self) -> Any:  # type: ignore[override]
        return self._buffer

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return _current.encoding[self.fd] if _current else (self.fallback.encoding or "utf-8")

    @property
    def errors(self) -> str:  # type: ignore[override]
        return _current.errors[self.fd] if _current else "backslashreplace"

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        target = _current
        if target is None:
            self.fallback.write(s)
        else:
            target.write(self.fd, s)
        return len(s)

    def flush(self) -> None:
        if _current is None:
            self.fallback.flush()

    def isatty(self) -> bool:
        return bool(_current.tty[self.fd]) if _current else False


def install_streams() -> None:
    """Bind the engine's sys.stdout/sys.stderr once; handlers that keep a reference stay right."""
    sys.stdout = RoutedStream(1, sys.__stdout__)
    sys.stderr = RoutedStream(2, sys.__stderr__)


def base_environment(environ: dict[str, str]) -> dict[str, str]:
    """The engine's own environment without what each request brings (terminal, zone, per-run settings)."""
    from forensics.engine.routing import per_request

    return {k: v for k, v in environ.items() if not per_request(k)}


@contextmanager
def isolated(request: Request, base_env: dict[str, str], sink: Callable[[Output], None] | None = None) -> Iterator[Capture]:
    """Run the body as the client's process would: its environment, directory, umask, zone and
    stdin; its output captured (and handed to `sink` a frame's worth at a time); everything
    restored afterwards."""
    global _current
    from forensics.safe import secrets_scope

    capture = Capture(request, sink)
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    loggers = [logging.getLogger(), logging.getLogger("forensics")]
    saved_logging = [(lg, list(lg.handlers), lg.level, lg.propagate) for lg in loggers]
    os.environ.clear()
    os.environ.update(base_env)
    os.environ.update(request.env)
    time.tzset()
    saved_umask = os.umask(request.umask & 0o777)
    stdin_bytes = unpack(request.stdin) if request.stdin is not None else b""
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin_bytes), encoding="utf-8", errors="surrogateescape")
    try:
        os.chdir(request.cwd)
        with _lock, warnings.catch_warnings(), secrets_scope():
            _current = capture
            try:
                yield capture
            finally:
                _current = None
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams  # a run may have replaced them (BrokenPipeError)
        os.umask(saved_umask)
        for lg, handlers, level, propagate in saved_logging:
            lg.handlers[:] = handlers
            lg.setLevel(level)
            lg.propagate = propagate
        os.environ.clear()
        os.environ.update(saved_env)
        time.tzset()
        try:
            os.chdir(saved_cwd)
        except OSError:
            os.chdir("/")
