"""Benchmark the TUI on a large log: launch to rows (uncached and cached), then keypress-to-repaint
while scrolling.

A synthetic delta-spark-format log of N commits is written with `forensics.synth` (log only).
- launch to rows: LAUNCHES fresh processes of each kind (`--launch uncached|cached`), each timed
  from its spawn (the interpreter's start, `import tui.app` and Textual's start-up count) to the
  first frame the app composes with rows in its version list, not when Pilot next finds the loop
  idle; the figure is their median. Uncached: an empty cache directory of its own, Spark held back
  (its factory waits until the measurement is over), so the rows are the listed versions (their
  names first, then with their commit files' times). Cached: the cache the parse below wrote (no
  JVM): the listed rows first, then the cached rows in their place.
- parse: an app in this process over an empty cache, let go, until the parsed rows replace the
  listed ones (JVM start + parse); it writes the cache the cached launches read.
- keys: an app in this process over that cache.
`import tui.app` in a fresh interpreter is also measured apart. Prints one JSON object;
BENCHMARKS.md records the figures.

    python bench/tui_open.py [--versions 100000] [--presses 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def import_seconds(runs: int = 3) -> tuple[float, float]:
    """A fresh interpreter's start plus `import tui.app` (what `delta-forensics tui` pays before the
    App runs): the median of `runs` fresh interpreters, as one start varies by a third here."""
    code = "import time; t = time.perf_counter(); import tui.app; print(time.perf_counter() - t)"
    whole, imports = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
        whole.append(time.perf_counter() - t0)
        imports.append(float(out.stdout.strip()))
    return round(statistics.median(whole), 3), round(statistics.median(imports), 3)


class FrameClock(list):
    """Every frame the app composes, timed, with what the version list held then: (provisional,
    times shown) or None. Headless, a frame is composed as for a terminal and not written; the
    frame, not Pilot's wait for an idle loop (which a busy worker thread stretches), is what a user
    would see. `composed` is set at each frame, so waiting for one costs the app nothing (polling
    with Pilot's pause walked every widget each 5 ms, on the thread that paints)."""

    def __init__(self) -> None:
        super().__init__()
        self.composed = asyncio.Event()


def frame_clock(app) -> FrameClock:
    from tui.widgets.version_list import VersionList

    frames = FrameClock()
    display = app._display  # noqa: SLF001 - the one place a composed frame leaves the app

    def timed(screen, renderable):
        if renderable is not None:
            lists = app.screen.query(VersionList)
            rows = lists.first().rows if lists else None
            state = (rows.provisional, rows.timestamp[-1] is not None) if rows is not None and len(rows) else None
            frames.append((time.perf_counter(), state))
            frames.composed.set()
        return display(screen, renderable)

    app._display = timed  # noqa: SLF001
    return frames


async def first_frame(frames: FrameClock, t0: float, want, timeout: float = 600.0) -> float:
    """Seconds from t0 to the first composed frame whose list state satisfies `want`."""
    while time.perf_counter() - t0 < timeout:
        hit = next((t for t, state in frames if state is not None and want(state)), None)
        if hit is not None:
            return hit - t0
        frames.composed.clear()
        try:
            await asyncio.wait_for(frames.composed.wait(), timeout=1.0)
        except asyncio.TimeoutError:
            pass
    raise TimeoutError("no frame showed the rows")


# Fresh processes timed for each kind of launch (the median is the figure): one start varies by a
# third on this machine, and a launch is a new process, so openings in one process would flatter it.
LAUNCHES = 3


def held(gate: threading.Event, *, parse: bool):
    """A Spark factory that waits for `gate`, then starts Spark (`parse`) or fails the opening
    (one that only measured its listed rows)."""
    def factory():
        gate.wait()
        if not parse:
            raise RuntimeError("this opening measured the listed rows only")
        from forensics.runtime.spark import get_spark

        return get_spark(master="local[2]")
    return factory


def no_jvm():
    """The Spark factory of an opening over the cache: it must never be called."""
    raise AssertionError("no JVM")


async def launch(table: str, kind: str, size: tuple[int, int]) -> dict:
    """One opening in this (fresh) process: monotonic clock readings of its first frames, for
    the parent that spawned it to subtract its spawn time from (one clock for every process)."""
    from tui.app import ForensicsApp

    gate = threading.Event()
    factory = held(gate, parse=False) if kind == "uncached" else no_jvm
    app = ForensicsApp(table, utc=True, replay=False, spark_factory=factory)
    frames = frame_clock(app)
    t0 = time.perf_counter()
    out: dict = {}
    async with app.run_test(size=size):
        rows = await first_frame(frames, t0, lambda s: kind == "cached" or s[0])
        filled = await first_frame(frames, t0, (lambda s: s[0] and s[1]) if kind == "uncached" else (lambda s: not s[0]))
        gate.set()
    now_mono, now_perf = time.monotonic(), time.perf_counter()
    out["rows_at"] = now_mono - (now_perf - t0 - rows)
    out["filled_at"] = now_mono - (now_perf - t0 - filled)
    return out


def timed_launches(table: Path, kind: str, size: tuple[int, int], cache_dirs: list[Path]) -> tuple[list[float], list[float]]:
    """(spawn to rows, spawn to listed times / parsed rows) of one fresh process per cache dir."""
    rows, filled = [], []
    for d in cache_dirs:
        env = {**os.environ, "DELTA_FORENSICS_CACHE_DIR": str(d), "DELTA_FORENSICS_ENGINE": "off"}
        cmd = [sys.executable, str(Path(__file__).resolve()), "--launch", kind, "--table", str(table),
               "--width", str(size[0]), "--height", str(size[1])]
        spawned = time.monotonic()
        got = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=True)
        r = json.loads(got.stdout.strip().splitlines()[-1])
        rows.append(round(r["rows_at"] - spawned, 3))
        filled.append(round(r["filled_at"] - spawned, 3))
    return rows, filled


