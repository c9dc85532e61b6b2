"""The whole commitInfo in `history`: the API's DataFrame, `--json`, the text (`--full`), the TUI's
detail pane and `stats`' operationMetrics line, on a table deltalake 1.6.6 writes here (app
transaction, user metadata, custom metadata, DELETE, OPTIMIZE, MERGE) and on the delta-spark-form
sample (metrics written as strings). Expected values are read from the commit files with `json`
and from deltalake's own `DeltaTable.history()`, never typed in here."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import jsonschema
import polars as pl
import pytest
from helpers import run_cli
from hypothesis import example, given, settings
from hypothesis import strategies as st

from forensics import Table, load_schema
from forensics.log import params
from forensics.log.history import map_series
from forensics.log.params import COMMIT_INFO_KEYS, INT64_MAX, INT64_MIN, decode_metrics, metric_value

needs_spark = pytest.mark.usefixtures("spark")  # the session's one JVM (local[2]); the property tests need none

USER_METADATA = "nightly load 42 — café"
CUSTOM = {"writer": "ingest-job", "team": "data-eng"}  # delta-rs flattens custom metadata into commitInfo


@pytest.fixture(scope="module")
def rs_table(tmp_path_factory) -> Path:
    """Five commits by deltalake 1.6.6: WRITE (app transaction, userMetadata, custom keys), WRITE,
    DELETE (userMetadata), OPTIMIZE (boolean, text and JSON-text metrics), MERGE."""
    import pyarrow as pa
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

    path = tmp_path_factory.mktemp("rs") / "orders"
    data = pa.table({"date": ["2024-06-18", "2024-06-19"], "id": [1, 2]})
    write_deltalake(str(path), data, partition_by=["date"], commit_properties=CommitProperties(
        custom_metadata={"userMetadata": USER_METADATA, **CUSTOM}, app_transactions=[Transaction(app_id="job-7", version=3)]))
    write_deltalake(str(path), data, mode="append")
    DeltaTable(str(path)).delete("id = 1", commit_properties=CommitProperties(custom_metadata={"userMetadata": "cleanup"}))
    DeltaTable(str(path)).optimize.compact()
    (DeltaTable(str(path)).merge(data, "s.id = t.id", source_alias="s", target_alias="t")
     .when_matched_update_all().when_not_matched_insert_all().execute())
    return path


def commit_infos(table: Path) -> dict[int, dict]:
    """version -> commitInfo, read from the commit files with json (independent of the tool)."""
    out = {}
    for f in sorted((table / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            if line.startswith('{"commitInfo"'):
                out[int(f.stem)] = json.loads(line)["commitInfo"]
    return out


def as_number(raw):
    """What a metric should read as: the number a writer's string spells, else the value."""
    if isinstance(raw, str) and re.fullmatch(r"-?(0|[1-9][0-9]*)", raw):
        return int(raw)
    return raw


def sample_a(sample_logs: Path) -> Path:
    return sample_logs / "a-merge-partitions" / "table"


# ---- the Python API -----------------------------------------------------------------------


@needs_spark
def test_api_history_has_the_whole_commitinfo_of_a_deltalake_table(rs_table):
    from deltalake import DeltaTable

    cis = commit_infos(rs_table)
    h = Table(str(rs_table)).history()
    for col in ("operationMetrics", "userMetadata", "tags", "clientVersion", "engineInfo", "otherCommitInfo"):
        assert col in h.columns, col
    assert h.schema["userMetadata"] == pl.Utf8 and h.schema["clientVersion"] == pl.Utf8
    metric_types = dict(h.schema["operationMetrics"].to_schema())
    rows = {r["version"]: r for r in h.to_dicts()}
    assert sorted(rows) == sorted(cis) == [0, 1, 2, 3, 4]
    ints = 0
    for v, ci in cis.items():
        r = rows[v]
        assert r["userMetadata"] == ci.get("userMetadata")
        assert r["clientVersion"] == ci["clientVersion"] and r["engineInfo"] == ci["engineInfo"]
        for k, raw in ci["operationMetrics"].items():
            assert r["operationMetrics"][k] == raw, (v, k)
            if isinstance(raw, int) and not isinstance(raw, bool):
                assert metric_types[k] == pl.Int64, (k, metric_types[k])  # delta-rs' integers stay integers
                ints += 1
        other = {k: x for k, x in r["otherCommitInfo"].items() if x is not None}
        assert other == {k: x for k, x in ci.items() if k not in COMMIT_INFO_KEYS}, v
    assert ints > 20
    assert rows[0]["otherCommitInfo"] == CUSTOM and rows[0]["userMetadata"] == USER_METADATA
    assert rows[0]["txnAppIds"] == {"job-7": 3}
    assert metric_types["num_retries"] == pl.Int64 and metric_types["preserveInsertionOrder"] == pl.Boolean
    assert metric_types["plannerStrategy"] == pl.Utf8 and metric_types["filesAdded"] == pl.Utf8  # text kept as written
    # Everything deltalake's own history() gives is here, under the same names and values.
    for d in DeltaTable(str(rs_table)).history():
        r, v = rows[d["version"]], d["version"]
        for k, x in d.items():
            if k == "version":
                continue
            if k in ("operationParameters", "timestamp"):
                continue  # decoded (conflict-rules §8.1) / the same number, checked below
            got = r.get(k, (r["otherCommitInfo"] or {}).get(k))
            if isinstance(x, dict):
                got = {a: b for a, b in got.items() if b is not None}
            assert got == x, (v, k, got, x)
        assert r["timestamp"] == d["timestamp"]


