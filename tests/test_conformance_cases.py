"""Conformance: the shipped scenario set (forensics/conformance/scenarios/) is valid, covers the
shared reference cases, and replays to the outcome each engine's test asserts (spec §13)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from forensics.conformance.cases import (
    ANY_CONFLICT,
    ENGINES,
    EXPECTED_KEYS,
    FORMAT,
    FORMAT_VERSION,
    READ_KEYS,
    SCENARIO_KEYS,
    SOURCE_KEYS,
    TRANSACTION_KEYS,
    WINNER_KEYS,
    load_scenarios,
    materialize_scenario,
    outcome_agrees,
    read_documents,
    scenario_inputs,
    shipped_files,
    validate_document,
    validate_scenario,
)
from forensics.conformance.runner import run_conformance

SCENARIO_README = Path(__file__).resolve().parents[1] / "forensics" / "conformance" / "scenarios" / "README.md"


@pytest.fixture(scope="module")
def scenarios() -> list[dict]:
    return load_scenarios()


def _by_id(scenarios: list[dict], sid: str) -> dict:
    return next(s for s in scenarios if s["id"] == sid)


def _write_doc(path: Path, scenarios: list[dict], engine: str | None = None) -> Path:
    doc = {"format": FORMAT, "format_version": FORMAT_VERSION, "scenarios": scenarios}
    if engine:
        doc["engine"] = engine
    path.write_text(json.dumps(doc))
    return path


# --------------------------------------------------------------------------------------
# (a) the shipped data against its documented format
# --------------------------------------------------------------------------------------


def test_one_shipped_file_per_engine():
    docs = read_documents()
    assert sorted(f.name for f in shipped_files()) == sorted(f"{e}.json" for e in ENGINES)
    for name, doc in docs:
        assert Path(name).stem == doc["engine"]
        assert doc["scenarios"], name


def test_shipped_data_validates(scenarios):
    for name, doc in read_documents():
        assert validate_document(doc) == [], name
    required = {k for k, req in SCENARIO_KEYS.items() if req}
    for s in scenarios:
        assert required <= set(s), s["id"]
        assert s["engine"] in ENGINES, s["id"]
        assert s["expected"]["outcome"] in ("commit", *ENGINES[s["engine"]].outcomes), s["id"]
        assert set(s["source"]) == set(SOURCE_KEYS) and all(s["source"].values()), s["id"]
    assert len({s["id"] for s in scenarios}) == len(scenarios)


def test_readme_documents_the_format():
    text = SCENARIO_README.read_text()
    keys = [*SCENARIO_KEYS, *SOURCE_KEYS, *TRANSACTION_KEYS, *READ_KEYS, *WINNER_KEYS, *EXPECTED_KEYS]
    assert [k for k in keys if f"`{k}`" not in text and f'"{k}"' not in text] == []
    assert all(f"`{e}`" in text for e in ENGINES)
    assert FORMAT in text


@pytest.mark.parametrize("mutate, problem", [
    (lambda s: s.update(engine="spark"), "unknown engine"),
    (lambda s: s["expected"].update(outcome="ConcurrentAppendExceptionX"), "expected outcome"),
    (lambda s: s.pop("source"), "missing `source`"),
    (lambda s: s.update(notes="free text from elsewhere"), "unknown key `notes`"),
    (lambda s: s["source"].pop("commit"), "source needs"),
    (lambda s: s.update(id="Has Spaces"), "id must be"),
    (lambda s: s["transaction"]["read"]["files"].append("no-such-file"), "not among setup_files"),
    (lambda s: s["transaction"]["actions"].append({"note": "rewrite of some files"}), "an action is an object"),
    (lambda s: s["transaction"]["actions"].append({"add": {"path": "p", "partitionValues": {}, "dataChange": True,
                                                           "stats": {"numRecords": 1}}}), "stats is not JSON text"),
    (lambda s: s["winning_commits"].clear(), "winning_commits"),
    (lambda s: s.update(isolation={"table": "Serializable", "transaction": "n/a"}), "isolation"),
    (lambda s: s.update(known_difference=""), "known_difference"),
])
def test_validator_rejects(scenarios, mutate, problem):
    s = copy.deepcopy(_by_id(scenarios, "spark-legacy-disjoint-partitions"))
    assert validate_scenario(s) == []
    mutate(s)
    problems = validate_scenario(s)
    assert any(problem in p for p in problems), problems


def test_validator_rejects_other_formats_and_duplicate_ids(scenarios):
    assert validate_document({"schema_version": 1, "cases": []})  # the shared file's shape is not ours
    s = _by_id(scenarios, "rs-delete-read")
    doc = {"format": FORMAT, "format_version": FORMAT_VERSION, "scenarios": [s, s]}
    assert any("duplicate id" in p for p in validate_document(doc))
    doc = {"format": FORMAT, "format_version": FORMAT_VERSION, "engine": "delta-spark", "scenarios": [s]}
    assert any("engine differs" in p for p in validate_document(doc))


# --------------------------------------------------------------------------------------
# loading an explicit file (--cases FILE)
# --------------------------------------------------------------------------------------


def test_load_scenarios_from_a_file_or_folder(scenarios, tmp_path):
    picked = [_by_id(scenarios, "rs-delete-read"), _by_id(scenarios, "kernel-remove-same-file")]
    f = _write_doc(tmp_path / "mine.json", picked)
    assert [s["id"] for s in load_scenarios(f)] == ["rs-delete-read", "kernel-remove-same-file"]
    _write_doc(tmp_path / "more.json", [_by_id(scenarios, "spark-otx-delete-delete")])
    assert [s["id"] for s in load_scenarios(tmp_path)] == ["rs-delete-read", "kernel-remove-same-file",
                                                          "spark-otx-delete-delete"]  # files by name


def test_load_scenarios_refuses_other_formats(tmp_path):
    other = tmp_path / "cases.json"
    other.write_text(json.dumps({"schema_version": 1, "cases": [{"name": "x"}]}))
    with pytest.raises(ValueError, match="not a scenario file"):
        load_scenarios(other)
    with pytest.raises(FileNotFoundError):
        load_scenarios(tmp_path / "absent.json")


# --------------------------------------------------------------------------------------
# scenario -> inputs, comparison, materialized logs (no Spark)
# --------------------------------------------------------------------------------------


def test_engines_map_to_profiles(scenarios):
    by_engine = {}
    for s in scenarios:
        by_engine.setdefault(s["engine"], scenario_inputs(s).profile.name)
    assert by_engine == {"delta-spark": "delta-spark-4.1+", "delta-rs": "delta-rs", "delta-kernel-java": "kernel"}


def test_outcome_comparison():
    assert outcome_agrees({"outcome": "commit"}, None)
    assert not outcome_agrees({"outcome": "commit"}, "ConcurrentAppendException")
    assert outcome_agrees({"outcome": "ConcurrentAppend"}, "ConcurrentAppendException")  # delta-rs variant name
    assert not outcome_agrees({"outcome": "ConcurrentAppend"}, "ConcurrentDeleteReadException")
    assert outcome_agrees({"outcome": ANY_CONFLICT}, "ConcurrentDeleteReadException")
    assert not outcome_agrees({"outcome": ANY_CONFLICT}, None)
    want = {"outcome": "ConcurrentDeleteReadException", "error_class": "DELTA_CONCURRENT_DELETE_READ"}
    assert outcome_agrees(want, "ConcurrentDeleteReadException", "DELTA_CONCURRENT_DELETE_READ.WITHOUT_HINT")
    assert not outcome_agrees(want, "ConcurrentDeleteReadException", "DELTA_CONCURRENT_DELETE_READ_X")
    want = {"outcome": "ConcurrentWriteException", "message_contains": "file1.parquet"}
    assert outcome_agrees(want, "ConcurrentWriteException", None, "... file file1.parquet that ...")
    assert not outcome_agrees(want, "ConcurrentWriteException", None, "another file")


def test_materialize_writes_parseable_log(scenarios, tmp_path):
    for s in scenarios:
        root = materialize_scenario(s, tmp_path)
        files = sorted((root / "_delta_log").glob("*.json"))
        assert [int(f.stem) for f in files] == list(range(len(s["winning_commits"]) + 1)), s["id"]
        v0 = [json.loads(line) for line in files[0].read_text().splitlines()]
        kinds = [next(iter(a)) for a in v0]
        assert kinds[:3] == ["commitInfo", "protocol", "metaData"]
        assert kinds.count("add") == len(s["setup_files"])
        assert v0[1]["protocol"] == s["table_protocol"]
        meta = v0[2]["metaData"]
        assert meta["partitionColumns"] == s["partition_columns"]
        assert meta["configuration"] == s["table_properties"]
        assert [f["name"] for f in json.loads(meta["schemaString"])["fields"]] == list(s["schema"])
        for version, (f, w) in enumerate(zip(files[1:], s["winning_commits"]), start=1):
            actions = [json.loads(line) for line in f.read_text().splitlines()]
            ci = actions[0]["commitInfo"]
            assert ci["readVersion"] == version - 1 and ci["txnId"] and ci["engineInfo"]
            assert ("isBlindAppend" in ci) == (w["is_blind_append"] is not None)
            assert ci["isolationLevel"] in ("Serializable", "WriteSerializable", "SnapshotIsolation")
            assert [next(iter(a)) for a in actions[1:]] == [next(iter(a)) for a in w["actions"]]
            for a in actions[1:]:
                if "add" in a:
                    assert {"size", "modificationTime"} <= set(a["add"])


def test_materialized_log_reads_back_with_delta_rs(scenarios, tmp_path):
    """A real engine (delta-rs) opens the materialized table at the last winner's version."""
    deltalake = pytest.importorskip("deltalake")
    s = _by_id(scenarios, "spark-legacy-disjoint-partitions")
    table = deltalake.DeltaTable(str(materialize_scenario(s, tmp_path)))
    assert table.version() == len(s["winning_commits"])
    live = sorted(u.split("/")[-1] for u in table.file_uris())
    setup = {f["path"].split("/")[-1] for f in s["setup_files"]}
    added = {a["add"]["path"].split("/")[-1] for w in s["winning_commits"] for a in w["actions"] if "add" in a}
    assert live == sorted(setup | added)
    assert table.metadata().partition_columns == s["partition_columns"]


