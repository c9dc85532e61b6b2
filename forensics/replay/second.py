"""A long log's windows replayed in two processes: this one and a child of its own.

Replay is plain Python per window (records, read sets, checks): at 1,000,000 commits one core
works for over a minute while the other sits idle. Past `MIN_WINDOWS`, the later half of the
windows goes to a child (`python -m forensics.replay.second DIR PID`: a fresh interpreter, not a fork
of a process holding polars' threads or a JVM's gateway; no storage credentials, as every child of
the tool, `forensics.runtime.children`). It is handed only what its windows need, as Arrow IPC
files in a private directory of the tool's cache that it maps rather than copies: the commits and file
actions of its versions, every file lifetime that overlaps them, the metaData and protocol in
force, and which commits are copies of others. Its verdicts come back as JSON (nothing is
unpickled) without their window results' checks (millions of them at 1,000,000 commits: more to
send and decode than to replay). Neither process keeps the checks of its half: a window's result
is replayed again when a reader opens it (explain, a view of one commit). Every field equals the
in-process replay's (`tests/test_replay_second.py`). If the child fails or outlives its time in
any way, this process replays that half itself, so the report never depends on the child.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import fields
from functools import partial
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.ipc as pa_ipc

from forensics.log.delta_log import DeltaLog
from forensics.replay.verdict import CommitVerdict, Window, first_needed, has_result, rebuilt_result, replay_windows
from forensics.rules.results import WindowResult
from forensics.runtime.children import child_environment
from forensics.runtime.gc_tuning import fewer_collections
from forensics.runtime.halves import cores
from forensics.runtime.logs import logger
from forensics.runtime.spill import new_scratch_dir
from forensics.sets.commit_sets import StateIndex
from forensics.sets.lifetimes import FileLifetimes

# Below this many windows (0.8-1.5 ms each) the replay takes a few seconds: not worth a child's start
# (~1 s) and the files it reads.
MIN_WINDOWS = 5_000

# The share of the windows this process replays (percent): the child starts only once its inputs
# are written and its answer is read after, a tenth of its half at 1,000,000 commits (BENCHMARKS.md).
HERE_SHARE = 56

# The child waits this long at least for its half, and otherwise three times what this process
# took for its own; past that it is stopped and its half replayed here.
MIN_WAIT_S = 60.0

PYTHON = sys.executable


def replay_in_two(log: DeltaLog, state: StateIndex, windows: list[Window], rules: str | None,
                  isolation_level: str | None) -> dict[int, CommitVerdict]:
    """Every window's verdict, in window order; the later half from a child when there are enough."""
    n = len(windows)
    if n == 0 or n < MIN_WINDOWS or cores() < 2:
        return replay_windows(log, state, windows, rules, isolation_level)
    h = n * HERE_SHARE // 100
    state.lifetimes  # built once, here: the child is handed the part it needs
    try:
        child = _Child(log, state, windows[h:], rules, isolation_level)
    except OSError as e:
        logger.info("no second process for the replay (%s); replayed in this one", e)
        return replay_windows(log, state, windows, rules, isolation_level)
    child.start()
    try:
        t0 = time.monotonic()
        mine = replay_windows(log, state, windows[:h], rules, isolation_level, keep_results=False)
        t1 = time.monotonic()
        theirs = child.verdicts(max(MIN_WAIT_S, 3 * (t1 - t0)))
        logger.info("replay in two processes: %d window(s) here in %.1f s, %d in the child, answered %.1f s later",
                    h, t1 - t0, n - h, time.monotonic() - t1)
    finally:
        child.close()
    if theirs is None:
        theirs = replay_windows(log, state, windows[h:], rules, isolation_level, keep_results=False)
    mine.update(theirs)
    return mine


# --------------------------------------------------------------------------------------
# This process's side: the files, the child, its answer
# --------------------------------------------------------------------------------------


class _Child:
    """The child's half: its files written and the child started in a thread (polars writes
    without the GIL while this process replays its own half)."""

    def __init__(self, log: DeltaLog, state: StateIndex, windows: list[Window], rules: str | None,
                 isolation_level: str | None):
        self.dir = new_scratch_dir()  # in the tool's cache: a temporary file system may be memory, and small
        self.proc: subprocess.Popen | None = None
        self.failed: str | None = None
        self._args = (log, state, windows, rules, isolation_level)
        self._versions = [v for v, _ in windows]
        self._rebuild = (log, state, rules, isolation_level)
        self._thread = threading.Thread(target=self._run, name="replay-second", daemon=True)
        self._lock = threading.Lock()
        self._closed = False

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            write_inputs(self.dir, *self._args)
            with self._lock:
                if self._closed:
                    return
                with open(self.dir / "verdicts.jsonl", "wb") as out, open(self.dir / "stderr.txt", "wb") as err:
                    self.proc = subprocess.Popen(
                        [PYTHON, "-m", "forensics.replay.second", str(self.dir), str(os.getpid())],
                        stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=child_environment())
        except Exception as e:  # noqa: BLE001 - any failure: this process replays the half itself
            self.failed = f"{type(e).__name__}: {e}"
        finally:
            self._args = None  # type: ignore[assignment]

    def verdicts(self, wait_s: float) -> dict[int, CommitVerdict] | None:
        """The child's verdicts, or None (logged) when it failed or took longer than `wait_s`."""
        deadline = time.monotonic() + wait_s
        self._thread.join(max(0.0, deadline - time.monotonic()))
        why = self.failed
        if why is None and self.proc is None:
            why = "its inputs were not written in time"
        if why is None:
            assert self.proc is not None
            try:
                rc = self.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                why = f"no answer within {wait_s:.0f} s"
            else:
                if rc != 0:
                    last = ((self.dir / "stderr.txt").read_text("utf-8", "replace").strip().splitlines() or [""])[-1]
                    why = f"exit {rc}: {last[:200]}"
        if why is None:
            try:
                with open(self.dir / "verdicts.jsonl", "rb") as f:
                    out = {}
                    for line in f:
                        d = json.loads(line)
                        out[d["version"]] = verdict_from_wire(d, partial(rebuilt_result, d["version"], *self._rebuild))
                if list(out) == self._versions:
                    return out
                why = f"{len(out)} verdict(s) for {len(self._versions)} window(s)"
            except (OSError, ValueError, TypeError, KeyError) as e:
                why = f"unreadable answer ({type(e).__name__}: {e})"
        logger.info("the second process's half of the replay failed (%s); replayed in this one", why)
        return None

    def close(self) -> None:
        with self._lock:
            self._closed = True
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._thread.join()
        shutil.rmtree(self.dir, ignore_errors=True)


