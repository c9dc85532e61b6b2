"""The frames between a client and the engine: a 4-byte length, then one JSON object.

One request per connection. The client sends a `Request`; the engine answers `working` frames
while it runs (so a client can tell a busy engine from a hung one) and then one final frame:
`done` (exit code and the command's output), `declined` (run it in-process instead) or
`refused` (bad token, wrong key). Output travels in `output` frames of at most OUTPUT_FRAME_BYTES
sent while the command runs (the engine never holds a whole answer): a JSON header naming the
stream and the byte count, then the bytes as they are, held by the client (in a temporary file
beyond two frames) until the final frame. One frame holding the whole 170 MB of `snapshot --json`
on a million files cost seconds and a gigabyte of the client's memory; the same bytes
base64-encoded inside JSON frames still cost ~2 s of the engine's GIL (encoding, JSON's scan of
the text) beside the command, and as much again in the client.
"""

from __future__ import annotations

import base64
import json
import socket
import struct
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator

MAX_FRAME = 1 << 30  # a --json document of a very long log fits; a bogus length does not allocate
HEARTBEAT_S = 2.0  # the engine says `working` this often while a request runs
SILENCE_S = 30.0  # a client that hears nothing for this long treats the engine as hung


OUTPUT_FRAME_BYTES = 4 << 20


class ProtocolError(Exception):
    """The other side closed the connection or sent something that is not a frame."""


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    data = json.dumps(message, separators=(",", ":")).encode("utf-8")
    sock.sendall(struct.pack(">I", len(data)) + data)


def receive(sock: socket.socket, limit: int = MAX_FRAME) -> dict[str, Any]:
    (length,) = struct.unpack(">I", _exactly(sock, 4))
    if length > limit:
        raise ProtocolError(f"frame of {length} bytes is over the limit of {limit}")
    try:
        message = json.loads(_exactly(sock, length))
    except ValueError as e:
        raise ProtocolError(f"not a JSON frame: {e}") from None
    if not isinstance(message, dict):
        raise ProtocolError("a frame must hold a JSON object")
    return message


def send_output(sock: socket.socket, fd: int, data: bytes | bytearray | memoryview) -> None:
    """One `output` frame: its header, then `data` (at most OUTPUT_FRAME_BYTES) as it is."""
    send(sock, {"status": "output", "fd": fd, "bytes": len(data)})
    sock.sendall(data)


def output_header(message: dict[str, Any]) -> tuple[int, int]:
    """(stream, byte count) of an `output` frame's header, checked before any byte is read."""
    fd, n = message.get("fd"), message.get("bytes")
    if type(fd) is not int or fd not in (1, 2) or type(n) is not int or not 0 <= n <= OUTPUT_FRAME_BYTES:
        raise ProtocolError(f"not an output frame header: fd={fd!r} bytes={n!r}")
    return fd, n


def receive_bytes(sock: socket.socket, n: int) -> Iterator[bytes]:
    """The next `n` bytes of the stream, in the pieces they arrive in."""
    while n > 0:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ProtocolError("connection closed")
        n -= len(chunk)
        yield chunk


def _exactly(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise ProtocolError("connection closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def pack(data: bytes | bytearray | memoryview) -> str:
    return base64.b64encode(data).decode("ascii")


def unpack(text: str | None) -> bytes:
    return base64.b64decode(text or "")


@dataclass
class Request:
    """What the engine needs to run one command as the client would have run it in-process."""

    op: str  # "run", "status", "stop" or "warm"
    token: str
    key: str  # the digest of the client's EngineKey: a request for other static settings is refused
    argv: list[str] = field(default_factory=list)
    cwd: str = "/"
    env: dict[str, str] = field(default_factory=dict)  # the client's terminal and per-run settings (routing.request_env)
    stdout_tty: bool = False
    stdout_encoding: str = "utf-8"
    stdout_errors: str = "strict"
    stderr_encoding: str = "utf-8"
    stderr_errors: str = "backslashreplace"
    stdin: str | None = None  # base64: the text given as `--error-file -`
    umask: int = 0o022
    runtime_conf: dict[str, str] = field(default_factory=dict)  # spark.sql.* settings the running session must take

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Request":
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        return cls(**known)


@dataclass
class Output:
    """The command's stdout and stderr, in the order it wrote them: [(1 or 2, bytes), ...]."""

    chunks: list[tuple[int, bytes | bytearray]] = field(default_factory=list)

    def send(self, sock: socket.socket) -> None:
        """Send the output as `output` frames of at most OUTPUT_FRAME_BYTES each, in order."""
        for fd, data in self.chunks:
            view = memoryview(data)
            for start in range(0, len(view), OUTPUT_FRAME_BYTES):
                send_output(sock, fd, view[start:start + OUTPUT_FRAME_BYTES])