# --------------------------------------------------------------------------------------
# (b) every scenario of the shared reference file is represented by its source test
# --------------------------------------------------------------------------------------


def _shared_outcome(case: dict) -> tuple[str, str | None]:
    """(outcome, error class) of a shared-file case, in our terms."""
    raw = str(case["expected"]).strip()
    head = raw.split("(")[0].strip()
    inner = raw[raw.find("(") + 1:raw.rfind(")")] if "(" in raw else ""
    error_class = case.get("expected_error_class") or case.get("expected_error_class_contains")
    if head != "CommitConflict" and inner and inner.replace("_", "").replace(".", "").isalnum() and inner.isupper():
        error_class = error_class or inner  # `X(ERROR_CLASS)`
    return head, error_class


@pytest.mark.shared
def test_every_shared_case_is_represented(shared_dir, scenarios):
    cases = json.loads((shared_dir / "conformance" / "cases.json").read_text())["cases"]
    by_source: dict[tuple, list[dict]] = {}
    for s in scenarios:
        by_source.setdefault(tuple(s["source"][k] for k in SOURCE_KEYS), []).append(s)
    missing, differ = [], []
    for case in cases:
        key = tuple(case["source"][k] for k in SOURCE_KEYS)
        found = by_source.get(key, [])
        if len(found) != 1:
            missing.append((key, len(found)))
            continue
        s = found[0]
        outcome, error_class = _shared_outcome(case)
        if (s["engine"], s["expected"]["outcome"], s["expected"].get("error_class")) != \
                (case["engine"], outcome, error_class):
            differ.append((s["id"], case["expected"], s["expected"]))
        assert s["title"] != case["name"], f"{s['id']}: the title is the shared file's wording"
    assert missing == []
    assert differ == []


