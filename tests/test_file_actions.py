"""A write set's or a snapshot's files are built a chunk of columns at a time (`file_actions`);
replay's read files one row at a time, remembered (`FileActionRows`). Both must give the same
FileAction for a row, whatever the row holds, and each its own partitionValues."""

from __future__ import annotations

import json

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.log import file_actions as fa

_pv = st.one_of(st.none(), st.just(""), st.just("{}"), st.just("not json"), st.just("[1]"),
                st.dictionaries(st.sampled_from(["p", "q"]), st.one_of(st.none(), st.text(max_size=3)), max_size=2).map(json.dumps))
_tags = st.one_of(st.none(), st.just(""), st.just("{broken"), st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2).map(json.dumps))
_dv = st.one_of(st.none(), st.tuples(st.sampled_from(["u", "i", "p"]), st.one_of(st.none(), st.text(max_size=4)),
                                     st.one_of(st.none(), st.integers(0, 99)), st.integers(0, 99), st.integers(0, 99)))
_row = st.fixed_dictionaries({
    "version": st.integers(0, 10**6), "kind": st.sampled_from(["add", "remove", "cdc"]), "path": st.text(max_size=8),
    "partition_values": _pv, "size": st.one_of(st.none(), st.integers(0, 10**9)), "data_change": st.one_of(st.none(), st.booleans()),
    "stats": st.one_of(st.none(), st.text(max_size=8)), "tags": _tags, "dv": _dv,
    "modification_time": st.one_of(st.none(), st.integers(0, 10**12)), "deletion_timestamp": st.one_of(st.none(), st.integers(0, 10**12)),
})


def _frame(rows: list[dict]) -> pl.DataFrame:
    cols = {c: [r[c] for r in rows] for c in ("version", "kind", "path", "partition_values", "size", "data_change", "stats",
                                             "tags", "modification_time", "deletion_timestamp")}
    for i, name in enumerate(("dv_storage_type", "dv_path", "dv_offset", "dv_size", "dv_cardinality")):
        cols[name] = [r["dv"][i] if r["dv"] else None for r in rows]
    schema = {"version": pl.Int64, "kind": pl.Utf8, "path": pl.Utf8, "partition_values": pl.Utf8, "size": pl.Int64,
              "data_change": pl.Boolean, "stats": pl.Utf8, "tags": pl.Utf8, "modification_time": pl.Int64,
              "deletion_timestamp": pl.Int64, "dv_storage_type": pl.Utf8, "dv_path": pl.Utf8, "dv_offset": pl.Int32,
              "dv_size": pl.Int32, "dv_cardinality": pl.Int64}
    return pl.DataFrame(cols, schema=schema)


@settings(max_examples=80, deadline=None)
@given(rows=st.lists(_row, max_size=40), chunk=st.integers(1, 7), drop_tags=st.booleans())
def test_the_chunked_build_gives_each_row_as_the_one_row_build(rows, chunk, drop_tags):
    frame = _frame(rows)
    if drop_tags:
        frame = frame.drop("tags")  # an old cache's frame: the column is missing, every row None
    old = fa.CHUNK
    fa.CHUNK = chunk  # rows across several chunks
    try:
        whole = fa.file_actions(frame)
        one = fa.FileActionRows(frame)
        single = [one[i] for i in reversed(range(frame.height))][::-1]  # asked out of order
    finally:
        fa.CHUNK = old
    assert whole == single
    assert [f.version for f in whole] == [r["version"] for r in rows]
    for f, r in zip(whole, rows):  # each field from its own column
        assert (f.kind, f.path, f.size, f.data_change, f.stats) == (r["kind"], r["path"], r["size"], r["data_change"], r["stats"])
        assert (f.modification_time, f.deletion_timestamp) == (r["modification_time"], r["deletion_timestamp"])
        dv = f.deletion_vector
        assert (dv is None) == (r["dv"] is None)
        if dv is not None:
            assert (dv.storage_type, dv.path_or_inline_dv, dv.offset, dv.size_in_bytes, dv.cardinality) == (
                r["dv"][0], r["dv"][1] or "", r["dv"][2], r["dv"][3], r["dv"][4])
        assert f.tags == (None if drop_tags or not r["tags"] or r["tags"].startswith("{b") else json.loads(r["tags"]))
        want_pv = {} if not r["partition_values"] or r["partition_values"] == "not json" else json.loads(r["partition_values"])
        assert f.partition_values == want_pv
    dicts = [f.partition_values for f in whole if isinstance(f.partition_values, dict) and f.partition_values]
    assert len({id(d) for d in dicts}) == len(dicts)  # each action its own partitionValues
