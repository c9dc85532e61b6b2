"""The engine: `python -m forensics.engine.server --dir DIR --key DIGEST --idle SECONDS`.

Started in the background by a client (forensics/engine/client.py), never by hand. It binds a
Unix socket only this user can reach, writes a fresh random token into a 0600 file beside it,
and runs each request's command with the CLI's own `main(argv)` (one at a time; isolation.py
gives each the client's environment and captures its output). The SparkSession it starts stays
up for the next request. It stops after `--idle` seconds without a request, on `stop`, on
SIGTERM, or within a second of its token file going (its directory removed) or changing (another
engine in its place), and removes its socket and token (unless another engine has replaced them).
"""

from __future__ import annotations

import argparse
import gc
import hmac
import importlib
import json
import os
import queue
import secrets
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from forensics.engine import place as places
from forensics.engine.isolation import base_environment, install_streams, isolated
from forensics.engine.protocol import HEARTBEAT_S, Output, ProtocolError, Request, receive, send
from forensics.engine.warmup import Warmup
from forensics.runtime import after_answer
from forensics.runtime.allocator import trim_c_heap

SETTLE_WAIT_S = 15  # how long a stopping engine waits for a cache write it owes (seconds; `engine stop` waits 20)
DELIVERY_WAIT_S = 60  # how long a finished command waits for its answer to be sent before it trims anyway
REQUEST_LIMIT = 256 << 20  # a request carries argv, a small environment and at most a pasted error text


class Declined(BaseException):
    """The command cannot run here as it would in-process (a BaseException: main() lets it through)."""


