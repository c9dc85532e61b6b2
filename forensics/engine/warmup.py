"""Warm the resident engine's JIT while nobody is waiting for it.

A short-lived JVM is fastest with C1 alone (forensics/runtime/java.py JVM_OPTS); the engine lives
for minutes, so it runs the full tiered JIT (C2), which costs about twice the CPU on a cold JVM's
first log read and about a third less on every read once the hot code is compiled (BENCHMARKS.md).
The engine pays that first price here, on a synthetic log of its own, before a user's command
arrives: it starts its Spark session and reads the log a few times (at least MIN_ROUNDS), until a
round is no longer faster than the fastest before it; then the snapshot of a table whose state is
one 100,000-file checkpoint, the same way: a large checkpoint's read and scratch write run loops a small one never
makes hot (without it, a warm engine's first 1M-file snapshot took 9.8-10.9 s, the next ones
6.5-7.8; after it, 7.8). A command that arrives meanwhile cancels the round in flight and is
served at once; the warm-up does not resume.

The synthetic tables live in the engine's private directory (never near a table), are written
once per engine directory, and are read without the cache. `DELTA_FORENSICS_ENGINE_WARMUP=off`
turns the warm-up off; `DELTA_FORENSICS_ENGINE_WARMUP_COMMITS` sets the log's length and
`DELTA_FORENSICS_ENGINE_WARMUP_FILES` the checkpoint's (0: no checkpoint rounds).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

logger = logging.getLogger(__name__)

# At least reader.SMALL_READ_FILES commits: a first look at a long log runs Spark's generated code,
# and that is the code to compile (a shorter read is interpreted).
COMMITS = 3000
CHECKPOINT_FILES = 100_000
MAX_ROUNDS = 8
# At least this many rounds: C2 compiles the parse's large generated methods in the background,
# and a round it overlaps can be slower than the one before though more is still to compile (a
# bench run's warm-up stopped after 10.2, 2.2, 2.7 s, and its first 20,000-commit look took 5.5 s,
# the next ones 4.3 and 3.4 s).
MIN_ROUNDS = 4
BUDGET_S = 180.0
SETTLED = 0.95  # a round at least this fraction of the fastest before it: compiled enough


def enabled() -> bool:
    return os.environ.get("DELTA_FORENSICS_ENGINE_WARMUP", "on").strip().lower() not in ("off", "0", "no", "false")


def _commits() -> int:
    from forensics.log.reader import SMALL_READ_FILES

    try:
        return max(SMALL_READ_FILES, int(os.environ.get("DELTA_FORENSICS_ENGINE_WARMUP_COMMITS", COMMITS)))
    except ValueError:
        return COMMITS


def _checkpoint_files() -> int:
    try:
        return max(0, int(os.environ.get("DELTA_FORENSICS_ENGINE_WARMUP_FILES", CHECKPOINT_FILES)))
    except ValueError:
        return CHECKPOINT_FILES


@dataclass
class Warmup:
    """What the warm-up did: its state and each round's seconds (`engine status` shows them)."""

    state: str = "pending"  # pending | off | running | done | interrupted | failed
    rounds: list[float] = field(default_factory=list)
    snapshot_rounds: list[float] = field(default_factory=list)  # of the large checkpoint
    why: str = ""
    stop: threading.Event = field(default_factory=threading.Event, repr=False)

    def to_dict(self) -> dict[str, object]:
        return {"state": self.state, "rounds": [round(r, 2) for r in self.rounds],
                "snapshotRounds": [round(r, 2) for r in self.snapshot_rounds], "why": self.why}

    def run(self, home: Path, lock: threading.Lock) -> None:
        """Warm up under `lock` (the engine's one-command-at-a-time lock), a step at a time;
        `self.stop`, set by an arriving command (`interrupt`), ends it."""
        if not enabled():
            self.state = "off"
            return
        self.state = "running"
        started = time.monotonic()
        try:
            table = warm_table(home)
            with lock:
                if not self.stop.is_set():
                    from forensics.runtime.spark import get_spark

                    get_spark()
            self._rounds(lock, started, self.rounds, lambda: read_once(table, self.stop))
            files = _checkpoint_files()
            if files and not self.stop.is_set():
                big = warm_checkpoint_table(home, files)
                self._rounds(lock, started, self.snapshot_rounds, lambda: read_once(big, self.stop))
        except Exception as e:  # noqa: BLE001 - a cancelled job or a failed start: the engine serves as it is
            self.why = f"{type(e).__name__}"
        self.state = "interrupted" if self.stop.is_set() else ("failed" if self.why else "done")
        logger.info("JIT warm-up %s after %d round(s): %s", self.state, len(self.rounds), self.to_dict()["rounds"])

    def _rounds(self, lock: threading.Lock, started: float, rounds: list[float], once: Callable[[], bool]) -> None:
        """Run `once` until a round is no faster than the fastest before it (from the
        MIN_ROUNDS-th), the round limit or the budget is reached, or a command arrives."""
        while not self.stop.is_set() and len(rounds) < MAX_ROUNDS and time.monotonic() - started < BUDGET_S:
            with lock:
                t = time.perf_counter()
                if not once():
                    return
                rounds.append(time.perf_counter() - t)
            if len(rounds) >= MIN_ROUNDS and rounds[-1] >= SETTLED * min(rounds[:-1]):
                return

    def interrupt(self, cancel: Callable[[], None]) -> None:
        """A command arrived: end the warm-up, stopping the round in flight."""
        if self.state == "running" and not self.stop.is_set():
            self.stop.set()
            cancel()


def warm_table(home: Path) -> Path:
    """The synthetic log the warm-up reads, written once into the engine's directory."""
    from forensics.synth.generate import SynthConfig, synthesize

    return _written_once(home / "jit-warmup", lambda out: synthesize(out, SynthConfig(commits=_commits(), seed=0)))


def warm_checkpoint_table(home: Path, files: int) -> Path:
    """A table whose state is one checkpoint of `files` adds, written once into the engine's directory."""
    from forensics.synth.big_checkpoint import write

    return _written_once(home / f"jit-warmup-checkpoint-{files}", lambda out: write(out, files))


def _written_once(path: Path, writer: Callable[[Path], object]) -> Path:
    """`path`, written by `writer` into a temporary sibling and moved in whole, unless it holds a log."""
    if (path / "_delta_log").is_dir():
        return path
    tmp = Path(tempfile.mkdtemp(prefix=".jit-warmup-", dir=path.parent))
    try:
        writer(tmp / "table")
        os.replace(tmp / "table", path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def read_once(table: Path, stop: threading.Event) -> bool:
    """One first look as a command takes it: every commit parsed with Spark (no cache), then the
    latest snapshot from its checkpoint (for both warm-up tables). False: stopped before the end."""
    from forensics.log.delta_log import DeltaLog
    from forensics.log.snapshot import snapshot_frame
    from forensics.runtime.spill import spilling_everything

    if stop.is_set():
        return False
    log = DeltaLog.open(str(table), use_cache=False)
    if stop.is_set():
        return False
    with spilling_everything():  # the path a large checkpoint takes (forensics/runtime/spill.py)
        snapshot_frame(log, log.latest_version, stats=False)
    return not stop.is_set()
