"""The warm engine (forensics/engine): real engine processes on real sample tables.

The rest of the suite runs in-process (tests/conftest.py sets DELTA_FORENSICS_ENGINE=off); here a
representative subset goes through the engine and must answer exactly as --no-engine does. Every
engine a test starts lives in the test's own cache directory and is stopped (or killed, by its
checked pid) when the test ends. Speed is measured in bench/engine.py, not here.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import SAMPLE_LOGS

CLI = [sys.executable, "-m", "forensics"]
QUICK = SAMPLE_LOGS / "quickstart" / "table"
MERGE = SAMPLE_LOGS / "a-merge-partitions"
BUSY = SAMPLE_LOGS / "busy" / "table"
JVM_NOTE = "Delta's JVM side"  # said once per session start: once per engine, once per in-process cold run


def _env(cache: Path, **extra: str) -> dict[str, str]:
    """The environment of a command run with the engine on; TMPDIR of its own, so the user-wide list
    of running engines (forensics/engine/place.py registry) holds only this test's."""
    # DELTA_FORENSICS_UTC too: an in-process `main([... "--utc"])` of an earlier test in this worker leaves it set
    env = {k: v for k, v in os.environ.items() if not k.startswith("DELTA_FORENSICS_ENGINE") and k != "DELTA_FORENSICS_UTC"}
    tmp = cache.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    # No JIT warm-up (forensics/engine/warmup.py) unless a test asks: it would burn CPU the other tests share.
    return {**env, "DELTA_FORENSICS_CACHE_DIR": str(cache), "DELTA_FORENSICS_ENGINE": "on", "TMPDIR": str(tmp),
            "DELTA_FORENSICS_ENGINE_WARMUP": "off", **extra}


def run(argv: list[str], env: dict[str, str], *, stdin: str | None = None, timeout: float = 300) -> tuple[int, str, str]:
    p = subprocess.run(CLI + argv, env=env, input=stdin, capture_output=True, text=True, timeout=timeout, cwd=str(SAMPLE_LOGS))
    assert "Traceback" not in p.stderr, p.stderr
    return p.returncode, p.stdout, p.stderr