# --------------------------------------------------------------------------------------
# (c) the conformance run (Spark reader + rules) agrees on every scenario
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report(spark):
    return run_conformance(spark_factory=lambda: spark)


@pytest.mark.slow
def test_conformance_run_agrees(report, scenarios):
    assert report["total"] == len(scenarios)
    assert [c["id"] for c in report["cases"]] == [s["id"] for s in scenarios]
    bad = [(c["id"], c["expected"], c["got"], c["why"]) for c in report["cases"]
           if not c["agree"] and not c.get("known_difference")]
    assert bad == []
    assert report["agreed"] + report["known_differences"] == report["total"]


@pytest.mark.slow
def test_cli_runs_a_scenario_file(spark, scenarios, tmp_path, capsys):
    from forensics.cli.main import main

    f = _write_doc(tmp_path / "two.json", [_by_id(scenarios, "rs-delete-read"), _by_id(scenarios, "rs-append-append")])
    assert main(["conformance", "--cases", str(f), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["total"], out["agreed"]) == (2, 2)
    assert main(["conformance", "--cases", str(f)]) == 0
    assert "2 of 2 cases agree" in capsys.readouterr().out


def test_cli_refuses_other_formats(tmp_path, capsys):
    from forensics.cli.main import main

    other = tmp_path / "cases.json"
    other.write_text(json.dumps({"schema_version": 1, "cases": []}))
    assert main(["conformance", "--cases", str(other)]) == 2
    assert "not a scenario file" in capsys.readouterr().err
    assert main(["conformance", "--cases", str(tmp_path / "absent.json")]) == 2
