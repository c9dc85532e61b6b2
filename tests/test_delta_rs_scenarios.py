"""Randomized real races with delta-rs: `whatif --rules delta-rs` must predict what the engine did.

Each scenario builds a real table, pins a DeltaTable handle at read version R, commits 1-2
winners through fresh handles, then runs the stale handle's DELETE / UPDATE / append /
overwrite / OPTIMIZE. Before running it we ask whatif what will happen; then the engine
answers (commit, or CommitFailedError naming the conflict).
"""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest

from deltalake import DeltaTable, write_deltalake  # noqa: E402
from deltalake.exceptions import CommitFailedError  # noqa: E402

from forensics.log.delta_log import DeltaLog  # noqa: E402
from forensics.replay.whatif import WhatIfRequest, whatif  # noqa: E402

# delta-rs CommitConflictError texts (conflict-rules §7.5), mapped to Delta's class names independently of
# forensics.errortext, so a bug there cannot hide one here.
DELTA_RS_TEXTS = {
    "a concurrent transactions added new data": "ConcurrentAppendException",
    "a concurrent transaction deleted data this operation read": "ConcurrentDeleteReadException",
    "a concurrent transaction deleted the same data your transaction deletes": "ConcurrentDeleteDeleteException",
    "Metadata changed since last commit": "MetadataChangedException",
    "Protocol changed since last commit": "ProtocolChangedException",
    "Concurrent transaction failed": "ConcurrentTransactionException",
}
PARTS = ["a", "b", "c"]
N_SCENARIOS = 60


def _batch(part: str, ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([i * 3 for i in ids], pa.int64()), "p": pa.array([part] * len(ids))})


def _outcome(fn) -> str:
    try:
        fn()
        return "commit"
    except CommitFailedError as e:
        text = str(e)
        for needle, name in DELTA_RS_TEXTS.items():
            if needle in text:
                return name
        return "unrecognised: " + text[:120]


def _predicate(rng: random.Random, kind: str) -> str:
    p = rng.choice(PARTS)
    k = rng.choice([5, 15, 25, 35])
    return {"partition": f"p = '{p}'", "mixed": f"p = '{p}' AND id > {k}", "data": f"id > {k}"}[kind]


def _winner(rng: random.Random, path: str, next_id: list[int]) -> str:
    op = rng.choice(["append", "append", "delete-part", "delete-data", "update", "optimize", "overwrite-part"])
    dt = DeltaTable(path)
    if op == "append":
        part = rng.choice(PARTS)
        write_deltalake(path, _batch(part, list(range(next_id[0], next_id[0] + 3))), mode="append")
        next_id[0] += 3
    elif op == "delete-part":
        dt.delete(_predicate(rng, "partition"))
    elif op == "delete-data":
        dt.delete(_predicate(rng, rng.choice(["mixed", "data"])))
    elif op == "update":
        dt.update(updates={"v": "0"}, predicate=_predicate(rng, rng.choice(["partition", "mixed"])))
    elif op == "optimize":
        dt.optimize.compact()
    else:
        part = rng.choice(PARTS)
        write_deltalake(path, _batch(part, [900, 901]), mode="overwrite", predicate=f"p = '{part}'")
    return op


def _stale(rng: random.Random, handle: DeltaTable, path: str) -> tuple[str, WhatIfRequest, object]:
    """The stale transaction: (label, the equivalent whatif request, a thunk that runs it)."""
    R = handle.version()
    op = rng.choice(["delete", "update", "append", "overwrite-pred", "overwrite-all", "optimize"])
    if op == "delete":
        pred = _predicate(rng, rng.choice(["partition", "mixed", "data"]))
        return f"DELETE {pred}", WhatIfRequest(R, "DELETE", predicate=pred, rules="delta-rs"), lambda: handle.delete(pred)
    if op == "update":
        pred = _predicate(rng, rng.choice(["partition", "mixed", "data"]))
        return f"UPDATE {pred}", WhatIfRequest(R, "UPDATE", predicate=pred, rules="delta-rs"), lambda: handle.update(updates={"v": "1"}, predicate=pred)
    if op == "append":
        part = rng.choice(PARTS)
        return (f"append into p={part}", WhatIfRequest(R, "INSERT", partitions=[{"p": part}], rules="delta-rs"),
                lambda: write_deltalake(handle, _batch(part, [500, 501]), mode="append"))
    if op == "overwrite-pred":
        part = rng.choice(PARTS)
        pred = f"p = '{part}'"
        return (f"overwrite where {pred}", WhatIfRequest(R, "OVERWRITE", predicate=pred, partitions=[{"p": part}], rules="delta-rs"),
                lambda: write_deltalake(handle, _batch(part, [700]), mode="overwrite", predicate=pred))
    if op == "overwrite-all":
        part = rng.choice(PARTS)
        return (f"overwrite all (p={part})", WhatIfRequest(R, "OVERWRITE", partitions=[{"p": part}], rules="delta-rs"),
                lambda: write_deltalake(handle, _batch(part, [800]), mode="overwrite"))
    return "OPTIMIZE", WhatIfRequest(R, "OPTIMIZE", rules="delta-rs"), lambda: handle.optimize.compact()


@pytest.mark.slow
def test_whatif_predicts_real_delta_rs_outcomes(tmp_path: Path, spark):
    rng = random.Random(20261122)
    results = []
    for i in range(N_SCENARIOS):
        path = str(tmp_path / f"s{i:02d}")
        write_deltalake(path, _batch("a", list(range(0, 10))), partition_by=["p"])
        write_deltalake(path, _batch("b", list(range(10, 20))), mode="append")
        write_deltalake(path, _batch("c", list(range(20, 30))), mode="append")
        write_deltalake(path, _batch("a", list(range(30, 40))), mode="append")
        R = DeltaTable(path).version()
        handle = DeltaTable(path, version=R)
        next_id = [100]
        winners = [_winner(rng, path, next_id) for _ in range(rng.choice([1, 1, 2]))]
        label, req, run = _stale(rng, handle, path)
        log = DeltaLog.open(path, use_cache=False, spark_factory=lambda: spark)
        predicted = whatif(log, req).result
        real = _outcome(run)
        want = "commit" if predicted.verdict == "commit" else predicted.exception
        results.append((i, winners, label, real, want, predicted.why))
    wrong = [r for r in results if r[3] != r[4]]
    aborted = [r for r in results if r[3] != "commit"]
    assert len(results) >= 50
    assert len(aborted) >= 10, "the scenarios must include real conflicts"
    assert not wrong, "\n".join(f"#{i} winners={w} stale={lbl}: engine={real} whatif={want} ({why[:200]})" for i, w, lbl, real, want, why in wrong)