async def measure(n: int, presses: int, size: tuple[int, int]) -> dict:
    from forensics.synth.generate import SynthConfig, synthesize

    work = Path(tempfile.mkdtemp(prefix="tui-bench-"))
    os.environ["DELTA_FORENSICS_CACHE_DIR"] = str(work / "cache")
    table = work / "table"
    t = time.perf_counter()
    synthesize(table, SynthConfig(commits=n, partitions=8, checkpoint_interval=0, files_per_commit=1, seed=7))
    synth_s = time.perf_counter() - t

    from tui.app import ForensicsApp
    from tui.widgets.version_list import VersionList

    out: dict = {"bench": "tui_open", "versions": n, "terminal": list(size), "synthesize_s": round(synth_s, 1)}
    out["interpreter_and_import_s"], out["import_tui_app_s"] = import_seconds()

    rows, listed = timed_launches(table, "uncached", size, [work / f"empty-{i}" for i in range(LAUNCHES)])
    out["uncached_launch_to_rows_runs_s"], out["uncached_launch_to_listed_times_runs_s"] = rows, listed

    gate = threading.Event()
    app = ForensicsApp(str(table), utc=True, replay=False, spark_factory=held(gate, parse=True))
    frames = frame_clock(app)
    t0 = time.perf_counter()  # the app's start: Textual's own start-up counts
    async with app.run_test(size=size):
        await first_frame(frames, t0, lambda s: s[0])
        gate.set()
        out["uncached_parsed_rows_s"] = round(await first_frame(frames, t0, lambda s: not s[0]), 1)
    out["uncached_parse_note"] = "from the app's start in this process: the JVM start and the parse of every commit (the cache is written then)"

    rows_c, parsed_c = timed_launches(table, "cached", size, [work / "cache"] * LAUNCHES)
    out["cached_launch_to_rows_runs_s"], out["cached_launch_to_parsed_rows_runs_s"] = rows_c, parsed_c
    out["launch_to_rows_s"] = {"uncached": statistics.median(rows), "cached": statistics.median(rows_c)}
    out["launch_to_listed_times_s"] = statistics.median(listed)
    out["launch_to_cached_parsed_rows_s"] = statistics.median(parsed_c)

    app = ForensicsApp(str(table), utc=True, replay=False, spark_factory=no_jvm)
    frames = frame_clock(app)
    t0 = time.perf_counter()
    async with app.run_test(size=size) as pilot:
        await first_frame(frames, t0, lambda s: not s[0])
        vl = app.screen.query_one(VersionList)
        await pilot.press("g")
        lat: dict[str, list[float]] = {"j": [], "pagedown": [], "G/g": []}
        for key in ["j"] * presses + ["pagedown"] * (presses // 4):
            t = time.perf_counter()
            await pilot.press(key)
            await pilot.pause()
            lat[key].append((time.perf_counter() - t) * 1000)
        for key in ["G", "g"] * 10:
            t = time.perf_counter()
            await pilot.press(key)
            await pilot.pause()
            lat["G/g"].append((time.perf_counter() - t) * 1000)
        direct: list[float] = []
        for _ in range(presses):
            t = time.perf_counter()
            vl.action_cursor(1)
            for y in range(vl.size.height):
                vl.render_line(y)
            direct.append((time.perf_counter() - t) * 1000)
    out["keypress_to_repaint_ms"] = {k: {"n": len(v), "median": round(statistics.median(v), 2), "p95": round(pct(v, 95), 2)}
                                     for k, v in lat.items() if v}
    out["list_move_and_render_ms"] = {"n": len(direct), "median": round(statistics.median(direct), 3), "p95": round(pct(direct, 95), 3)}
    out["note"] = (f"launch_to_rows_s: the median of {LAUNCHES} fresh processes each, from spawn to the first frame with rows "
                   "(uncached: the listed versions before Spark has read a commit; cached: from the cache); "
                   "keypress_to_repaint_ms is a headless Pilot round trip (includes Pilot's fixed waits); "
                   "list_move_and_render_ms is the app's own work per key")
    shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--versions", type=int, default=100_000)
    ap.add_argument("--presses", type=int, default=200)
    ap.add_argument("--width", type=int, default=200)
    ap.add_argument("--height", type=int, default=50)
    ap.add_argument("--launch", choices=["uncached", "cached"], help="(internal) one opening in this process")
    ap.add_argument("--table", help="(internal) the table --launch opens")
    a = ap.parse_args()
    if a.launch:
        print(json.dumps(asyncio.run(launch(a.table, a.launch, (a.width, a.height)))))
        return
    print(json.dumps(asyncio.run(measure(a.versions, a.presses, (a.width, a.height)))))


if __name__ == "__main__":
    main()
