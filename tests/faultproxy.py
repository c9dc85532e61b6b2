"""A fault-injecting HTTP proxy for the store tests: pure stdlib, threads, 127.0.0.1, a free port.

It sits in front of a real server (moto's S3) as the client's endpoint and forwards every request
unchanged (Host and signature headers included), unless a scripted fault matches the request:

- `throttle`: answer 503 SlowDown (S3's throttling reply) without asking the server; `error`:
  another status and error code (500 InternalError, 429 ...) the same way;
- `reset`: send the headers and the first K body bytes, then reset the connection (RST);
- `cut`: send the headers (the full Content-Length) and K body bytes, then close cleanly: a
  short read, the body ends before its length;
- `truncate`: send only K body bytes with a Content-Length of K: a short body the client cannot
  tell from a whole one (a reply whose length lied);
- `stall`: wait T seconds (before the reply, or after K body bytes), then carry on.

Faults are matched per request, first match wins, each for its next `times` requests. Every
request is counted by kind (GET, LIST, HEAD, or the method for anything else), so a test can
assert what reached the store. Waits are bounded and end at `stop()`: no test hangs on it.
"""

from __future__ import annotations

import http.client
import re
import socket
import struct
import threading
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}
_ERROR_XML = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{}</Code><Message>{}</Message><RequestId>faultproxy</RequestId></Error>'
MAX_STALL = 60.0  # no fault waits longer, whatever a test asks


@dataclass
class Fault:
    """One scripted fault: which requests (kind, a regex searched in the unquoted target), how
    many of them (`times`; None: all), and what happens to them."""

    action: str  # "throttle" | "error" | "reset" | "cut" | "truncate" | "stall"
    kind: str = "GET"  # GET, LIST, HEAD, a method, or "*"
    match: str = ""
    times: int | None = 1
    after_bytes: int | None = None  # reset/cut/stall: body bytes sent first (None: before the reply)
    seconds: float = 0.0  # stall
    status: int = 503  # throttle / error
    code: str = "SlowDown"
    hits: int = 0
    reached: threading.Event = field(default_factory=threading.Event)  # set when the fault first fires

    def applies(self, kind: str, target: str) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        return self.kind in ("*", kind) and re.search(self.match, target) is not None


def request_kind(method: str, target: str) -> str:
    """GET of a listing (S3 ListObjectsV2 / a bucket) is LIST; HEAD and GET as they are."""
    if method != "GET":
        return method
    parsed = urllib.parse.urlsplit(target)
    query = urllib.parse.parse_qs(parsed.query)
    if "list-type" in query or "delimiter" in query or parsed.path.strip("/").count("/") == 0:
        return "LIST"
    return "GET"


