"""CommitRecords from the commit index: many rows at once (`records_of`, what replay builds a
block of winners with) equal the row-by-row definition (`record_from_row`), and no two records
share a decoded value."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.log.delta_log import DeltaLog
from forensics.log.index import _JSON_FIELDS, COMMIT_SCHEMA, record_from_row, records_of

REPO = Path(__file__).resolve().parents[1]

_flat_json = st.dictionaries(st.text(max_size=5), st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5)), max_size=3)
_nested_json = st.dictionaries(st.text(max_size=3), st.lists(st.integers(), max_size=2), max_size=2)
# What the index may hold in a JSON column: absent, the usual texts, flat or nested values,
# `null`, a bare value, and text that is not JSON at all (a corrupt cache, a hand-built log).
_json_text = st.one_of(
    st.none(),
    st.sampled_from(["{}", "[]", "null", "3", '"x"', "{not json", ""]),
    _flat_json.map(json.dumps),
    _nested_json.map(json.dumps),
    st.lists(_flat_json, max_size=2).map(json.dumps),
)


def _frame(texts: list[dict[str, str | None]]) -> pl.DataFrame:
    rows = []
    for v, t in enumerate(texts):
        row = {name: None for name in COMMIT_SCHEMA}
        row.update(version=v, source="commit", num_add=0, num_remove=0, num_cdc=0, has_metadata=False, has_protocol=False,
                   has_txn=False, has_domain_metadata=False, has_commit_info=True, **t)
        rows.append(row)
    return pl.DataFrame(rows, schema=COMMIT_SCHEMA)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.fixed_dictionaries({name: _json_text for name in _JSON_FIELDS}), min_size=1, max_size=12), st.integers(1, 4))
def test_records_of_many_rows_equal_each_rows_record(texts, repeat):
    frame = _frame(texts * repeat)  # each text repeated: decoded once, copied after
    many = records_of(frame)
    assert many == [record_from_row(r) for r in frame.iter_rows(named=True)]
    for name in _JSON_FIELDS:
        shared = [v for r in many for v in _containers(getattr(r, name))]
        assert len({id(v) for v in shared}) == len(shared), name  # every record its own objects, nested ones too


def _containers(v):
    """Every dict and list in a decoded value, itself and nested."""
    if isinstance(v, (dict, list)):
        yield v
        for x in v.values() if isinstance(v, dict) else v:
            yield from _containers(x)


def test_records_of_real_logs_equal_each_rows_record():
    """Every sample table (their logs written by delta-spark, delta-rs and the synth writer)."""
    tables = sorted(REPO.glob("sample_logs/*/table"))
    assert tables
    for t in tables:
        log = DeltaLog.open(str(t))
        assert records_of(log.commits) == [record_from_row(r) for r in log.commits.iter_rows(named=True)], t
