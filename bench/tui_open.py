"""Benchmark the TUI on a large log: rows visible after launch (uncached and cached), then
keypress-to-repaint while scrolling.

A synthetic delta-spark-format log of N commits is written with `forensics.synth` (log only).
Three openings, each in a fresh headless app:
- uncached: an empty cache directory; Spark is held back (its factory waits until the measurement
  is over), so the figure is what the user sees before the parse: the listed versions (their
  names first, then with their commit files' times);
- parse: the same app let go, until the parsed rows replace the listed ones (JVM start + parse);
- cached: a second app over the cache the parse wrote (no JVM): rows visible (the listed ones
  first), then the cached rows in their place.
The interpreter's own start and `import tui.app` are measured apart, in a subprocess, and added
for "launch to rows". A row counts as visible in the first frame the app composes with it (timed
from the app's start, Textual's start-up included), not when Pilot next finds the loop idle. Prints one JSON object; BENCHMARKS.md records the figures.

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


async def measure(n: int, presses: int, size: tuple[int, int]) -> dict:
    from forensics.synth.generate import SynthConfig, synthesize

    work = Path(tempfile.mkdtemp(prefix="tui-bench-"))
    os.environ["DELTA_FORENSICS_CACHE_DIR"] = str(work / "cache")
    table = work / "table"
    t = time.perf_counter()
    synthesize(table, SynthConfig(commits=n, partitions=8, checkpoint_interval=0, files_per_commit=1, seed=7))
    synth_s = time.perf_counter() - t

    from forensics.runtime.spark import get_spark
    from tui.app import ForensicsApp
    from tui.widgets.version_list import VersionList

    gate = threading.Event()

    def held_spark():
        gate.wait()
        return get_spark(master="local[2]")

    out: dict = {"bench": "tui_open", "versions": n, "terminal": list(size), "synthesize_s": round(synth_s, 1)}
    out["interpreter_and_import_s"], out["import_tui_app_s"] = import_seconds()

    app = ForensicsApp(str(table), utc=True, replay=False, spark_factory=held_spark)
    frames = frame_clock(app)
    t0 = time.perf_counter()  # the app's start: Textual's own start-up counts
    async with app.run_test(size=size) as pilot:
        out["uncached_rows_visible_s"] = round(await first_frame(frames, t0, lambda s: s[0]), 3)
        out["uncached_listed_times_visible_s"] = round(await first_frame(frames, t0, lambda s: s[0] and s[1]), 3)
        gate.set()
        out["uncached_parsed_rows_s"] = round(await first_frame(frames, t0, lambda s: not s[0]), 1)
    out["uncached_parse_note"] = "includes the JVM start and the parse of every commit (the cache is written then)"

    app = ForensicsApp(str(table), utc=True, replay=False, spark_factory=lambda: (_ for _ in ()).throw(AssertionError("no JVM")))
    frames = frame_clock(app)
    t0 = time.perf_counter()
    async with app.run_test(size=size) as pilot:
        out["cached_rows_visible_s"] = round(await first_frame(frames, t0, lambda s: True), 3)
        out["cached_parsed_rows_s"] = round(await first_frame(frames, t0, lambda s: not s[0]), 3)
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
    out["launch_to_rows_s"] = {k: round(out["interpreter_and_import_s"] + out[f"{k}_rows_visible_s"], 3) for k in ("uncached", "cached")}
    out["keypress_to_repaint_ms"] = {k: {"n": len(v), "median": round(statistics.median(v), 2), "p95": round(pct(v, 95), 2)}
                                     for k, v in lat.items() if v}
    out["list_move_and_render_ms"] = {"n": len(direct), "median": round(statistics.median(direct), 3), "p95": round(pct(direct, 95), 3)}
    out["note"] = ("uncached: the listed versions (number, file time) before Spark has read a commit; cached: the parsed rows "
                   "from the cache; keypress_to_repaint_ms is a headless Pilot round trip (includes Pilot's fixed waits); "
                   "list_move_and_render_ms is the app's own work per key")
    shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--versions", type=int, default=100_000)
    ap.add_argument("--presses", type=int, default=200)
    ap.add_argument("--width", type=int, default=200)
    ap.add_argument("--height", type=int, default=50)
    a = ap.parse_args()
    print(json.dumps(asyncio.run(measure(a.versions, a.presses, (a.width, a.height)))))


if __name__ == "__main__":
    main()