@needs_spark
def test_api_commit_record_holds_numbers(rs_table, sample_logs):
    rec = Table(str(rs_table)).commit(0)
    raw = commit_infos(rs_table)[0]
    assert rec.operation_metrics == raw["operationMetrics"] and rec.client_version == raw["clientVersion"]
    assert rec.other_commit_info == CUSTOM
    a = sample_a(sample_logs)
    t, cis = Table(str(a)), commit_infos(a)
    for v, ci in cis.items():
        assert t.commit(v).operation_metrics == {k: as_number(x) for k, x in ci["operationMetrics"].items()}


@needs_spark
def test_api_history_of_the_delta_spark_sample_has_integer_metrics(sample_logs):
    """delta-spark writes every metric as a string ("10"): the DataFrame holds Int64."""
    a = sample_a(sample_logs)
    cis = commit_infos(a)
    h = Table(str(a)).history()
    types = dict(h.schema["operationMetrics"].to_schema())
    seen = 0
    for r in h.to_dicts():
        ci = cis[r["version"]]
        for k, raw in ci["operationMetrics"].items():
            assert isinstance(raw, str)  # the sample is in delta-spark's form
            assert r["operationMetrics"][k] == int(raw) and types[k] == pl.Int64, (k, raw)
            seen += 1
        assert r["clientVersion"] is None and r["userMetadata"] is None
        assert r["otherCommitInfo"] == {} or all(x is None for x in r["otherCommitInfo"].values())
    assert seen >= 20


# ---- JSON ----------------------------------------------------------------------------------


def _history_json(path: Path, *extra: str) -> list[dict]:
    rc, out, err = run_cli(["history", str(path), "--json", "-q", *extra])
    assert rc == 0, err
    doc = json.loads(out)
    jsonschema.validate(doc, load_schema("history"))
    return doc


@needs_spark
def test_json_has_the_whole_commitinfo(rs_table, sample_logs):
    cis = commit_infos(rs_table)
    doc = _history_json(rs_table)
    assert [d["version"] for d in doc] == sorted(cis)
    for d in doc:
        ci = cis[d["version"]]
        assert d["operationMetrics"] == ci["operationMetrics"]
        assert d["userMetadata"] == ci.get("userMetadata") and d["clientVersion"] == ci["clientVersion"]
        assert d["tags"] is None
        assert d["otherCommitInfo"] == {k: x for k, x in ci.items() if k not in COMMIT_INFO_KEYS}
    assert doc[0]["otherCommitInfo"] == CUSTOM and doc[0]["userMetadata"] == USER_METADATA
    a = sample_a(sample_logs)
    cis = commit_infos(a)
    for d in _history_json(a, "--from", "3", "--to", "4"):
        m = d["operationMetrics"]
        assert m == {k: int(x) for k, x in cis[d["version"]]["operationMetrics"].items()}
        assert all(type(x) is int for x in m.values())
        assert d["otherCommitInfo"] == {} and d["clientVersion"] is None


