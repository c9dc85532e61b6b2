"""`snapshot --json` written column-wise (no stats, no FileActions) is the dict path's text.

The fast path (snapshot_frame(stats=False) + write_snapshot_json) must print exactly what
print_json(snapshot_json(snapshot(...))) printed, on real tables: sample logs, corpus tables
with checkpoints, DVs and escaped characters, a hand-written log of hostile strings, and a
generated 120k-file checkpoint (more than one write slice).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import forensics.cli.commands._snapshot_json as sj
from forensics.cli.commands.snapshot import snapshot_json
from forensics.errors import ForensicsError
from forensics.log.snapshot import active_files, snapshot, snapshot_frame, state_actions, with_keys
from forensics.model import partition_values_of
from forensics.log.delta_log import DeltaLog
from helpers import run_cli

REPO = Path(__file__).resolve().parent.parent
CORPUS = [
    "dspark-table-with-dv-special-char",
    "dspark-partitioned-table-with-dv-large",
    "golden-canonicalized-paths-special-a",
    "golden-data-reader-absolute-paths-escaped-chars",
    "golden-hive_deltatbl-special-chars-in-partition-column",
    "golden-log-replay-dv-key-cases",
    "golden-dv-partitioned-with-checkpoint",
    "golden-checkpoint",
    "golden-multi-part-checkpoint",
    "golden-v2-checkpoint-json",
    "golden-v2-checkpoint-parquet",
]


def dict_path_text(log: DeltaLog, version: int | None) -> str:
    """What `snapshot --json` printed before the fast path (print_json of snapshot_json)."""
    snap, findings = snapshot(log, version)
    out = snapshot_json(snap)
    out["findings"] = [f.to_dict() for f in log.findings + findings]
    return json.dumps(out, ensure_ascii=True, indent=None, default=str) + "\n"


def fast_path_text(log: DeltaLog, version: int | None) -> str:
    frame, findings = snapshot_frame(log, version, stats=False)
    buf = io.StringIO()
    sj.write_snapshot_json(frame, [f.to_dict() for f in log.findings + findings], buf)
    return buf.getvalue()


def assert_same(table: Path, version: int | None = None) -> int:
    """Fast path first (so its stats-less cache entry exists), then the full dict path."""
    log = DeltaLog.open(str(table))
    try:
        fast = fast_path_text(log, version)
    except ForensicsError as e:
        with pytest.raises(ForensicsError) as again:
            dict_path_text(log, version)
        assert (again.value.code, again.value.message) == (e.code, e.message), table
        return 0
    old = dict_path_text(log, version)
    assert fast.isascii(), table
    assert json.loads(fast) == json.loads(old), table
    assert fast == old, table  # byte for byte, escapes included
    assert fast_path_text(log, version) == fast, table  # again, from the cache
    return len(json.loads(fast)["files"])


def test_fast_json_equals_dict_path_on_sample_logs(sample_logs, spark, monkeypatch):
    monkeypatch.setattr(sj, "_CHUNK_ROWS", 3)  # many slices: their joins are exercised too
    tables = sorted(sample_logs.glob("*/table"))
    assert tables
    files = sum(assert_same(t) for t in tables)
    assert files > 0
    busy = sample_logs / "busy" / "table"
    if busy.exists():  # an older version, served from one of its checkpoints
        log = DeltaLog.open(str(busy))
        assert_same(busy, max(c.version for c in log.listing.checkpoints))


@pytest.mark.shared
def test_fast_json_equals_dict_path_on_corpus_tables(shared_dir, spark):
    root = shared_dir / "corpus" / "tables"
    compared = 0
    for name in CORPUS:
        if (root / name).is_dir():
            assert_same(root / name)
            compared += 1
    assert compared >= 8


def _reference_active_files(actions: pl.DataFrame, table_uri: str) -> pl.DataFrame:
    """The replay as first written: stable sort by (version, line), last action per key."""
    keyed = with_keys(actions.filter(pl.col("kind").is_in(["add", "remove"])), table_uri)
    last = keyed.sort(["version", "line"], maintain_order=True).group_by(["cpath", "dv_id"], maintain_order=True).last()
    return last.filter(pl.col("kind") == "add")


@pytest.mark.shared
def test_active_files_is_the_last_action_per_key(sample_logs, shared_dir, spark):
    """The sort-based replay picks the same rows as grouping by (path, DV id); rows by path."""
    root = shared_dir / "corpus" / "tables"
    tables = [*sorted(sample_logs.glob("*/table")), *(root / n for n in CORPUS if (root / n).is_dir())]
    for table in tables:
        log = DeltaLog.open(str(table))
        acts, _oth, _base = state_actions(log, log.latest_version)
        got = active_files(acts.clone(), log.location)  # it takes its input over
        want = _reference_active_files(acts, log.location)
        assert got.columns == want.columns, table
        assert got["cpath"].is_sorted(), table
        assert got.sort(["cpath", "dv_id"]).equals(want.sort(["cpath", "dv_id"])), table


def _write_hostile_log(table: Path) -> None:
    """A two-commit log whose paths and partition values need every kind of JSON escape."""
    log = table / "_delta_log"
    log.mkdir(parents=True)
    schema = {"type": "struct", "fields": [{"name": "p", "type": "string", "nullable": True, "metadata": {}},
                                           {"name": "x", "type": "long", "nullable": True, "metadata": {}}]}
    hostile = ['q"uote', "back\\slash", "tab\there", "del\x7f", "caf\u00e9", "smile\U0001F600", "bidi\u202e", "nl\nx", "bell\x07"]
    v0 = [
        {"commitInfo": {"timestamp": 1, "operation": "WRITE", "operationParameters": {"mode": "Append"}, "isBlindAppend": True}},
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]}},
        {"metaData": {"id": "t\u00e9", "format": {"provider": "parquet", "options": {}}, "schemaString": json.dumps(schema),
                      "partitionColumns": ["p"], "configuration": {"delta.enableDeletionVectors": "true"}, "createdTime": 1}},
    ]
    for i, h in enumerate(hostile):
        v0.append({"add": {"path": f"p={i}/{h}-{i}.parquet", "partitionValues": {"p": h}, "size": 100 + i,
                           "modificationTime": 1, "dataChange": True, "stats": '{"numRecords":1}'}})
    v0.append({"add": {"path": "p=null/n.parquet", "partitionValues": {"p": None}, "size": 1, "modificationTime": 1, "dataChange": True}})
    v1 = [
        {"commitInfo": {"timestamp": 2, "operation": "DELETE", "operationParameters": {}, "readVersion": 0, "isBlindAppend": False}},
        {"remove": {"path": "p=0/" + hostile[0] + "-0.parquet", "partitionValues": {"p": hostile[0]}, "size": 100,
                    "deletionTimestamp": 2, "dataChange": True}},
        {"remove": {"path": "p=1/" + hostile[1] + "-1.parquet", "partitionValues": {"p": hostile[1]}, "size": 101,
                    "deletionTimestamp": 2, "dataChange": False}},
        {"add": {"path": "p=1/" + hostile[1] + "-1.parquet", "partitionValues": {"p": hostile[1]}, "size": 101,
                 "modificationTime": 1, "dataChange": False,
                 "deletionVector": {"storageType": "u", "pathOrInlineDv": "ab\u00e9\"cd", "offset": 1, "sizeInBytes": 34, "cardinality": 2}}},
    ]
    for v, actions in enumerate((v0, v1)):
        (log / f"{v:020d}.json").write_text("\n".join(json.dumps(a, ensure_ascii=False) for a in actions) + "\n", encoding="utf-8")


def test_fast_json_escapes_like_json_dumps(tmp_path, spark):
    table = tmp_path / "hostile"
    _write_hostile_log(table)
    assert assert_same(table) == 9
    assert assert_same(table, 0) == 10
    rc, out, _err = run_cli(["snapshot", str(table), "--json", "-q"])
    assert rc == 0 and out.isascii()
    files = {f["path"]: f for f in json.loads(out)["files"]}
    dv = files["p=1/back\\slash-1.parquet"]["deletionVector"]
    assert dv["pathOrInlineDv"] == "ab\u00e9\"cd" and dv["offset"] == 1
    assert files["p=4/caf\u00e9-4.parquet"]["partitionValues"] == {"p": "caf\u00e9"}


@pytest.mark.slow
def test_large_checkpoint_stats_less_and_cached_apart(tmp_path, spark, monkeypatch):
    """120k adds in one classic checkpoint: same text; stats skipped; a stats-less cache
    entry never stands in for a full read."""
    table = tmp_path / "big"
    subprocess.run([sys.executable, str(REPO / "bench" / "bigcheckpoint.py"), str(table), "--files", "120000"],
                   check=True, capture_output=True)
    log = DeltaLog.open(str(table))
    frame, _ = snapshot_frame(log, stats=False)
    assert frame.files.height > sj._CHUNK_ROWS and frame.base_checkpoint is not None
    from_cp = frame.files.filter(frame.files["version"] == frame.base_checkpoint)
    assert from_cp.height >= 100_000 and from_cp["stats"].null_count() == from_cp.height  # not read
    cached = sorted(p.name for p in log.cache_dir.glob("checkpoint-*-actions.parquet"))
    assert len(cached) == 1 and "-nostats-" in cached[0]
    snap, _ = snapshot(log)  # needs stats: a read of its own, cached under the full key
    assert all(f.stats for f in snap.files if f.version == frame.base_checkpoint)
    assert len(list(log.cache_dir.glob("checkpoint-*-actions.parquet"))) == 2
    # With only the full entry, a stats-less read takes it (minus stats) instead of Spark.
    for p in log.cache_dir.glob("checkpoint-*-nostats-actions.parquet"):
        p.unlink()
    monkeypatch.setattr(DeltaLog, "spark", lambda self: pytest.fail("Spark started although the cache covers it"))
    assert assert_same(table) == frame.files.height


_ROW = st.fixed_dictionaries({
    "_t": st.sampled_from(["a", "o"]),
    "kind": st.one_of(st.none(), st.sampled_from(["add", "remove", "metaData", "txn"])),
    "path": st.one_of(st.none(), st.text(max_size=8)),
    "size": st.one_of(st.none(), st.integers(-2**40, 2**40)),
    "payload": st.one_of(st.none(), st.text(max_size=8)),
    "stats": st.none(),
})


@settings(max_examples=150, deadline=None)
@given(st.lists(_ROW, max_size=40), st.booleans())
def test_rows_split_a_column_at_a_time_are_the_rows_a_filter_gives(rows, by_kind):
    """`reader._split` (which lets go of each column as it copies it) gives, for any rows, the
    file rows' action columns and the other rows' other columns that filtering whole tables gave,
    and `frame_of` (null columns kept as constants) the frame `pl.from_arrow` gives."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from forensics.log.reader import ACTION_COLUMNS, OTHER_COLUMNS, _split
    from forensics.log.snapshot import frame_of

    types = {"_t": pa.string(), "kind": pa.string(), "path": pa.string(), "size": pa.int64(), "payload": pa.string(),
             "stats": pa.string()}
    got = pa.table({k: pa.array([r[k] for r in rows], t) for k, t in types.items()})
    if by_kind:
        mask = pc.fill_null(pc.is_in(got.column("kind"), pa.array(["add", "remove"])), False)
    else:
        mask = pc.equal(got.column("_t"), "a")
    want_files = got.filter(mask).select([c for c in got.column_names if c in ACTION_COLUMNS])
    want_others = got.filter(pc.invert(mask)).select([c for c in got.column_names if c in OTHER_COLUMNS])
    files, others = _split(got, lambda t: mask)
    assert files.equals(want_files) and others.equals(want_others)
    for t in (got, files, others):
        assert frame_of(t).equals(pl.from_arrow(t)) and frame_of(t).schema == pl.from_arrow(t).schema


