"""File lifetimes: each add's [added, removed) interval and the block index that answers "which
files are active at version v", against the definitions computed row by row."""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.sets.lifetimes import BLOCK, INF, _block_index, _next_by_hash, _next_versions, _rows_active

# A short log's file actions: per commit, a few adds and removes on a small pool of paths, with
# or without a deletion vector, so keys repeat (re-adds, DV updates, removes of a DV'd file).
_action = st.tuples(st.sampled_from(["add", "remove"]), st.sampled_from(["p0", "p1", "p2", "p%3A3"]), st.sampled_from([None, "u1", "u2"]))
_log = st.lists(st.lists(_action, max_size=4), min_size=1, max_size=40)


def _keyed(commits: list[list[tuple[str, str, str | None]]], gap: int) -> pl.DataFrame:
    rows = [(v * gap, line, kind, path, dv) for v, acts in enumerate(commits) for line, (kind, path, dv) in enumerate(acts)]
    return pl.DataFrame(rows, schema={"version": pl.Int64, "line": pl.Int64, "kind": pl.Utf8, "cpath": pl.Utf8, "dv_id": pl.Utf8},
                        orient="row")


def _next_by_definition(keyed: pl.DataFrame) -> list[int]:
    rows = keyed.select("cpath", "dv_id", "version").rows()
    return [next((rows[j][2] for j in range(i + 1, len(rows)) if rows[j][:2] == rows[i][:2]), INF) for i in range(len(rows))]


@settings(max_examples=200, deadline=None)
@given(_log, st.sampled_from([1, 7, 300]))
def test_the_next_version_of_each_key_is_its_next_action(commits, gap):
    keyed = _keyed(commits, gap)
    want = _next_by_definition(keyed)
    assert _next_versions(keyed).tolist() == want
    # every key hashed alike: the collision is caught and the exact grouping answers the same
    assert _next_by_hash(keyed, np.zeros(keyed.height, dtype=np.uint64)).tolist() == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3 * BLOCK), st.one_of(st.integers(0, 4 * BLOCK), st.just(INF))), max_size=30))
def test_the_block_index_finds_exactly_the_files_active_at_each_version(intervals):
    intervals = [(a, r if r >= a else a) for a, r in intervals]  # removed is never before added
    added = np.array([a for a, _ in intervals], dtype=np.int64)
    removed = np.array([r for _, r in intervals], dtype=np.int64)
    index = _block_index(added, removed)
    top = max([a for a, _ in intervals] + [r for _, r in intervals if r < INF] + [0])
    for v in range(0, top + 3 * BLOCK):  # blocks past the last action's too
        assert _rows_active(index, v).tolist() == [i for i, (a, r) in enumerate(intervals) if a <= v < r], v
    assert list(index) == sorted(index)  # the last key is the top block (_rows_active relies on it)
    for rows, a, r in index.values():  # each block's rows ascend, with their own intervals beside them
        assert rows.tolist() == sorted(rows.tolist())
        assert a.tolist() == added[rows].tolist() and r.tolist() == removed[rows].tolist()


def test_a_file_stays_active_past_hundreds_of_commits_without_a_file_action(tmp_path):
    """delta-rs writes one file, then more than a block of commits that only set a table
    property: the file is active at every one of them (the index once lost it past the block
    of the last file action)."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from forensics.log.delta_log import DeltaLog
    from forensics.sets.commit_sets import StateIndex

    write_deltalake(str(tmp_path), pa.table({"x": [1, 2]}))
    dt = DeltaTable(str(tmp_path))
    for i in range(BLOCK + 10):
        dt.alter.set_table_properties({"forensics.test.n": str(i)}, raise_if_not_exists=False)
    log = DeltaLog.open(str(tmp_path), use_cache=False)
    lifetimes = StateIndex(log).lifetimes
    (path,) = [f.path for f in lifetimes.files_at(0)]
    assert log.latest_version == BLOCK + 10
    assert all([f.path for f in lifetimes.files_at(v)] == [path] for v in range(0, BLOCK + 11))
    for v in (0, BLOCK - 1, BLOCK, BLOCK + 10):  # delta-rs's own snapshot at those versions agrees
        assert DeltaTable(str(tmp_path), version=v).get_add_actions(flatten=True).column("path").to_pylist() == [path], v