class Engine:
    def __init__(self, place: places.EnginePlace, digest: str, describe: dict[str, str], idle_s: float):
        self.place = place
        self.digest = digest
        self.describe = describe
        self.idle_s = idle_s
        self.token = secrets.token_hex(32)
        self.started = time.time()
        self.last = time.monotonic()
        self.served = 0
        self.after_answer = 0  # tasks run after their command's answer (cache writes)
        self.last_run_s: float | None = None  # the last command's time in the engine (bench/engine.py: client-side = wall - this)
        self.busy = 0
        self.closing = threading.Event()
        self.run_lock = threading.Lock()
        self.settling = threading.Event()  # set while a command's after-answer work runs (after_answer.py)
        self.state_lock = threading.Lock()
        self.base_env: dict[str, str] = {}
        self.sock: socket.socket | None = None
        self.warmup = Warmup()

    # ---- life -----------------------------------------------------------------------------

    def boot(self) -> None:
        from forensics.runtime import java

        os.environ["DELTA_FORENSICS_ENGINE"] = "off"  # the commands it runs never ask an engine
        java.mark_resident()  # its JVM lives for minutes: the full tiered JIT, warmed while idle
        self.base_env = base_environment(dict(os.environ))
        os.chdir(self.place.dir)
        install_streams()
        from forensics.runtime import heap

        heap.beyond_running_heap = _decline_heap
        for name in ("forensics.cli.main", "forensics.table", "forensics.cli.render", "forensics.log.delta_log",
                     "polars", "pyspark.sql"):  # what every request would import: paid once, before the first
            importlib.import_module(name)
        from forensics.cli.main import command_modules

        for name in command_modules():
            importlib.import_module(f"forensics.cli.commands.{name}")
        places.prepare(self.place)
        path = self.place.socket
        places.remove(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(str(path))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        sock.listen(16)
        sock.settimeout(1.0)
        self.sock = sock
        places.write_private(self.place.token, self.token + "\n")
        places.write_private(self.place.pid, f"{os.getpid()}\n")
        try:
            places.write_private(places.private_dir(places.registry()) / str(os.getpid()), str(self.place.dir))
        except (OSError, places.PlaceUnsafe):
            pass  # without the registry entry this engine is only not counted against the others
        places.remove(self.place.failed)
        signal.signal(signal.SIGTERM, lambda *_: self.closing.set())
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    def serve(self) -> None:
        assert self.sock is not None
        threading.Thread(target=self._warm_up, daemon=True).start()
        while not self.closing.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                with self.state_lock:
                    busy = self.busy
                    idle = not busy and time.monotonic() - self.last > self.idle_s
                if idle or (not busy and not self._reachable()):
                    self.closing.set()
                continue
            except OSError:
                if self.closing.is_set():
                    break
                raise
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()
        self.shutdown()

    def _reachable(self) -> bool:
        """Whether a client can still find this engine: its token file holds its token. With its
        directory removed (the cache cleared) or its place taken by another engine, it would
        otherwise run unreachable until its idle timeout, where `engine stop` cannot see it."""
        if places.read_private(self.place.token) == self.token:
            return True
        print("engine: its token file is gone or not its own; stopping", file=sys.stderr, flush=True)
        return False

    def _warm_up(self) -> None:
        self.warmup.run(self.place.dir, self.run_lock)
        gc.collect()
        _give_back_memory()

    def shutdown(self) -> None:
        """Remove our files (unless a newer engine has taken the place), stop Spark, exit."""
        self.closing.set()
        if self.settling.is_set():
            self.run_lock.acquire(timeout=SETTLE_WAIT_S)  # a cache write after an answer: let it publish
        if places.read_private(self.place.token) == self.token:
            places.remove(self.place.socket, self.place.token, self.place.pid)
        places.remove(places.registry() / str(os.getpid()))
        if self.sock is not None:
            self.sock.close()
        stopper = threading.Thread(target=_stop_spark, daemon=True)
        stopper.start()
        stopper.join(15)
        sys.__stderr__.flush()
        os._exit(0)

    # ---- one connection -------------------------------------------------------------------

    def _connection(self, conn: socket.socket) -> None:
        with conn:
            try:
                self._answer(conn)
            except (ProtocolError, OSError, ValueError, TypeError):
                pass  # a client gone or not speaking our protocol: nothing to answer

    def _answer(self, conn: socket.socket) -> None:
        if _peer_uid(conn) not in (None, os.getuid()):
            send(conn, {"status": "refused", "why": "another user"})
            return
        conn.settimeout(10)
        raw = receive(conn, REQUEST_LIMIT)
        token = raw.get("token")
        if not isinstance(token, str) or not hmac.compare_digest(token.encode(), self.token.encode()):
            send(conn, {"status": "refused", "why": "wrong or missing token"})
            return
        if raw.get("key") != self.digest:
            send(conn, {"status": "refused", "why": "another key", "key": self.digest})
            return
        request = Request.from_dict(raw)
        conn.settimeout(None)
        if self.closing.is_set() and request.op != "stop":
            send(conn, {"status": "closing"})  # its client starts a new engine (or runs in-process)
        elif request.op == "status":
            send(conn, {"status": "done", "info": self.info()})
        elif request.op == "stop":
            send(conn, {"status": "done", "info": self.info()})
            self.closing.set()
        elif request.op in ("run", "warm"):
            self._run_with_heartbeats(conn, request)
        else:
            send(conn, {"status": "refused", "why": f"unknown op {request.op!r}"})

    def info(self) -> dict[str, Any]:
        with self.state_lock:
            return {"pid": os.getpid(), "key": self.digest, "started": self.started, "served": self.served,
                    "busy": self.busy, "afterAnswer": self.after_answer, "idleSeconds": self.idle_s, "idleFor": round(time.monotonic() - self.last, 1),
                    "sparkRunning": _spark_running(), "lastRunSeconds": self.last_run_s, "socket": str(self.place.socket),
                    "jit": self.warmup.to_dict(), **self.describe}

    def _run_with_heartbeats(self, conn: socket.socket, request: Request) -> None:
        if self.closing.is_set():
            send(conn, {"status": "closing"})
            return
        with self.state_lock:
            self.busy += 1
        if request.op == "run":
            self.warmup.interrupt(_cancel_spark_jobs)  # a command waits for no warm-up round
        result: dict[str, Any] = {}
        # Output a frame's worth at a time while the command runs (bounded: a slow client slows
        # the command's writes, not the engine's memory); None: the command has ended.
        outbox: queue.Queue[Output | None] = queue.Queue(maxsize=4)

        answered = threading.Event()
        delivered = threading.Event()  # the answer is sent, or its client is gone

        def answer(got: dict[str, Any]) -> None:
            result.update(got)
            answered.set()
            outbox.put(None)

        def work() -> None:
            try:
                self._run(request, outbox.put, answer)
            except BaseException as e:  # noqa: BLE001 - answered, never raised in a worker thread
                if not answered.is_set():
                    result.update({"status": "declined", "why": f"the engine failed: {type(e).__name__}"})
                from forensics.safe import scrub

                sys.__stderr__.write(scrub(traceback.format_exc()))
            finally:
                if not answered.is_set():
                    outbox.put(None)
                # Once, here: the cache write after the answer is done, and the client has its
                # answer (a collection holds the interpreter lock the answer's send needs).
                delivered.wait(DELIVERY_WAIT_S)
                gc.collect()
                _give_back_memory()

        def finished() -> None:
            with self.state_lock:
                self.busy -= 1
                self.last = time.monotonic()

        threading.Thread(target=work, daemon=True).start()
        try:
            self._deliver(conn, outbox, result, finished)
        finally:
            delivered.set()

    @staticmethod
    def _deliver(conn: socket.socket, outbox: "queue.Queue[Output | None]", result: dict[str, Any], finished: Any) -> None:
        """Send the command's output as it comes, then its answer."""
        try:
            send(conn, {"status": "accepted", "pid": os.getpid()})
            while True:
                try:
                    part = outbox.get(timeout=HEARTBEAT_S)
                except queue.Empty:
                    send(conn, {"status": "working"})
                    continue
                if part is None:
                    break
                part.send(conn)
        except OSError:
            _cancel_spark_jobs()  # the client is gone (Ctrl+C): stop what Spark runs for it
            while outbox.get() is not None:  # let the command write to the end, into nothing
                pass
            finished()
            return
        finished()
        output = result.pop("output", None)
        try:
            if output is not None:
                output.send(conn)
            send(conn, result)
        except OSError:
            pass  # the client left before its answer: nothing to answer

    def _run(self, request: Request, sink: Any, answer: Any) -> None:
        """Run the request and `answer` its result; then, still holding the run lock (the next
        request waits), finish what the command left until after its answer (the cache write)."""
        with self.run_lock:
            if not os.path.isdir(request.cwd):
                return answer({"status": "declined", "why": "the working directory is gone"})
            if request.op == "warm":
                with isolated(request, self.base_env) as capture:
                    code, why = _warm()
                return answer({"status": "done", "code": code, "why": why, "output": capture.output})
            started = time.perf_counter()
            restore = _take_runtime_conf(request.runtime_conf)
            if restore is None:
                return answer({"status": "declined", "why": "a --conf setting the running session cannot take"})
            with after_answer.collecting() as pending:
                try:
                    with isolated(request, self.base_env, sink) as capture:
                        from forensics.cli.main import main

                        try:
                            code = main(list(request.argv))
                        except SystemExit as e:
                            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                except Declined as d:
                    return answer({"status": "declined", "why": str(d)})
                finally:
                    restore()
                with self.state_lock:  # answered here (a declined command is its client's to run)
                    self.served += 1
                    self.last_run_s = round(time.perf_counter() - started, 4)
                self.settling.set()  # before the answer: a `stop` it prompts must find it set
                answer({"status": "done", "code": int(code), "output": capture.output})
                try:
                    ran = pending.run()
                finally:
                    self.settling.clear()
                with self.state_lock:
                    self.after_answer += ran


def _decline_heap(need: Any, limit: int) -> None:
    raise Declined(f"the running session's heap ({limit >> 20} MB) is too small for this log")


def _warm() -> tuple[int, str]:
    """Start the session now (`engine start`), as a command would: (exit code, why it failed)."""
    from forensics.errors import ForensicsError
    from forensics.runtime.spark import get_spark
    from forensics.safe import scrub

    try:
        get_spark()
    except ForensicsError as e:
        return int(e.code), scrub(e.one_line())
    return 0, ""


def _spark_running() -> bool:
    mod = sys.modules.get("forensics.runtime.spark")
    return bool(mod and mod.running_session() is not None)


def _take_runtime_conf(conf: dict[str, str]) -> Any:
    """Check that the running session takes these settings at run time (None: it does not); the
    returned function puts the previous values back. With no session yet, one is started first,
    so the settings never become part of how it started."""
    if not conf:
        return lambda: None
    from forensics.runtime.spark import get_spark

    try:
        session = get_spark()
        if not all(session.conf.isModifiable(k) for k in conf):
            return None
        before = {k: session.conf.get(k, None) for k in conf}
    except Exception:  # noqa: BLE001 - a session that cannot say: run it in-process
        return None

    def restore() -> None:
        for k, v in before.items():
            try:
                session.conf.unset(k) if v is None else session.conf.set(k, v)
            except Exception:  # noqa: BLE001
                pass

    return restore


def _give_back_memory() -> None:
    """What a command freed goes back to the system, not kept for the engine's idle minutes:
    Arrow's pool and glibc's heap (runtime/allocator.py; polars' own allocator does so by itself)."""
    if "pyarrow" in sys.modules:
        from forensics.log.reader import release_arrow_memory

        release_arrow_memory()
    trim_c_heap()


def _cancel_spark_jobs() -> None:
    mod = sys.modules.get("forensics.runtime.spark")
    session = mod.running_session() if mod else None
    if session is not None:
        try:
            session.sparkContext.cancelAllJobs()
        except Exception:  # noqa: BLE001
            pass


def _stop_spark() -> None:
    mod = sys.modules.get("forensics.runtime.spark")
    session = mod.running_session() if mod else None
    if session is not None:
        try:
            session.stop()
        except Exception:  # noqa: BLE001
            pass


def _peer_uid(conn: socket.socket) -> int | None:
    """The connecting process's uid (Linux SO_PEERCRED); None where the platform cannot say."""
    try:
        data = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (AttributeError, OSError):
        return None
    return struct.unpack("3i", data)[1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m forensics.engine.server")
    p.add_argument("--dir", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--idle", type=float, required=True)
    p.add_argument("--describe", default="{}")
    args = p.parse_args(argv)
    place = places.EnginePlace(Path(args.dir))
    engine = Engine(place, args.key, json.loads(args.describe), args.idle)
    try:
        engine.boot()
    except BaseException as e:  # noqa: BLE001 - the client reads why from the `failed` file
        from forensics.errors import ExitCode, ForensicsError
        from forensics.safe import scrub

        code = int(e.code) if isinstance(e, ForensicsError) else int(ExitCode.ENGINE_UNAVAILABLE)
        try:
            places.write_private(place.failed, f"{code}\t{scrub(f'{type(e).__name__}: {e}')[:500]}\n")
        except OSError:
            pass
        sys.__stderr__.write(scrub(traceback.format_exc()))
        return 1
    sys.__stderr__.write(f"engine {os.getpid()} ready at {time.strftime('%Y-%m-%dT%H:%M:%S')}\n")
    sys.__stderr__.flush()
    engine.serve()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
