"""Spark Connect sessions (`--remote`) that fail in seconds, not in pyspark's ten minutes.

pyspark's client retries an unreachable server for at least ten minutes (its DefaultPolicy: 15
retries, backoff up to 60 s), which an on-call engineer reads as a hang. The server's address is
tried first with a plain TCP connection (a refused or unroutable address is said at once), and the
session's retries are bounded (`RETRIES`, `MAX_BACKOFF_MS`: about half a minute in all), so a server
that goes away mid-command is reported in that time too (a server's own retry delay is capped
alike).
"""

from __future__ import annotations

import inspect
import os
import socket
from typing import Any
from urllib.parse import urlsplit

from forensics.errors import ExitCode, ForensicsError, first_line
from forensics.safe import scrub

DEFAULT_PORT = 15002
CONNECT_TIMEOUT_S = 10.0  # the TCP handshake to the server
RETRIES = 6  # pyspark's backoff from 50 ms x4 per retry, capped below: 50 ms .. 10 s, ~25 s in all
MAX_BACKOFF_MS = 10_000


def _unreachable(remote: str, why: str) -> ForensicsError:
    return ForensicsError(ExitCode.SPARK, f"cannot reach Spark Connect at {scrub(remote)}: {scrub(why)}")


def address(remote: str) -> tuple[str, int] | None:
    """(host, port) of an `sc://host:port/;params` URL (Spark Connect's default port 15002); None when
    it names no host (pyspark refuses such a URL in its own words)."""
    if not remote.startswith("sc://"):
        return None
    try:
        u = urlsplit("http://" + remote[len("sc://"):])
        return (u.hostname, DEFAULT_PORT if u.port is None else u.port) if u.hostname else None
    except ValueError:  # a port that is no number: pyspark says so
        return None


def check_reachable(remote: str) -> None:
    """A TCP connection to the URL's host and port, or one line saying which and why. Skipped when
    a proxy is set for gRPC (the server is reached through it, not directly)."""
    where = address(remote)
    if where is None or any(os.environ.get(k) for k in ("grpc_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy")):
        return
    host, port = where
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except TimeoutError:
        raise _unreachable(remote, f"no answer from {host}:{port} within {CONNECT_TIMEOUT_S:.0f} s") from None
    except OSError as e:
        raise _unreachable(remote, f"no server at {host}:{port} ({e.strerror or type(e).__name__})") from None


def start(remote: str, conf: dict[str, str]) -> Any:
    """A Spark Connect session with bounded retries, then the user's settings, or one line. The
    builder gets no option of its own: it would send them before the retries are bounded."""
    check_reachable(remote)
    from pyspark.sql import SparkSession

    try:
        session = SparkSession.builder.remote(remote).getOrCreate()
        bound_retries(session)
        settings = {"spark.app.name": "delta-forensics", **conf}
        if hasattr(session.conf, "_set_all"):
            session.conf._set_all(configs=settings, silent=True)  # noqa: SLF001 - what the builder does
        else:
            for k, v in settings.items():
                session.conf.set(k, v)
    except Exception as e:  # noqa: BLE001 - report, do not trace
        raise _unreachable(remote, first_line(e)) from None
    return session


def bound_retries(session: Any) -> None:
    """At most RETRIES retries, MAX_BACKOFF_MS apart at most, a server's own retry delay capped too:
    pyspark >= 4 takes a policy, 3.5's client a dict it reads on every call."""
    client = getattr(session, "client", None)
    if client is None:
        return
    try:
        from pyspark.sql.connect.client.retries import DefaultPolicy
    except ImportError:
        if isinstance(getattr(client, "_retry_policy", None), dict):
            client._retry_policy.update(max_retries=RETRIES, max_backoff=MAX_BACKOFF_MS)  # noqa: SLF001
        return
    accepted = inspect.signature(DefaultPolicy.__init__).parameters
    kw = {"max_retries": RETRIES, "max_backoff": MAX_BACKOFF_MS}
    if "max_server_retry_delay" in accepted:
        kw["max_server_retry_delay"] = MAX_BACKOFF_MS
    if hasattr(client, "set_retry_policies"):
        client.set_retry_policies([DefaultPolicy(**kw)])
