"""Spark Connect sessions (`--remote`) that fail in seconds, not in pyspark's ten minutes.

pyspark's client retries an unreachable server for at least ten minutes (its DefaultPolicy: 15
retries, backoff up to 60 s), which an on-call engineer reads as a hang. The server's address is
tried first with a plain TCP connection (a refused or unroutable address is said at once), and the
session's retries are bounded (`RETRIES`, `MAX_BACKOFF_MS`: about half a minute in all), so a server
that goes away mid-command is reported in that time too.
"""

from __future__ import annotations

import socket
from typing import Any
from urllib.parse import urlsplit

from forensics.errors import ExitCode, ForensicsError
from forensics.safe import scrub

DEFAULT_PORT = 15002
CONNECT_TIMEOUT_S = 10.0  # the TCP handshake to the server
RETRIES = 6  # pyspark's backoff from 50 ms x4 per retry, capped below: 50 ms .. 10 s, ~25 s in all
MAX_BACKOFF_MS = 10_000


def _first_line(e: BaseException) -> str:
    s = str(e).strip().splitlines()
    return s[0][:300] if s else type(e).__name__


def _unreachable(remote: str, why: str) -> ForensicsError:
    return ForensicsError(ExitCode.SPARK, f"cannot reach Spark Connect at {scrub(remote)}: {scrub(why)}")


def address(remote: str) -> tuple[str, int] | None:
    """(host, port) of an `sc://host:port/;params` URL (Spark Connect's default port 15002); None when
    it names no host (pyspark refuses such a URL in its own words)."""
    if not remote.startswith("sc://"):
        return None
    try:
        u = urlsplit("http://" + remote[len("sc://"):])
        return (u.hostname, u.port or DEFAULT_PORT) if u.hostname else None
    except ValueError:  # a port that is no number: pyspark says so
        return None


def check_reachable(remote: str) -> None:
    """A TCP connection to the URL's host and port, or one line saying which and why."""
    where = address(remote)
    if where is None:
        return
    host, port = where
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except TimeoutError:
        raise _unreachable(remote, f"no answer from {host}:{port} within {CONNECT_TIMEOUT_S:.0f} s") from None
    except OSError as e:
        raise _unreachable(remote, f"no server at {host}:{port} ({e.strerror or type(e).__name__})") from None


def start(remote: str, conf: dict[str, str]) -> Any:
    """A Spark Connect session with the user's settings and bounded retries, or one line."""
    check_reachable(remote)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.remote(remote).appName("delta-forensics")
    for k, v in conf.items():
        builder = builder.config(k, v)
    try:
        session = builder.getOrCreate()
    except Exception as e:  # noqa: BLE001 - report, do not trace
        raise _unreachable(remote, _first_line(e)) from None
    bound_retries(session)
    return session


def bound_retries(session: Any) -> None:
    """pyspark >= 4.0 takes a retry policy (3.5's client has none to set: its own stays)."""
    try:
        from pyspark.sql.connect.client.retries import DefaultPolicy
    except ImportError:
        return
    client = getattr(session, "client", None)
    if client is not None and hasattr(client, "set_retry_policies"):
        client.set_retry_policies([DefaultPolicy(max_retries=RETRIES, max_backoff=MAX_BACKOFF_MS)])