@needs_spark
def test_json_keeps_unknown_keys_and_odd_values(tmp_path):
    """A hand-written commitInfo: an unknown key, metrics that are not numbers, tags and
    operationMetrics that are not objects (kept under otherCommitInfo, not dropped)."""
    log = tmp_path / "t" / "_delta_log"
    log.mkdir(parents=True)
    proto = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
    meta = {"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}}, "partitionColumns": [],
                         "schemaString": json.dumps({"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": True,
                                                                                   "metadata": {}}]}),
                         "configuration": {}, "createdTime": 1}}
    c0 = {"timestamp": 1000, "operation": "CREATE TABLE", "operationMetrics": {"n": "7", "t": "1.5", "e": "1e3", "z": "007",
                                                                                "w": "١٢", "big": "99999999999999999999", "s": "abc"},
          "tags": {"restoresDeletedRows": "false"}, "engineVersion": {"major": 9}}
    c1 = {"timestamp": 2000, "operation": "WRITE", "readVersion": 0, "operationMetrics": "oops", "tags": ["x"]}
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(x) for x in (proto, meta, {"commitInfo": c0})) + "\n")
    (log / f"{1:020d}.json").write_text(json.dumps({"commitInfo": c1}) + "\n")
    doc = _history_json(tmp_path / "t")
    assert doc[0]["operationMetrics"] == {"n": 7, "t": 1.5, "e": 1000.0, "z": "007", "w": "١٢",
                                          "big": "99999999999999999999", "s": "abc"}
    assert doc[0]["tags"] == {"restoresDeletedRows": "false"} and doc[0]["otherCommitInfo"] == {"engineVersion": {"major": 9}}
    assert doc[1]["operationMetrics"] is None and doc[1]["tags"] is None
    assert doc[1]["otherCommitInfo"] == {"operationMetrics": "oops", "tags": ["x"]}
    h = Table(str(tmp_path / "t")).history()
    assert h["otherCommitInfo"].to_list()[1]["operationMetrics"] == "oops"
    assert dict(h.schema["operationMetrics"].to_schema())["n"] == pl.Int64


# ---- text ----------------------------------------------------------------------------------