class FaultProxy:
    """`with FaultProxy("http://127.0.0.1:5000") as p:` then point the client at `p.endpoint`."""

    def __init__(self, upstream: str, *, upstream_timeout: float = 30.0):
        parts = urllib.parse.urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.upstream_timeout = upstream_timeout
        self.counts: Counter[str] = Counter()  # kind -> requests received
        self.injected: Counter[str] = Counter()  # action -> faults injected
        self.log: list[tuple[str, str, str | None]] = []  # (kind, unquoted target, action or None)
        self.ranges: list[tuple[str, str]] = []  # (unquoted target, Range header) of ranged requests
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # ---- life cycle ----------------------------------------------------------------
    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # ends every stall at once
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ---- scripting -----------------------------------------------------------------
    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def throttle(self, match: str = "", *, kind: str = "GET", times: int | None = 1) -> Fault:
        return self.add(Fault("throttle", kind, match, times))

    def error(self, status: int, code: str, match: str = "", *, kind: str = "GET", times: int | None = 1) -> Fault:
        return self.add(Fault("error", kind, match, times, status=status, code=code))

    def reset(self, match: str = "", *, kind: str = "GET", times: int | None = 1, after_bytes: int | None = None) -> Fault:
        return self.add(Fault("reset", kind, match, times, after_bytes))

    def cut(self, match: str = "", *, kind: str = "GET", times: int | None = 1, after_bytes: int = 0) -> Fault:
        return self.add(Fault("cut", kind, match, times, after_bytes))

    def truncate(self, match: str = "", *, kind: str = "GET", times: int | None = 1, after_bytes: int = 0) -> Fault:
        return self.add(Fault("truncate", kind, match, times, after_bytes))

    def stall(self, seconds: float, match: str = "", *, kind: str = "GET", times: int | None = 1,
              after_bytes: int | None = None) -> Fault:
        return self.add(Fault("stall", kind, match, times, after_bytes, min(seconds, MAX_STALL)))

    def clear(self) -> None:
        """Drop every fault and zero the counts."""
        with self._lock:
            self._faults.clear()
            self.counts.clear()
            self.injected.clear()
            self.log.clear()
            self.ranges.clear()

    def requests_for(self, match: str, kind: str = "GET") -> int:
        """How many requests of `kind` whose target matches `match` arrived."""
        with self._lock:
            return sum(1 for k, target, _ in self.log if k == kind and re.search(match, target))

    def _take(self, kind: str, target: str, range_header: str | None) -> Fault | None:
        with self._lock:
            if range_header:
                self.ranges.append((target, range_header))
            self.counts[kind] += 1
            fault = next((f for f in self._faults if f.applies(kind, target)), None)
            if fault is not None:
                fault.hits += 1
                self.injected[fault.action] += 1
            self.log.append((kind, target, fault.action if fault else None))
        if fault is not None:
            fault.reached.set()
        return fault

    # ---- the handler ---------------------------------------------------------------
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 30  # an idle keep-alive connection is dropped after this

            def log_message(self, *args) -> None:  # quiet
                pass

            def _any(self) -> None:
                try:
                    self._serve()
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout): normal here
                    self.close_connection = True

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                target = urllib.parse.unquote(self.path)
                fault = proxy._take(request_kind(self.command, self.path), target, self.headers.get("Range"))
                if fault is not None and fault.action in ("throttle", "error"):
                    body = _ERROR_XML.format(fault.code, "Please reduce your request rate." if fault.action == "throttle" else "Injected.")
                    self._reply(fault.status, [("Content-Type", "application/xml")], body.encode())
                    return
                if fault is not None and fault.action == "stall" and fault.after_bytes is None:
                    proxy._stopping.wait(fault.seconds)
                if fault is not None and fault.action == "reset" and fault.after_bytes is None:
                    self._abort(reset=True)
                    return
                status, headers, data = self._forward(body)
                if fault is None or fault.action == "stall" and fault.after_bytes is None:
                    self._reply(status, headers, data)
                    return
                k = min(fault.after_bytes or 0, len(data))
                if fault.action == "truncate":
                    self._reply(status, [(n, v) for n, v in headers if n.lower() != "content-length"], data[:k])
                    return
                self._head(status, headers, len(data))
                self.wfile.write(data[:k])
                self.wfile.flush()
                if fault.action == "stall":
                    proxy._stopping.wait(fault.seconds)
                    self.wfile.write(data[k:])
                    self.wfile.flush()
                    return
                self._abort(reset=fault.action == "reset")

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = do_PATCH = _any

            def _forward(self, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
                conn = http.client.HTTPConnection(*proxy.upstream, timeout=proxy.upstream_timeout)
                try:
                    conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                    for name, value in self.headers.items():
                        if name.lower() not in _HOP_BY_HOP and name.lower() != "content-length":
                            conn.putheader(name, value)
                    conn.putheader("Content-Length", str(len(body)))
                    conn.endheaders(body)
                    resp = conn.getresponse()
                    data = resp.read()
                    headers = [(k, v) for k, v in resp.getheaders() if k.lower() not in _HOP_BY_HOP and k.lower() != "content-length"]
                    if self.command == "HEAD":  # keep the object's length, there is no body
                        length = resp.getheader("Content-Length")
                        return resp.status, headers + ([("Content-Length", length)] if length else []), b""
                    return resp.status, headers, data
                finally:
                    conn.close()

            def _head(self, status: int, headers: list[tuple[str, str]], length: int | None) -> None:
                self.send_response_only(status)
                for name, value in headers:
                    self.send_header(name, value)
                if length is not None and not any(k.lower() == "content-length" for k, _ in headers):
                    self.send_header("Content-Length", str(length))
                self.end_headers()

            def _reply(self, status: int, headers: list[tuple[str, str]], data: bytes) -> None:
                self._head(status, headers, len(data) if self.command != "HEAD" or not data else None)
                if self.command != "HEAD":
                    self.wfile.write(data)
                self.wfile.flush()

            def _abort(self, *, reset: bool) -> None:
                """Close the connection: with an RST (`reset`), or a clean FIN mid-body (a cut)."""
                self.close_connection = True
                try:
                    self.wfile.flush()
                    if reset:
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    else:
                        self.connection.shutdown(socket.SHUT_WR)
                    self.connection.close()
                except OSError:
                    pass

            def finish(self) -> None:
                try:
                    super().finish()
                except OSError:
                    pass

        return Handler


__all__ = ["Fault", "FaultProxy", "request_kind"]
