"""`history --json` is written column-wise (history_json); it must say exactly what the
row-by-row objects (history_rows, which the table view uses) say, and stay printable ASCII."""

from __future__ import annotations

import json
import re

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.log.history import history_json, history_json_parts, history_rows
from forensics.log.index import COMMIT_SCHEMA
from forensics.log.delta_log import DeltaLog

PRINTABLE_ASCII = re.compile(r"[\x20-\x7e]*")

text = st.one_of(st.none(), st.text(max_size=30))
small_int = st.one_of(st.none(), st.integers(-(2**62), 2**62))
flag = st.one_of(st.none(), st.booleans())
json_obj = st.dictionaries(st.text(max_size=8), st.one_of(st.text(max_size=10), st.integers(), st.none()), max_size=3)


@st.composite
def commit_rows(draw):
    n = draw(st.integers(0, 6))
    rows = []
    for v in draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n, unique=True)):
        parts = draw(st.lists(st.dictionaries(st.text(max_size=5), st.one_of(st.none(), st.text(max_size=5)), max_size=2), max_size=3))
        rows.append(
            {
                "version": v,
                "source": draw(st.sampled_from(["commit", "compacted", "staged"])),
                "timestamp": draw(small_int),
                "in_commit_timestamp": draw(small_int),
                "file_modification_time": draw(small_int),
                "operation": draw(text),
                "operation_parameters": json.dumps(draw(json_obj)),
                "read_version": draw(small_int),
                "isolation_level": draw(text),
                "is_blind_append": draw(flag),
                "txn_id": draw(text),
                "engine_info": draw(text),
                "user_id": draw(text),
                "user_name": draw(text),
                "job": draw(st.one_of(st.none(), json_obj.map(json.dumps))),
                "notebook": draw(st.one_of(st.none(), json_obj.map(json.dumps))),
                "cluster_id": draw(text),
                "operation_metrics": draw(st.one_of(st.none(), json_obj.map(json.dumps))),
                "user_metadata": draw(text),
                "tags": draw(st.one_of(st.none(), json_obj.map(json.dumps))),
                "client_version": draw(text),
                "other_commit_info": draw(st.one_of(st.none(), json_obj.map(json.dumps))),
                "num_add": draw(st.integers(0, 10**6)),
                "num_remove": draw(st.integers(0, 10**6)),
                "num_cdc": draw(st.integers(0, 10)),
                # As the index writes it: Spark's compact to_json text, unescaped non-ASCII included.
                "partitions_touched": "[" + ",".join(json.dumps(p, ensure_ascii=False, separators=(",", ":")) for p in parts) + "]",
                "has_metadata": draw(st.booleans()),
                "has_protocol": draw(st.booleans()),
                "has_txn": draw(st.booleans()),
                "has_domain_metadata": draw(st.booleans()),
                "has_commit_info": draw(st.booleans()),
                "txn_app_ids": json.dumps(draw(st.dictionaries(st.text(max_size=5), st.integers(0, 99), max_size=2))),
                "domains": "[]",
                "commit_info_raw": None,
            }
        )
    return pl.DataFrame(rows, schema=COMMIT_SCHEMA)


def _same(commits: pl.DataFrame, start=None, end=None) -> str:
    out = history_json(commits, start, end)
    assert PRINTABLE_ASCII.fullmatch(out), "history --json must be printable ASCII"
    assert json.loads(out) == json.loads(json.dumps(history_rows(commits, start, end)))
    return out


@settings(max_examples=150, deadline=None)
@given(commit_rows(), st.one_of(st.none(), st.integers(0, 10**6)))
def test_column_wise_json_says_what_the_rows_say(commits, start):
    _same(commits, start)


@settings(max_examples=60, deadline=None)
@given(commit_rows(), st.integers(1, 4), st.one_of(st.none(), st.integers(0, 10**6)))
def test_the_text_written_in_pieces_is_the_whole_text(commits, rows_per_part, start):
    parts = list(history_json_parts(commits, start, None, "9.9", rows_per_part=rows_per_part))
    assert "".join(parts) == history_json(commits, start, None, "9.9")
    assert len(parts) == 2 + -(-len(json.loads("".join(parts))) // rows_per_part)


def test_every_sample_log(sample_logs, spark):
    for table in sorted(sample_logs.glob("*/table")):
        log = DeltaLog.open(str(table))
        out = _same(log.commits)
        assert len(json.loads(out)) == log.commits.height
        _same(log.commits, 1, 3)