@needs_spark
def test_text_full_shows_every_commitinfo_field(rs_table, sample_logs, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    cis = commit_infos(rs_table)
    rc, out, err = run_cli(["history", str(rs_table), "--full", "--utc", "-q"])
    assert rc == 0, err
    blocks = re.split(r"\n(?=version \d+  )", out)[1:]
    assert len(blocks) == len(cis)
    for block in blocks:
        v = int(block.split()[1])
        ci = cis[v]
        assert ci["operation"] in block.splitlines()[0]
        assert re.search(rf"^clientVersion\s+{re.escape(ci['clientVersion'])}\s*$", block, re.M)
        for k, x in ci["operationMetrics"].items():
            shown = json.dumps(x) if isinstance(x, bool) else str(x)
            assert re.search(rf"^  {re.escape(k)}\s+{re.escape(shown)}\s*$", block, re.M), (v, k)
        if "userMetadata" in ci:
            assert re.search(rf"^userMetadata\s+{re.escape(ci['userMetadata'])}\s*$", block, re.M)
    assert re.search(r"^  writer\s+ingest-job\s*$", blocks[0], re.M) and "otherCommitInfo" in blocks[0]
    assert re.search(r"^  job-7\s+3\s*$", blocks[0], re.M)
    # delta-spark's strings shown as the numbers they are
    a = sample_a(sample_logs)
    rc, out, err = run_cli(["history", str(a), "--full", "--from", "3", "--to", "3", "--utc", "-q"])
    assert rc == 0, err
    for k, x in commit_infos(a)[3]["operationMetrics"].items():
        assert re.search(rf"^  {k}\s+{x}\s*$", out, re.M), k
    assert "version 2 " not in out and "version 4 " not in out


@needs_spark
def test_text_table_unchanged_without_full(rs_table, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    rc, out, err = run_cli(["history", str(rs_table), "--utc", "-q"])
    assert rc == 0, err
    assert "(5 of 5 versions)" in out and "operationMetrics" not in out and not re.search(r"^version \d+  ", out, re.M)


# ---- stats ----------------------------------------------------------------------------------


@needs_spark
def test_stats_counts_delta_rs_metrics(rs_table, monkeypatch, tmp_path):
    cis = commit_infos(rs_table)
    with_metrics = sum(1 for ci in cis.values() if ci.get("operationMetrics"))
    retries = sum(ci["operationMetrics"].get("num_retries", 0) for ci in cis.values())
    assert with_metrics == 5 and any("num_retries" in ci["operationMetrics"] for ci in cis.values())
    st_ = Table(str(rs_table)).stats_report()
    assert st_.retries["metric_totals"] == {"num_retries": retries}
    assert st_.retries["metric_commits"] == with_metrics
    monkeypatch.setenv("COLUMNS", "200")
    rc, out, err = run_cli(["stats", str(rs_table), "--utc", "-q"])
    assert rc == 0, err
    assert f"operationMetrics in {with_metrics} of {len(cis)} commit(s) (num_retries {retries})" in out
    assert "operationMetrics none" not in out
    rc, out, err = run_cli(["stats", str(rs_table), "--json", "-q"])
    doc = json.loads(out)
    jsonschema.validate(doc, load_schema("stats"))
    assert doc["retries"]["metricTotals"] == {"num_retries": retries} and doc["retries"]["metricCommits"] == with_metrics
    rc, _, err = run_cli(["export", str(rs_table), "--format", "html", "-o", str(tmp_path / "r.html"), "-q"])
    assert rc == 0, err
    page = (tmp_path / "r.html").read_text()
    assert f"operationMetrics in {with_metrics} of {len(cis)} commit(s): num_retries {retries}" in page


# ---- TUI ------------------------------------------------------------------------------------


@needs_spark
async def test_tui_detail_shows_the_whole_commitinfo(rs_table):
    from test_tui import plain, settle, versions

    from tui.app import ForensicsApp
    from tui.widgets.detail import DetailPane

    ci = commit_infos(rs_table)[0]
    app = ForensicsApp(str(rs_table), utc=True)
    async with app.run_test(size=(200, 80)) as pilot:
        await settle(pilot)
        await pilot.press("colon", "0", "enter")
        await settle(pilot, until=lambda: versions(app).current_version == 0 and "read set" in plain(app.query_one(DetailPane)))
        text = plain(app.query_one(DetailPane))
    assert re.search(rf"clientVersion\s+{re.escape(ci['clientVersion'])}", text)
    assert re.search(rf"userMetadata\s+{re.escape(USER_METADATA)}", text)
    assert "other commitInfo keys" in text and re.search(r"writer\s+ingest-job", text)
    for k, x in ci["operationMetrics"].items():
        assert re.search(rf"{k}\s+{x}\b", text), k


# ---- the metric reading, property-based -------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.integers(INT64_MIN, INT64_MAX))
def test_metric_integer_strings_read_as_integers(n):
    got = metric_value(str(n))
    assert got == n and type(got) is int
    assert metric_value(n) == n


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_metric_float_strings_read_as_floats(f):
    text = json.dumps(f)  # "1e+16", "0.1", "-0.0": what a JSON writer spells
    got = metric_value(text)
    assert got == f and type(got) is float


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(max_size=30), st.text(alphabet="0123456789-+.eE ١٢", max_size=12)))
def test_metric_text_is_kept_unless_it_is_a_json_number(s):
    got = metric_value(s)
    if not (isinstance(got, str) and got == s):
        # converted only when the whole text is a JSON number (ASCII digits), to that number
        assert s.isascii() and s.strip() == s
        assert json.loads(s) == got and not isinstance(got, bool)
        assert isinstance(got, int) and INT64_MIN <= got <= INT64_MAX or isinstance(got, float) and math.isfinite(got)
    json.dumps(got, allow_nan=False)  # always writable as strict JSON


# Values that compare equal across types (True == 1 == 1.0, "1" == "1"): a loop that remembers what it
# decoded must not hand one commit another's value.
_RECURRING = st.sampled_from([True, 1, 1.0, "1", "01", "true", "[]", '["a"]', "0", 0, False, None, [1], {"x": "1"}])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.fixed_dictionaries({}, optional={
    "operationParameters": st.dictionaries(st.sampled_from(["mode", "partitionBy"]), _RECURRING, max_size=2),
    "operationMetrics": st.dictionaries(st.sampled_from(["numFiles", "numOutputRows"]), _RECURRING, max_size=2),
}).map(json.dumps)), max_size=12), st.sampled_from([0, 1, 4096]))
@example(['{"operationParameters": {"mode": true}}', '{"operationParameters": {"mode": 1}}'], 4096)
@example(['{"operationMetrics": {"numFiles": 1.0}}', '{"operationMetrics": {"numFiles": true}}'], 4096)
def test_the_commit_index_decode_is_each_commit_decoded_alone(raws, memo_entries):
    """`commit_info_columns` remembers recurring parameters and metric strings: whatever recurs,
    and however many it may remember, each commit's columns are those it has decoded alone."""
    has = [r is not None for r in raws]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(params, "MEMO_ENTRIES", memo_entries)
        together = params.commit_info_columns(raws, has)
    for i, (raw, present) in enumerate(zip(raws, has)):
        alone = params.commit_info_columns([raw], [present])
        assert {k: v[i] for k, v in together.items()} == {k: v[0] for k, v in alone.items()}, raw


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.dictionaries(
    st.sampled_from(["a", "b", "c"]),
    st.one_of(st.none(), st.booleans(), st.integers(INT64_MIN, INT64_MAX), st.floats(allow_nan=False, allow_infinity=False),
              st.text(max_size=5), st.lists(st.integers(), max_size=2)),
    max_size=3)), max_size=6))
