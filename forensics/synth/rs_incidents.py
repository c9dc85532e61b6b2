"""Sample tables written by a real engine: delta-rs (the `deltalake` Python package).

delta-rs stamps its own wall-clock timestamps and random file names, so regenerating gives a
different (equally real) log; the committed output is the reference. Needs `deltalake`
(a dev dependency), imported lazily.
"""

from __future__ import annotations

import json
import random
import threading
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa

from forensics.synth.incidents import Incident


def _engine() -> str:
    import deltalake

    return f"delta-rs {deltalake.__version__} (Python deltalake)"


def _batch(day: date, ids: list[int], status: str = "pending") -> pa.Table:
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "amount": pa.array([round(5.0 + (i * 3.7) % 200, 2) for i in ids], pa.float64()),
        "status": pa.array([status] * len(ids), pa.string()),
        "date": pa.array([day] * len(ids), pa.date32()),
    })


def _parquet_files(table_dir: Path) -> set[str]:
    return {p.relative_to(table_dir).as_posix() for p in table_dir.rglob("*.parquet") if "_delta_log" not in p.parts}


# --------------------------------------------------------------------------------------
# quickstart: a small table with every common operation and a checkpoint
# --------------------------------------------------------------------------------------


def quickstart(out: Path) -> Incident:
    from deltalake import DeltaTable, write_deltalake

    path = out / "table"
    day0 = date(2024, 5, 1)
    write_deltalake(str(path), _batch(day0, list(range(0, 20))), partition_by=["date"])
    next_id = 20
    for k in range(1, 12):
        day = day0 + timedelta(days=k % 4)
        write_deltalake(str(path), _batch(day, list(range(next_id, next_id + 10))), mode="append")
        next_id += 10
    dt = DeltaTable(str(path))
    dt.delete("date = '2024-05-02' AND id < 40")
    dt.update(updates={"status": "'shipped'"}, predicate="date = '2024-05-03' AND id % 2 = 0")
    src = _batch(date(2024, 5, 4), [75, 76, 77, 500, 501], status="returned")
    (dt.merge(src, predicate="t.id = s.id AND t.date = s.date", source_alias="s", target_alias="t")
       .when_matched_update_all().when_not_matched_insert_all().execute())
    dt.optimize.compact(partition_filters=[("date", "=", "2024-05-01")])
    for k in range(3):
        write_deltalake(str(path), _batch(date(2024, 5, 5), list(range(600 + 10 * k, 610 + 10 * k))), mode="append")
    dt = DeltaTable(str(path))
    dt.create_checkpoint()
    write_deltalake(str(path), _batch(date(2024, 5, 5), [700, 701]), mode="append")
    v = DeltaTable(str(path)).version()
    return Incident("quickstart",
                    f"small table partitioned by date, {v + 1} versions: appends, DELETE, UPDATE, MERGE, OPTIMIZE "
                    "compact, a checkpoint", f"written by {_engine()}")


# --------------------------------------------------------------------------------------
# busy: hundreds of versions from a few concurrent writers
# --------------------------------------------------------------------------------------