def write_inputs(root: Path, log: DeltaLog, state: StateIndex, windows: list[Window], rules: str | None,
                 isolation_level: str | None) -> None:
    """What the child's windows read, nothing more: versions lo..hi of the commits and file actions,
    the lifetimes that overlap them, the state in force, the copies."""
    lo, hi = first_needed(windows)[0], windows[-1][0]
    in_range = pl.col("version").is_between(lo, hi)
    lt = state.lifetimes
    for name, frame, keep in (
        ("commits", log.commits, in_range),
        ("actions", log.actions, in_range),
        ("others", log.others, in_range & pl.col("kind").is_in(["metaData", "protocol"])),  # all a write set reads
        ("lifetimes", lt.frame, (pl.col("added") <= hi) & (pl.col("removed") >= lo)),
    ):
        if frame.width == 0:  # no lifetimes at all
            frame.write_ipc(root / f"{name}.arrow")
        else:  # streamed: no copy of the kept rows in this process
            frame.lazy().filter(keep).sink_ipc(root / f"{name}.arrow")
    versions = {v for v, _ in windows}
    header = {
        "location": log.location,
        "windows": windows,
        "rules": rules,
        "isolationLevel": isolation_level,
        "knownFrom": lt.known_from,
        "copies": [[v, o] for v, o in log.copies.items() if v in versions],
        **{k: [[v, json.dumps(x.to_dict())] for v, x in xs] for k, xs in state.in_force().items()},
    }
    (root / "header.json").write_text(json.dumps(header), "ascii")


# --------------------------------------------------------------------------------------
# The child's side
# --------------------------------------------------------------------------------------


def replay_inputs(root: Path) -> list[CommitVerdict]:
    """The verdicts of the windows `write_inputs` wrote to `root`, in their order."""
    header = json.loads((root / "header.json").read_text("ascii"))
    read = lambda name: _mapped(root / f"{name}.arrow")  # noqa: E731
    log = DeltaLog.part(header["location"], read("commits"), read("actions"), read("others"),
                        {v: o for v, o in header["copies"]})
    lifetimes = FileLifetimes(read("lifetimes"), header["knownFrom"], [])
    state = StateIndex.given(log, header["metaData"], header["protocol"], lifetimes)
    windows = [(v, rv) for v, rv in header["windows"]]
    with fewer_collections():
        verdicts = replay_windows(log, state, windows, header["rules"], header["isolationLevel"], keep_results=False)
    return [verdicts[v] for v, _ in windows]


def _mapped(path: Path) -> pl.DataFrame:
    """The frame in an IPC file, its buffers the file's pages (polars' own reader copies them all:
    a gigabyte more at 1,000,000 commits)."""
    return pl.from_arrow(pa_ipc.open_file(pa.memory_map(str(path))).read_all(), rechunk=False)  # type: ignore[return-value]


def _orphaned_exit(parent: int) -> None:
    """Stop when the process that started this one is gone (killed mid-replay): no one will read
    the answer, and its directory is swept by the next one."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(3)


def _main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].isdigit() or not Path(argv[0], "header.json").exists():
        print(f"not a replay directory and a parent's pid: {argv!r}", file=sys.stderr)
        return 2
    threading.Thread(target=_orphaned_exit, args=(int(argv[1]),), name="parent-watch", daemon=True).start()
    out = sys.stdout
    for v in replay_inputs(Path(argv[0])):
        out.write(json.dumps(verdict_to_wire(v)))  # ensure_ascii: lone surrogates cross intact
        out.write("\n")
    out.flush()
    return 0


# --------------------------------------------------------------------------------------
# A verdict as JSON and back
# --------------------------------------------------------------------------------------


def verdict_to_wire(v: CommitVerdict) -> dict[str, Any]:
    """Every field of the verdict by name but its window result, which only says whether there is one:
    two million checks at 1,000,000 commits cost more to send and decode than to replay."""
    d = {f.name: getattr(v, f.name) for f in fields(v) if f.name != "result"}
    d["result"] = has_result(v)
    return d


def verdict_from_wire(d: dict[str, Any], result: Callable[[], WindowResult | None]) -> CommitVerdict:
    """The verdict `verdict_to_wire` was given, its window result computed by `result` on first use."""
    return CommitVerdict(**{**d, "result": result if d["result"] else None})


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