def _pids(cache: Path) -> set[int]:
    """Engine processes serving a directory under `cache` (from /proc: whatever their pid files say)."""
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                args = (d / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"forensics.engine.server" in args and any(a.startswith(os.fsencode(str(cache))) for a in args):
                out.add(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        stat_line = Path(f"/proc/{pid}/stat").read_bytes()
        return stat_line.rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def _stop_all(cache: Path) -> None:
    env = _env(cache)
    try:
        subprocess.run(CLI + ["engine", "stop", "--all"], env=env, capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        pass
    killed = _pids(cache)
    for pid in killed:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + 15  # a SIGKILLed process takes a moment to exit on a loaded machine
    while any(_alive(p) for p in killed) and time.monotonic() < deadline:
        time.sleep(0.1)


@pytest.fixture
def cache():
    """A cache directory of the test's own, short enough that its engine's socket lives in it
    (pytest-xdist's tmp_path is not); its engines end with the test."""
    root = Path(tempfile.mkdtemp(prefix="dfe-", dir="/tmp"))
    c = root / "cache"
    c.mkdir()
    yield c
    _stop_all(c)
    assert not {p for p in _pids(c) if _alive(p)}
    shutil.rmtree(root, ignore_errors=True)


def test_a_tmpdir_too_deep_for_a_socket_path_falls_back_to_tmp(tmp_path):
    """The engine's socket goes in its directory, else under $TMPDIR, else under /tmp: a Unix
    socket's path holds about 100 bytes, and a deep cache directory and TMPDIR both exceed it."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    c = deep / "cache"
    c.mkdir(parents=True)
    env = {**_env(c), "TMPDIR": str(deep / "tmp")}
    try:
        rc, _out, err = run(["engine", "start", "--no-warm"], env)
        assert rc == 0, err
        assert _engine_pid(env) is not None
        assert not (c / "engine").is_dir() or not list((c / "engine").glob("*/sock"))  # not in its too-deep directory
    finally:
        run(["engine", "stop"], env)


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    """One engine for the equality tests (a JVM start is paid once for them all)."""
    c = tmp_path_factory.mktemp("engine-shared")
    assert run(["engine", "start"], _env(c))[0] == 0  # a command finding none would run in-process and start it after
    yield c
    _stop_all(c)


def _engine_pid(env: dict[str, str]) -> int | None:
    rc, out, _ = run(["engine", "status"], env)
    assert rc == 0
    first = out.splitlines()[0] if out else ""
    return int(first.split()[2].rstrip(":")) if first.startswith("engine pid ") else None


def _served(env: dict[str, str]) -> int:
    """How many commands the running engine answered (`engine status`)."""
    out = run(["engine", "status"], env)[1]
    return int(out.split(" command(s) answered")[0].rsplit(" ", 1)[1])


def _place(cache: Path) -> Path:
    dirs = [d for d in (cache / "engine").iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def _same(a: tuple[int, str, str], b: tuple[int, str, str]) -> None:
    """Same exit code, stdout and stderr (but the once-per-session-start note about Delta's jars)."""
    def lines(err: str) -> list[str]:
        return [ln for ln in err.splitlines() if JVM_NOTE not in ln]

    assert a[0] == b[0], (a, b)
    assert a[1] == b[1]
    assert lines(a[2]) == lines(b[2])


# ---- the answers are the in-process answers ----------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("argv", [
    ["history", str(QUICK)],
    ["history", str(QUICK), "--json", "--from", "3", "--to", "9"],
    ["replay", str(MERGE / "table"), "--json"],
    ["explain-error", str(MERGE / "table"), "--error-file", str(MERGE / "error.txt")],
    ["snapshot", str(QUICK), "--version", "7"],
    ["history", str(SAMPLE_LOGS / "quickstart")],  # not a table (no _delta_log): the same one line, the same code
], ids=["history", "history-json", "replay-json", "explain-error", "snapshot", "not-a-table"])
def test_engine_answers_as_in_process(shared_cache, argv):
    env = _env(shared_cache)
    local = run(argv + ["--no-engine"], env)  # in-process first: the engine then reads the cache it wrote
    served = _served(env)
    warm = run(argv, env)
    _same(warm, local)
    assert _served(env) == served + 1  # it was the engine that answered


@pytest.mark.slow
def test_an_answer_of_many_frames_arrives_whole(shared_cache, tmp_path):
    """An answer larger than one output frame (forensics/engine/protocol.py) comes back in several,
    byte for byte, in order: a commit whose userMetadata alone is 5 MB, non-ASCII text included."""
    from forensics.engine.protocol import OUTPUT_FRAME_BYTES

    table = tmp_path / "long-answer"
    (table / "_delta_log").mkdir(parents=True)
    note = "".join(f"{i:07d}é€ " for i in range(500_000))
    lines = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
             {"metaData": {"id": "m", "format": {"provider": "parquet", "options": {}}, "partitionColumns": [],
                           "schemaString": '{"type":"struct","fields":[]}', "configuration": {}}},
             {"commitInfo": {"timestamp": 1718870000000, "operation": "WRITE", "userMetadata": note}}]
    (table / "_delta_log" / f"{0:020d}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    env = _env(shared_cache)
    argv = ["history", str(table), "--json"]
    local = run(argv + ["--no-engine"], env)
    assert local[0] == 0 and len(local[1].encode()) > 2 * OUTPUT_FRAME_BYTES
    served = _served(env) if _engine_pid(env) else 0
    _same(run(argv + ["--no-cache"], env), run(argv + ["--no-cache", "--no-engine"], env))
    assert _served(env) == served + 1  # the engine answered
    assert json.loads(local[1])[0]["userMetadata"] == note


@pytest.mark.slow
def test_engine_reads_afresh_with_spark_and_keeps_no_state_between_requests(shared_cache):
    """--no-cache makes the engine's own Spark session parse the log; a --utc run changes nothing
    for the next run; the client's zone and terminal width travel with each request."""
    env = _env(shared_cache, TZ="Asia/Kolkata", COLUMNS="100")
    argv = ["history", str(QUICK), "--no-cache"]
    local = run(argv + ["--no-engine"], env)
    assert "+0530" in local[1]
    _same(run(argv, env), local)
    utc = run(argv + ["--utc"], env)
    assert utc[0] == 0 and "+0530" not in utc[1] and utc[1] != local[1]
    _same(run(argv, env), local)  # the --utc of the run before did not stay in the engine
    assert run(argv, {**env, "COLUMNS": "60"})[1] != local[1]  # the width is the client's, each time


def _on_a_terminal(argv: list[str], env: dict[str, str], columns: int = 97) -> bytes:
    """stdout of a command run on a pseudo-terminal `columns` wide (colours, the terminal's width)."""
    import fcntl
    import pty
    import termios

    main, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    p = subprocess.Popen(CLI + argv, env={**env, "TERM": "xterm-256color"}, stdout=follower, stderr=subprocess.PIPE,
                         cwd=str(SAMPLE_LOGS))
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the command closed the terminal
            break
        if not chunk:
            break
        out += chunk
    p.wait(timeout=300)
    os.close(main)
    assert p.returncode == 0, p.stderr.read()
    return out


@pytest.mark.slow
def test_on_a_terminal_the_same_colours_and_width(shared_cache):
    env = _env(shared_cache)
    assert run(["engine", "start", "--no-warm"], env)[0] == 0  # (running already when the tests above ran)
    argv = ["history", str(QUICK), "-q"]
    local = _on_a_terminal(argv + ["--no-engine"], env)
    assert b"\x1b[" in local and max(len(ln) for ln in local.decode().splitlines()) > 60  # styled, terminal-wide
    before = _served(env)
    assert _on_a_terminal(argv, env) == local
    assert _served(env) == before + 1
    assert _on_a_terminal(argv, env, columns=70) != local  # the terminal's own width, each time


@pytest.mark.slow
def test_spark_settings_at_run_time_or_in_process(shared_cache):
    """A spark.sql. setting the running session takes is applied for that command; one it cannot
    take (a static SQL setting) sends the command back to run in-process: the same answer either way."""
    env = _env(shared_cache)
    argv = ["history", str(QUICK), "--no-cache", "--json"]
    plain = run(argv, env)
    before = _served(env)
    _same(run(argv + ["--conf", "spark.sql.shuffle.partitions=3"], env), plain)
    assert _served(env) == before + 1
    _same(run(argv + ["--conf", "spark.sql.warehouse.dir=" + str(shared_cache / "wh")], env), plain)
    assert _served(env) == before + 1  # declined: answered in-process


@pytest.mark.slow
def test_a_log_beyond_the_engines_heap_is_read_in_process(cache, tmp_path):
    """The engine's session has the heap it started with; a commit file that needs more is handed
    back to its client, which sizes (here: refuses, in one line) as an in-process run does."""
    table = tmp_path / "wide"
    (table / "_delta_log").mkdir(parents=True)
    lines = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
             {"metaData": {"id": "m", "format": {"provider": "parquet", "options": {}}, "partitionColumns": [],
                           "schemaString": '{"type":"struct","fields":[]}', "configuration": {}}},
             {"commitInfo": {"timestamp": 1718870000000, "operation": "WRITE", "userMetadata": "x" * (3 << 20)}}]
    (table / "_delta_log" / f"{0:020d}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    env = _env(cache, DELTA_FORENSICS_DRIVER_MEMORY="512m")
    assert run(["engine", "start"], env)[0] == 0  # its session: 512 MB of heap
    local = run(["history", str(table), "--no-engine"], env)
    assert local[0] == 6 and "driver heap" in local[2] and len(local[2].strip().splitlines()) == 1
    _same(run(["history", str(table)], env), local)
    assert _served(env) == 0  # declined by the engine: answered in-process


def test_error_text_on_stdin(cache):
    env = _env(cache)
    text = (MERGE / "error.txt").read_text()
    local = run(["explain-error", "--error-file", "-", "--no-engine"], env, stdin=text)
    assert local[0] == 0
    # No engine runs (and a command without a table starts none): read for it, then read again in-process.
    _same(run(["explain-error", "--error-file", "-"], env, stdin=text), local)
    assert _engine_pid(env) is None
    rc, out, _ = run(["engine", "start", "--no-warm"], env)
    assert rc == 0, out
    _same(run(["explain-error", "--error-file", "-"], env, stdin=text), local)
    assert _served(env) == 1


# ---- starting once, stopping, refusing ----------------------------------------------------------


def _wait_for(what, seconds: float = 120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(0.2)
    return what()


def _jit(env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-c", "import json; from forensics import engine_status; "
                          "print(json.dumps(engine_status()[0].jit))"], env=env, capture_output=True, text=True, timeout=60)
    return json.loads(out.stdout or "null") or {}


def _engine_jvm_flags(pid: int) -> str:
    """The command line of the engine's JVM (its child `java` process)."""
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    args = (d / "cmdline").read_bytes().split(b"\0")
                    if args and args[0].endswith(b"java"):
                        return b" ".join(args).decode()
            except (OSError, IndexError, ValueError):
                continue
    return ""


@pytest.mark.slow
def test_a_command_finding_no_engine_runs_here_and_starts_one_for_the_next(cache):
    """The first command pays no engine start: it runs in-process (a short-lived JVM with C1 alone)
    and starts the engine as it ends; the next command is the engine's."""
    env = _env(cache)
    argv = ["history", str(QUICK), "--json"]
    local = run(argv + ["--no-engine"], env)
    _same(run(argv, env), local)  # no engine ran: answered here
    pid = _wait_for(lambda: _engine_pid(env))
    assert pid is not None and _served(env) == 0
    _same(run(argv, env), local)
    assert _served(env) == 1 and _engine_pid(env) == pid


@pytest.mark.slow
def test_the_cache_is_written_after_the_answer_and_read_by_the_next_command(cache, tmp_path, monkeypatch):
    """A first look through the engine publishes its parsed log after the answer is sent
    (forensics/runtime/after_answer.py): the next command reads that cache and parses nothing,
    and `engine stop` right after an answer waits for the write it owes."""
    from forensics.log import cache as C
    from forensics.log.listing import normalize_location
    from forensics.runtime.paths import table_cache_dir

    env = _env(cache)
    assert run(["engine", "start", "--no-warm"], env)[0] == 0
    tables = []
    for name in ("a", "b"):
        shutil.copytree(QUICK, tmp_path / name)
        tables.append(tmp_path / name)
    argv = ["history", str(tables[0]), "--json"]
    local = run(argv + ["--no-engine", "--no-cache"], env)
    _same(run(argv, env), local)
    assert _served(env) == 1
    assert "1 cache write(s) after the answer" in run(["engine", "status"], env)[1]
    # The next command through the engine: from the cache the first one left.
    _same(run(argv, env), local)
    assert "1 cache write(s) after the answer" in run(["engine", "status"], env)[1]  # a cache read writes nothing
    # A first look, then a stop at once: the cache is there when the engine has gone.
    assert run(["history", str(tables[1])], env)[0] == 0
    assert run(["engine", "stop"], env)[0] == 0
    monkeypatch.setenv("DELTA_FORENSICS_CACHE_DIR", str(cache))  # where the engine put it
    where = table_cache_dir(normalize_location(str(tables[1])))
    assert C.current_dir(where) is not None, sorted(p.name for p in where.iterdir()) if where.exists() else where


@pytest.mark.slow
def test_commands_ending_together_with_no_engine_start_one(cache):
    """Two commands that found no engine end at about the same time: the second sees the first's
    engine starting (its pid file, before its socket) and neither retires it nor starts another."""
    env = _env(cache)
    procs = [subprocess.Popen(CLI + ["history", str(QUICK), "--json", "--no-cache"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=str(SAMPLE_LOGS)) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    pid = _wait_for(lambda: _engine_pid(env))
    time.sleep(3)  # room for a second engine to appear, were one started
    assert {p for p in _pids(cache) if _alive(p)} == {pid}


@pytest.mark.slow
def test_the_engine_warms_its_jit_while_idle_and_a_command_ends_the_warm_up(cache):
    """The engine's JVM runs the full tiered JIT and compiles the log reader's hot code on a
    synthetic log of its own while nobody waits; a command arriving ends the warm-up and is
    answered as in-process."""
    env = _env(cache, DELTA_FORENSICS_ENGINE_WARMUP="on", DELTA_FORENSICS_ENGINE_WARMUP_COMMITS="2000",
               DELTA_FORENSICS_ENGINE_WARMUP_FILES="20000")
    assert run(["engine", "start", "--no-warm"], env)[0] == 0
    pid = _engine_pid(env)
    # the log's rounds, then the large checkpoint's (a scratch-Parquet read a small one never makes hot)
    assert _wait_for(lambda: len(_jit(env).get("snapshotRounds", [])) >= 1, 300), _jit(env)
    from forensics.engine.warmup import MIN_ROUNDS

    assert len(_jit(env)["rounds"]) >= MIN_ROUNDS
    assert "large snapshot(s), the last" in run(["engine", "status"], env)[1]
    flags = _engine_jvm_flags(pid)
    assert "-XX:+UseSerialGC" in flags and "TieredStopAtLevel" not in flags, flags
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    conf = [e for e in environ if e.startswith(b"_RJEM_MALLOC_CONF=")]
    assert conf and conf[0].endswith(b"dirty_decay_ms:0,muzzy_decay_ms:0"), conf  # polars returns freed pages at once
    argv = ["history", str(BUSY), "--json", "--no-cache"]
    _same(run(argv, env), run(argv + ["--no-engine"], env))
    assert _served(env) == 1
    jit = _jit(env)
    assert jit["state"] in ("interrupted", "done") and len(jit["rounds"]) >= 1, jit
    assert (_place(cache) / "jit-warmup" / "_delta_log").is_dir()  # its own log, in its own directory
    assert len(list((_place(cache) / "jit-warmup-checkpoint-20000" / "_delta_log").glob("*.checkpoint.parquet"))) == 1


def test_parallel_callers_get_one_engine(cache):
    env = _env(cache)
    procs = [subprocess.Popen(CLI + ["engine", "start", "--no-warm"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=240) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    pids = {int(out.split()[2].rstrip(":")) for out, _ in outs}
    assert len(pids) == 1, outs
    assert {p for p in _pids(cache) if _alive(p)} == pids


def test_a_user_runs_at_most_a_few_engines(tmp_path):
    """Starting one engine more than DELTA_FORENSICS_ENGINE_MAX stops the one idle longest."""
    caches = [tmp_path / f"c{i}" for i in range(3)]
    pids = []
    try:
        for c in caches:
            c.mkdir()
            env = _env(c, DELTA_FORENSICS_ENGINE_MAX="2")
            assert run(["engine", "start", "--no-warm"], env)[0] == 0
            pids.append(_engine_pid(env))
        assert not _alive(pids[0]) and _alive(pids[1]) and _alive(pids[2])
        assert sorted(p.name for p in (tmp_path / "tmp" / f"delta-forensics-{os.getuid()}" / "engines").iterdir()) == sorted(
            str(p) for p in pids[1:])
    finally:
        for c in caches:
            _stop_all(c)


def test_stops_when_idle(cache):
    env = _env(cache, DELTA_FORENSICS_ENGINE_IDLE="2s")
    assert run(["engine", "start", "--no-warm"], env)[0] == 0
    pid = _engine_pid(env)
    place = _place(cache)
    assert pid is not None and _alive(pid)
    deadline = time.monotonic() + 60
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(pid)
    assert not (place / "token").exists() and not (place / "sock").exists() and not (place / "pid").exists()
    assert _engine_pid(env) is None


@pytest.mark.parametrize("how", ["directory removed", "token replaced"])
def test_an_engine_no_client_can_reach_stops(cache, how):
    """The cache cleared under a running engine, or its token file no longer its own (another
    engine's): no client can reach it now, so it stops at once, not at its idle timeout (20
    minutes by default)."""
    env = _env(cache)
    assert run(["engine", "start", "--no-warm"], env)[0] == 0
    pid = _engine_pid(env)
    assert pid is not None and _alive(pid)
    time.sleep(2)
    assert _alive(pid)  # the place intact: it serves on
    if how == "directory removed":
        shutil.rmtree(cache)
    else:
        token = _place(cache) / "token"
        token.write_text("f" * 64 + "\n")
        os.chmod(token, 0o600)
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(pid)


def _frame(sock: socket.socket, message: dict) -> dict:
    data = json.dumps(message).encode()
    sock.sendall(struct.pack(">I", len(data)) + data)
    head = sock.recv(4)
    if len(head) < 4:
        return {}
    (n,) = struct.unpack(">I", head)
    body = b""
    while len(body) < n:
        body += sock.recv(n - len(body))
    return json.loads(body)


def test_refuses_a_connection_without_the_token(cache):
    env = _env(cache)
    assert run(["engine", "start", "--no-warm"], env)[0] == 0
    place = _place(cache)
    for path, mode in ((place, 0o700), (place / "token", 0o600), (place / "sock", 0o600)):
        assert stat.S_IMODE(os.lstat(path).st_mode) == mode, path
    token = (place / "token").read_text().strip()
    assert len(token) >= 32
    argv = ["history", str(QUICK), "--json"]
    for bad in ({}, {"token": "0" * len(token)}, {"token": token[:-1]}):
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(10)
            s.connect(str(place / "sock"))
            answer = _frame(s, {"op": "run", "key": place.name, "argv": argv, "cwd": "/", **bad})
        assert answer.get("status") == "refused" and "token" in answer.get("why", ""), answer
    with socket.socket(socket.AF_UNIX) as s:  # not a frame at all: dropped, the engine carries on
        s.settimeout(10)
        s.connect(str(place / "sock"))
        s.sendall(b"\xff\xff\xff\xffGET / HTTP/1.1\r\n\r\n")
        try:
            assert s.recv(100) == b""  # closed without an answer
        except ConnectionResetError:
            pass  # or reset (it closed with our bytes unread)
    with socket.socket(socket.AF_UNIX) as s:  # the right token, another key: refused too
        s.settimeout(10)
        s.connect(str(place / "sock"))
        assert _frame(s, {"op": "status", "token": token, "key": "0" * 16})["status"] == "refused"
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(str(place / "sock"))
        info = _frame(s, {"op": "status", "token": token, "key": place.name})
    assert info["status"] == "done" and info["info"]["served"] == 0  # no refused request ran


def test_stale_and_foreign_engines_are_replaced(cache):
    env = _env(cache)
    assert run(["engine", "start", "--no-warm"], env)[0] == 0
    first = _engine_pid(env)
    place = _place(cache)
    os.kill(first, signal.SIGKILL)  # crashed: its socket file stays, nobody listens
    deadline = time.monotonic() + 30
    while _alive(first) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (place / "sock").exists()
    assert run(["engine", "start", "--no-warm"], env)[0] == 0
    second = _engine_pid(env)
    assert second not in (None, first)
    # A token file that does not match the running engine (another engine's, or tampered with):
    # that engine is foreign to this client; it is ended and replaced.
    (place / "token").write_text("f" * 64 + "\n")
    os.chmod(place / "token", 0o600)
    assert run(["engine", "start", "--no-warm"], env)[0] == 0
    third = _engine_pid(env)
    assert third not in (None, first, second) and not _alive(second)
    # A token file others can read is not trusted either.
    os.chmod(place / "token", 0o644)
    assert run(["engine", "start", "--no-warm"], env)[0] == 0
    fourth = _engine_pid(env)
    assert fourth not in (None, third) and not _alive(third)
    assert stat.S_IMODE(os.lstat(place / "token").st_mode) == 0o600
    assert {p for p in _pids(cache) if _alive(p)} == {fourth}


@pytest.mark.slow
def test_a_request_in_flight_when_the_engine_is_killed_is_answered_in_process(cache):
    env = _env(cache)
    assert run(["engine", "start", "--no-warm"], env)[0] == 0  # Spark not started: the request starts it
    pid = _engine_pid(env)
    argv = ["history", str(BUSY), "--json", "--no-cache"]
    client = subprocess.Popen(CLI + argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=str(SAMPLE_LOGS))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        rc, out, _ = run(["engine", "status"], env)
        if out.startswith(f"engine pid {pid}: busy"):
            break
        time.sleep(0.1)
    else:
        pytest.fail("the engine never took the request")
    os.kill(pid, signal.SIGKILL)
    out, err = client.communicate(timeout=300)
    assert client.returncode == 0, err
    assert "Traceback" not in err
    local = run(argv + ["--no-engine"], env)
    assert json.loads(out) == json.loads(local[1])
    assert not _alive(pid)
    assert _pids(cache) == set() or pid not in _pids(cache)  # the client answered in-process: no engine restarted for it


# ---- what the engine is given, and what the client imports -----------------------------------


def test_the_engine_never_receives_credentials(cache):
    canary = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY-canary"
    env = _env(cache, AWS_SECRET_ACCESS_KEY=canary, AZURE_STORAGE_ACCOUNT_KEY=canary, MY_SERVICE_TOKEN=canary)
    assert run(["engine", "start", "--no-warm"], env)[0] == 0
    pid = _engine_pid(env)
    environ = Path(f"/proc/{pid}/environ").read_bytes()
    assert canary.encode() not in environ
    assert canary.encode() not in b"".join(p.read_bytes() for p in _place(cache).iterdir() if p.is_file())
    # A command with storage options runs in-process: the engine serves nothing for it.
    rc, _, err = run(["explain-error", "--error-file", str(MERGE / "error.txt"),
                      "--storage-option", f"AWS_SECRET_ACCESS_KEY={canary}"], env)
    assert rc == 0 and canary not in err
    assert _served(env) == 0
    assert run(["explain-error", "--error-file", str(MERGE / "error.txt")], env)[0] == 0
    assert _served(env) == 1  # the same command without them: the engine's


def test_the_client_imports_no_spark_polars_or_arrow(cache):
    env = _env(cache)
    assert run(["engine", "start", "--no-warm"], env)[0] == 0
    probe = ("import sys; from forensics.cli.main import main; "
             "code = main(['explain-error', '--error-file', %r, '--json']); "
             "heavy = sorted(m for m in ('pyspark', 'polars', 'pyarrow', 'py4j', 'numpy') if m in sys.modules); "
             "print('HEAVY', heavy, code, file=sys.stderr)") % str(MERGE / "error.txt")
    p = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert "HEAVY [] 0" in p.stderr, p.stderr
    assert json.loads(p.stdout)
    assert _served(env) == 1  # the engine answered it


def test_routing_keeps_credentials_and_other_sparks_in_process(monkeypatch):
    from forensics.cli.main import build_parser
    from forensics.engine.key import current_key
    from forensics.engine.routing import route

    def where(*argv: str) -> tuple[bool, str]:
        args = build_parser(list(argv)).parse_args(list(argv))
        r = route(args, list(argv))
        return r.engine, r.why

    q = str(QUICK)
    monkeypatch.delenv("DELTA_FORENSICS_ENGINE", raising=False)
    assert where("history", q)[0]
    assert not where("history", q, "--no-engine")[0]
    assert not where("--no-engine", "history", q)[0]
    assert not where("history", q, "--storage-option", "AWS_REGION=x")[0]
    assert not where("history", q, "--profile", "prod")[0]
    assert not where("history", q, "--master", "spark://h:7077")[0]
    assert not where("history", "s3://bucket/t")[0]
    assert not where("explain-error", q, "--error-file", "s3://bucket/err.txt")[0]
    assert not where("history", q, "--conf", "spark.hadoop.fs.s3a.secret.key=x")[0]
    assert not where("history", "main.sales.orders")[0]  # a catalog name
    assert not where("stats", q, "main.sales.orders")[0]
    assert not where("tui", q)[0] and not where("synth", "/tmp/x")[0]
    argv = ["history", q, "--conf", "spark.sql.shuffle.partitions=3", "--conf", "spark.driver.memory=3g"]
    r = route(build_parser(argv).parse_args(argv), argv)
    assert r.engine and r.runtime_conf == {"spark.sql.shuffle.partitions": "3"} and r.static_conf == {"spark.driver.memory": "3g"}
    plain = current_key({}, "/c").digest()
    assert current_key({"spark.driver.memory": "3g"}, "/c").digest() != plain  # another engine
    assert current_key({}, "/other-cache").digest() != plain
    monkeypatch.setenv("COLUMNS", "33")  # the terminal travels with each request: not a reason for another engine
    assert current_key({}, "/c").digest() == plain
    monkeypatch.setenv("DELTA_FORENSICS_DRIVER_MEMORY", "5g")
    assert current_key({}, "/c").digest() != plain
    monkeypatch.setenv("DELTA_FORENSICS_ENGINE", "off")
    assert where("history", q) == (False, "DELTA_FORENSICS_ENGINE=off")


# ---- an answer's bytes on their way: streamed by the engine, held by the client -----------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([1, 2]), st.binary(max_size=3000)), max_size=40))
def test_the_client_holds_an_answer_byte_for_byte_in_order(writes):
    """forensics/engine/client.py HeldOutput: what goes in comes out, per stream, in order."""
    from forensics.engine import client
    from forensics.engine.protocol import Output

    held = client.HeldOutput()
    for i in range(0, len(writes), 3):
        held.add(Output([(fd, bytearray(b)) for fd, b in writes[i:i + 3]]))
    got = list(held.chunks)
    assert [(fd, b) for fd, b in got if b] == [(fd, b) for fd, b in writes if b]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([1, 2]), st.binary(max_size=3000)), max_size=40), st.integers(1, 4096))
def test_output_frames_carry_the_bytes_as_they_are(writes, frame_bytes):
    """forensics/engine/protocol.py: the engine's `output` frames (a header, then raw bytes, split
    at the frame size) arrive in the client's HeldOutput byte for byte, per stream, in order."""
    import socket
    import threading

    from forensics.engine import client, protocol
    from forensics.engine.protocol import Output, output_header, receive, receive_bytes

    a, b = socket.socketpair()
    out = Output([(fd, bytearray(x)) for fd, x in writes])
    old = protocol.OUTPUT_FRAME_BYTES
    protocol.OUTPUT_FRAME_BYTES = frame_bytes
    try:
        sender = threading.Thread(target=lambda: (out.send(a), protocol.send(a, {"status": "done"})))
        sender.start()
        held = client.HeldOutput()
        while (m := receive(b))["status"] == "output":
            fd, n = output_header(m)
            assert n <= frame_bytes
            held.add_stream(fd, n, receive_bytes(b, n))
        sender.join()
    finally:
        protocol.OUTPUT_FRAME_BYTES = old
        a.close(), b.close()
    got = [(fd, x) for fd, x in held.chunks]
    for stream in (1, 2):
        assert b"".join(x for fd, x in got if fd == stream) == b"".join(x for fd, x in writes if fd == stream)
    assert _turns([fd for fd, x in got if x]) == _turns([fd for fd, x in writes if x])  # stdout and stderr interleave as written


def _turns(streams: list[int]) -> list[int]:
    return [k for i, k in enumerate(streams) if i == 0 or streams[i - 1] != k]


@pytest.mark.parametrize("header", [{"fd": 3, "bytes": 1}, {"fd": 1, "bytes": -1}, {"fd": 1, "bytes": (4 << 20) + 1},
                                    {"fd": 1, "bytes": "9"}, {"fd": True, "bytes": 1}, {"bytes": 1}])
def test_an_output_header_out_of_bounds_is_refused_before_any_read(header):
    from forensics.engine.protocol import ProtocolError, output_header

    with pytest.raises(ProtocolError):
        output_header({"status": "output", **header})


def test_the_engine_hands_on_each_frame_while_the_command_writes(monkeypatch):
    """forensics/engine/isolation.py Capture with a sink: from OUTPUT_FRAME_BYTES written, the
    output leaves the capture (the engine sends it), so a long answer is never held whole."""
    from forensics.engine import isolation, protocol
    from forensics.engine.protocol import Request

    monkeypatch.setattr(isolation, "OUTPUT_FRAME_BYTES", 1000)
    sent: list = []
    capture = isolation.Capture(Request(op="run", token="", key=""), sent.append)
    text = "".join(f"{i:05d}é\n" for i in range(2000))  # 16,000 bytes, non-ASCII
    for line in text.splitlines(keepends=True):
        capture.write(1 if line[0] != "9" else 2, line)
    assert len(sent) >= 10 and capture.held < 1000
    whole = [(fd, bytes(b)) for out in sent + [capture.output] for fd, b in out.chunks]
    assert b"".join(b for fd, b in whole if fd == 1).decode() == "".join(x for x in text.splitlines(keepends=True) if x[0] != "9")
    assert b"".join(b for fd, b in whole if fd == 2).decode() == "".join(x for x in text.splitlines(keepends=True) if x[0] == "9")
    assert protocol.OUTPUT_FRAME_BYTES == 4 << 20  # the module's own constant is untouched