def test_active_files_takes_its_input_over(sample_logs):
    """active_files moves each column out of the frame it is given (so a 1M-add state is not
    held twice): the caller's frame is left without columns, and a clone given instead is not."""
    log = DeltaLog.open(str(sample_logs / "a-merge-partitions/table"))
    acts, _oth, _base = state_actions(log, log.latest_version)
    kept = acts.clone()
    got = active_files(acts, log.location)
    assert acts.width == 0 and got.height > 0
    assert active_files(kept.clone(), log.location).equals(got) and kept.width > 0


_TEXT = st.one_of(st.none(), st.text(max_size=8), st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=8))
_FILE_ROW = st.fixed_dictionaries({
    "version": st.one_of(st.none(), st.integers(0, 30)),
    "path": _TEXT,
    "partition_values": st.one_of(st.none(), st.sampled_from(['{"d":"1"}', '{"d":null,"e":"é\\u0001"}', "{}", "not json", ""])),
    "size": st.one_of(st.none(), st.integers(-1, 2**40)),
    "dv_storage_type": st.one_of(st.none(), st.sampled_from(["u", "i", "p", 'q"\\'])),
    "dv_path": _TEXT,
    "dv_offset": st.one_of(st.none(), st.integers(0, 2**31 - 1)),
    "dv_size": st.one_of(st.none(), st.integers(0, 2**31 - 1)),
    "dv_cardinality": st.one_of(st.none(), st.integers(0, 2**40)),
})


@settings(max_examples=200, deadline=None)
@given(st.lists(_FILE_ROW, max_size=30), st.one_of(st.none(), st.integers(0, 30)))
def test_file_objects_are_what_json_dumps_writes(rows, base):
    """forensics/cli/commands/_snapshot_json.py `_file_objects` (one polars select, rows with
    strings to escape redone field by field) gives, per row, json.dumps of the object
    snapshot_json builds: escapes, nulls, a missing DV path and the base checkpoint's version."""
    schema = dict(sj._COLUMNS)
    files = pl.DataFrame(rows, schema=schema)
    got = sj._file_objects(files, base).to_list()
    want = []
    for r in rows:
        dv = None
        if r["dv_storage_type"] is not None:
            dv = {"storageType": r["dv_storage_type"], "pathOrInlineDv": r["dv_path"] or "", "offset": r["dv_offset"],
                  "sizeInBytes": r["dv_size"], "cardinality": r["dv_cardinality"]}
        added = None if base is not None and r["version"] == base else r["version"]
        want.append(json.dumps({"path": r["path"], "partitionValues": partition_values_of(r["partition_values"]), "size": r["size"],
                                "deletionVector": dv, "addedInVersion": added}, ensure_ascii=True))
    assert got == want