def busy(out: Path, target_versions: int = 400, seed: int = 7) -> Incident:
    from deltalake import CommitProperties, DeltaTable, write_deltalake
    from deltalake.exceptions import CommitFailedError

    path = str(out / "table")
    days = [date(2024, 4, 1) + timedelta(days=i) for i in range(6)]
    write_deltalake(path, _batch(days[0], [0]), partition_by=["date"],
                    configuration={"delta.checkpointInterval": "100"})
    lock = threading.Lock()
    counter = {"id": 1, "failed": 0, "ops": 0}
    stop = threading.Event()

    def ids(n: int) -> list[int]:
        with lock:
            lo = counter["id"]
            counter["id"] += n
        return list(range(lo, lo + n))

    def props(writer: str) -> Any:
        return CommitProperties(custom_metadata={"writer": writer})

    def guarded(fn: Callable[[], Any]) -> None:
        try:
            fn()
        except CommitFailedError:
            with lock:
                counter["failed"] += 1
        with lock:
            counter["ops"] += 1
            if DeltaTable(path).version() + 1 >= target_versions:
                stop.set()

    def ingest(name: str, rseed: int) -> None:
        rng = random.Random(rseed)
        while not stop.is_set():
            day = rng.choice(days)
            guarded(lambda: write_deltalake(path, _batch(day, ids(rng.randint(2, 6))), mode="append",
                                            commit_properties=props(name)))

    def maintenance(rseed: int) -> None:
        rng = random.Random(rseed)
        while not stop.is_set():
            time.sleep(0.05)
            day = rng.choice(days).isoformat()
            dt = DeltaTable(path)
            r = rng.random()
            if r < 0.3:
                guarded(lambda: dt.delete(f"date = '{day}' AND id % 7 = 0", commit_properties=props("maintenance")))
            elif r < 0.6:
                guarded(lambda: dt.update(updates={"status": "'shipped'"}, predicate=f"date = '{day}' AND id % 5 = 0",
                                          commit_properties=props("maintenance")))
            else:
                guarded(lambda: dt.optimize.compact(partition_filters=[("date", "=", day)],
                                                    commit_properties=props("compactor")))

    threads = [threading.Thread(target=ingest, args=("ingest-a", seed)),
               threading.Thread(target=ingest, args=("ingest-b", seed + 1)),
               threading.Thread(target=maintenance, args=(seed + 2,))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dt = DeltaTable(path)
    dt.optimize.compact()
    # Keep the sample small: drop data files no version at or after the last few needs.
    DeltaTable(path).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    v = DeltaTable(path).version()
    return Incident("busy",
                    f"{v + 1} versions from three concurrent delta-rs writers (ingest-a, ingest-b, maintenance/compactor, "
                    f"named in commitInfo.writer); {counter['failed']} attempts failed with CommitFailedError; "
                    "vacuumed (retention 0) to keep it small, so old versions' data files are gone",
                    f"written by {_engine()} from three Python threads")


# --------------------------------------------------------------------------------------
# (f) real delta-rs conflicts: stale handles lose against fresh ones
# --------------------------------------------------------------------------------------


def f_delta_rs_aborted(out: Path) -> Incident:
    from deltalake import DeltaTable, write_deltalake
    from deltalake.exceptions import CommitFailedError

    table = out / "table"
    path = str(table)
    d1, d2, d3 = date(2024, 8, 1), date(2024, 8, 2), date(2024, 8, 3)
    write_deltalake(path, _batch(d1, list(range(0, 10))), partition_by=["date"])
    write_deltalake(path, _batch(d2, list(range(10, 20))), mode="append")
    write_deltalake(path, _batch(d3, list(range(20, 30))), mode="append")
    read = DeltaTable(path).version()  # R = 2
    stale_handles = [DeltaTable(path, version=read) for _ in range(3)]
    # Winners, each through a fresh handle:
    DeltaTable(path).delete(f"date = '{d2}' AND id < 12")                  # v3: rewrites d2's file
    write_deltalake(path, _batch(d3, list(range(40, 45))), mode="append")  # v4: append into d3
    DeltaTable(path).delete(f"date = '{d1}'")                             # v5: removes d1's file
    attempts: list[dict[str, Any]] = []
    plans = [
        ("DELETE", str(d2), lambda h: h.delete(f"date = '{d2}' AND id > 17")),
        ("UPDATE", str(d3), lambda h: h.update(updates={"amount": "0.0"}, predicate=f"date = '{d3}' AND id >= 25")),
        ("UPDATE", str(d1), lambda h: h.update(updates={"status": "'returned'"}, predicate=f"date = '{d1}' AND id = 3")),
    ]
    for handle, (op, part, fn) in zip(stale_handles, plans):
        before = _parquet_files(table)
        try:
            fn(handle)
            outcome, text = "committed", None
        except CommitFailedError as exc:
            outcome, text = "CommitFailedError", str(exc)
        new = sorted(_parquet_files(table) - before)
        attempts.append({"operation": op, "partition": f"date={part}", "handle_version": read,
                         "outcome": outcome, "error": text, "files_written": new})
    failed = [a for a in attempts if a["outcome"] != "committed"]
    if len(failed) < 2:
        raise RuntimeError(f"expected at least two aborted delta-rs attempts, got {attempts}")
    # The job retries its DELETE on a fresh handle and lands.
    DeltaTable(path).delete(f"date = '{d2}' AND id > 17")
    (out / "error.txt").write_text(failed[0]["error"], encoding="utf-8")
    (out / "attempts.json").write_text(json.dumps(attempts, indent=2) + "\n", encoding="utf-8")
    orphans = tuple(f for a in failed for f in a["files_written"])
    kinds = ", ".join(f"{a['operation']} on {a['partition']}" for a in failed)
    return Incident("f-delta-rs-aborted",
                    f"three stale delta-rs handles pinned at v{read} lost against fresh-handle winners ({kinds} raised "
                    "CommitFailedError; error.txt is the first text, attempts.json all of them); their rewritten data "
                    "files stay as orphans; the DELETE's retry landed last",
                    f"written by {_engine()} (real conflicts)",
                    "error.txt", orphans)