def test_map_series_types_each_key_from_all_its_values(maps):
    metrics = [decode_metrics(m) if m is not None else None for m in maps]
    s = map_series("m", metrics)
    fields = dict(s.dtype.to_schema())
    got = s.to_list()
    for i, m in enumerate(metrics):
        if m is None:
            assert got[i] is None
            continue
        for k, dtype in fields.items():
            x, y = m.get(k), got[i][k]
            if x is None:
                assert y is None
            elif dtype == pl.Int64 or dtype == pl.Boolean:
                assert y == x and type(y) is type(x)
            elif dtype == pl.Float64:
                assert y == float(x)
            else:
                assert y == (x if isinstance(x, str) else json.dumps(x))
    for k in fields:
        vals = [m[k] for m in metrics if m and m.get(k) is not None]
        if vals and all(type(x) is int for x in vals):
            assert fields[k] == pl.Int64


@needs_spark
def test_text_full_keeps_log_strings_inert(tmp_path, monkeypatch):
    """Keys and values of the commitInfo are the log's: escape sequences and bells print as text."""
    log = tmp_path / "t" / "_delta_log"
    log.mkdir(parents=True)
    ci = {"timestamp": 1000, "operation": "WRITE\x1b[2J", "userMetadata": "\x07ring", "\x1b]8;;http://x\x07key": "v",
          "operationMetrics": {"num\x1b[31m": "\x1b[0m5"}}
    (log / f"{0:020d}.json").write_text(json.dumps({"commitInfo": ci}) + "\n")
    monkeypatch.setenv("COLUMNS", "150")
    rc, out, err = run_cli(["history", str(tmp_path / "t"), "--full", "--utc", "-q"])
    assert rc == 0, err
    assert "\x1b" not in out and "\x07" not in out
    assert "ring" in out and "key" in out and "num" in out


# ---- delta-spark itself (make test-live: the suite's session has Delta's jars) ----------------


@pytest.mark.live
def test_live_delta_spark_metrics_read_as_integers(spark, tmp_path):
    """delta-spark 4.4 writes every operationMetrics value as a string: history gives Int64 numbers."""
    from forensics.runtime import delta_jvm

    if not delta_jvm.loaded(spark):
        pytest.fail("delta-spark's JVM classes are not on the classpath: run `make test-live` (it fetches them)")
    path = tmp_path / "ds"
    (spark.range(10).selectExpr("id", "id % 2 AS part").write.format("delta").partitionBy("part")
     .option("userMetadata", USER_METADATA).save(str(path)))
    spark.sql(f"UPDATE delta.`{path}` SET id = id + 100 WHERE part = 0")
    cis = commit_infos(path)
    assert all(isinstance(x, str) for ci in cis.values() for x in ci["operationMetrics"].values())  # as written
    h = Table(str(path), spark=spark).history()
    types = dict(h.schema["operationMetrics"].to_schema())
    for r in h.to_dicts():
        ci = cis[r["version"]]
        assert r["userMetadata"] == ci.get("userMetadata") and r["engineInfo"] == ci["engineInfo"]
        for k, raw in ci["operationMetrics"].items():
            assert r["operationMetrics"][k] == int(raw) and types[k] == pl.Int64, (k, raw)
    doc = _history_json(path)
    assert doc[0]["userMetadata"] == USER_METADATA
    assert doc[1]["operationMetrics"] == {k: int(x) for k, x in cis[1]["operationMetrics"].items()}
