"""Benchmark the TUI on a 100k-version table: first paint and keypress-to-repaint while scrolling.

The commit index is synthesized with polars in forensics.log.index.COMMIT_SCHEMA shape (no JVM,
no commit files), handed to the app as an opened DeltaLog, and the app runs headless. Prints
one JSON object; the lead records the figures in BENCHMARKS.md.

    python bench/tui_open.py [--versions 100000] [--presses 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from forensics.log.index import COMMIT_SCHEMA  # noqa: E402
from forensics.log.listing import LogListing  # noqa: E402
from forensics.log.reader import ACTION_COLUMNS, OTHER_COLUMNS, arrow_schema  # noqa: E402
from forensics.log.delta_log import DeltaLog  # noqa: E402


def synthetic_log(n: int, root: str) -> DeltaLog:
    """n commits: WRITE/MERGE/OPTIMIZE/DELETE in turn, a third with a stale readVersion."""
    v = pl.Series(range(n), dtype=pl.Int64)
    ops = pl.Series(["WRITE", "MERGE", "OPTIMIZE", "DELETE"] * (n // 4 + 1))[:n]
    cols = {k: pl.Series([None] * n, dtype=t) for k, t in COMMIT_SCHEMA.items()}
    cols.update(
        version=v, source=pl.Series(["commit"] * n), timestamp=v * 1000 + 1_700_000_000_000, operation=ops,
        operation_parameters=pl.Series(['{"mode":"Append"}'] * n), read_version=(v - 1 - (v % 3)).clip(lower_bound=0),
        isolation_level=pl.Series(["WriteSerializable"] * n), is_blind_append=(ops == "WRITE"),
        num_add=pl.Series([1] * n, dtype=pl.Int64), num_remove=pl.Series([0] * n, dtype=pl.Int64), num_cdc=pl.Series([0] * n, dtype=pl.Int64),
        partitions_touched=pl.Series(["[]"] * n), txn_app_ids=pl.Series(["{}"] * n), domains=pl.Series(["[]"] * n),
        has_commit_info=pl.Series([True] * n), has_metadata=pl.Series([False] * n), has_protocol=pl.Series([False] * n),
        has_txn=pl.Series([False] * n), has_domain_metadata=pl.Series([False] * n), txn_id=pl.Series([f"txn-{i:08d}" for i in range(n)]),
        engine_info=pl.Series(["Apache-Spark/3.5.1 Delta-Lake/3.2.0"] * n),
    )
    commits = pl.DataFrame(cols, schema=COMMIT_SCHEMA)
    actions = pl.from_arrow(arrow_schema(ACTION_COLUMNS).empty_table())
    others = pl.from_arrow(arrow_schema(OTHER_COLUMNS).empty_table())
    return DeltaLog(location=root, listing=LogListing(table_uri=root, log_uri=root + "/_delta_log"), commits=commits, actions=actions, others=others, from_cache=True)


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


async def measure(n: int, presses: int, size: tuple[int, int]) -> dict:
    from tui.app import ForensicsApp
    from tui.widgets.version_list import VersionList

    root = tempfile.mkdtemp(prefix="tui-bench-")
    t_build = time.perf_counter()
    log = synthetic_log(n, root)
    build_s = time.perf_counter() - t_build
    app = ForensicsApp(root, log=log, utc=True, replay=False)
    t0 = time.perf_counter()
    async with app.run_test(size=size) as pilot:
        while app.rows is None:
            await pilot.pause(0.001)
        await pilot.pause()  # one refresh with the rows in place
        first_paint = time.perf_counter() - t0
        vl = app.query_one(VersionList)
        await pilot.press("g")
        lat: dict[str, list[float]] = {"j": [], "pagedown": [], "G/g": []}
        for key in ["j"] * presses + ["pagedown"] * (presses // 4):
            t = time.perf_counter()
            await pilot.press(key)
            await pilot.pause()  # until the repaint is processed
            lat[key].append((time.perf_counter() - t) * 1000)
        for key in ["G", "g"] * 10:
            t = time.perf_counter()
            await pilot.press(key)
            await pilot.pause()
            lat["G/g"].append((time.perf_counter() - t) * 1000)
        assert vl.current_version == 0
        # Our own cost per keypress, without Pilot's fixed waits: move + render every visible line.
        direct: list[float] = []
        for _ in range(presses):
            t = time.perf_counter()
            vl.action_cursor(1)
            for y in range(vl.size.height):
                vl.render_line(y)
            direct.append((time.perf_counter() - t) * 1000)
        detail: list[float] = []
        for _ in range(20):
            t = time.perf_counter()
            app.refresh_panes()
            detail.append((time.perf_counter() - t) * 1000)
        svg_t = time.perf_counter()
        app.export_screenshot()
        full_render_ms = (time.perf_counter() - svg_t) * 1000
    return {
        "bench": "tui_open",
        "versions": n,
        "terminal": list(size),
        "synthesize_s": round(build_s, 3),
        "first_paint_s": round(first_paint, 3),
        "keypress_to_repaint_ms": {k: {"n": len(v), "median": round(statistics.median(v), 2), "p95": round(pct(v, 95), 2)} for k, v in lat.items() if v},
        "list_move_and_render_ms": {"n": len(direct), "median": round(statistics.median(direct), 3), "p95": round(pct(direct, 95), 3)},
        "detail_pane_refresh_ms": {"n": len(detail), "median": round(statistics.median(detail), 2), "p95": round(pct(detail, 95), 2)},
        "full_screen_render_ms": round(full_render_ms, 2),
        "note": "keypress_to_repaint_ms is a headless Pilot round trip (press + pause: includes Pilot's fixed waits, ~100 ms even at 20 versions); list_move_and_render_ms is the app's own work per key; the detail pane refresh is debounced (50 ms) while keys repeat",
    }


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
