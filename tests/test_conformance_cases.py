"""Conformance: the shipped scenario set (forensics/conformance/scenarios/) is valid, covers the
shared reference cases, is written as each engine's own log, and is answered through the code users
run (`Table.explain` of the transaction's commit, `Table.whatif` from its read version) with the
outcome each engine's test asserts, or a documented reason (conflict-rules §13)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from forensics.conformance.cases import (
    ANY_CONFLICT,
    COMMIT_KEYS,
    DELTA_RS_READ_VERSION_OPS,
    DOC_SOURCE_KEYS,
    ENGINES,
    EXPECTED_KEYS,
    FORMAT,
    FORMAT_VERSION,
    READ_KEYS,
    SCENARIO_KEYS,
    SOURCE_KEYS,
    TRANSACTION_KEYS,
    WHATIF_KEYS,
    WINNER_KEYS,
    engine_info,
    load_scenarios,
    materialize_scenario,
    outcome_agrees,
    read_documents,
    shipped_files,
    transaction_version,
    validate_document,
    validate_scenario,
    whatif_request,
)
from forensics.conformance.runner import (
    AGREE,
    FIXED,
    KNOWN_DIFFERENCE,
    NOT_EXPRESSIBLE,
    run_conformance,
)

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
        assert set(s["source"]) == set(ENGINES[s["engine"]].source_keys) and all(s["source"].values()), s["id"]
    assert len({s["id"] for s in scenarios}) == len(scenarios)


def test_readme_documents_the_format():
    text = SCENARIO_README.read_text()
    keys = [*SCENARIO_KEYS, *SOURCE_KEYS, *DOC_SOURCE_KEYS, *TRANSACTION_KEYS, *COMMIT_KEYS, *READ_KEYS, *WINNER_KEYS, *EXPECTED_KEYS,
            *WHATIF_KEYS]
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
    (lambda s: s.update(known_difference={"explain": "too short"}), "known_difference.explain"),
    (lambda s: s.update(known_difference={"replay": "a path that does not exist, said at length"}), "known_difference"),
    (lambda s: s.pop("whatif"), "needs `whatif`"),
    (lambda s: s.update(whatif={"predicate": "part = 3"}), "missing `operation`"),
    (lambda s: s["not_expressible"].update(whatif="whatif cannot ask this, said at length"), "`whatif` is given"),
    (lambda s: s.update(known_difference={"explain": "a documented difference, said at length"}),
     "both not expressible and a known difference"),
    (lambda s: s["transaction"].update(operation=None), "needs `commit.operation`"),
    (lambda s: s["expected"].update(winning_commit=2), "winning_commit"),
    (lambda s: s.update(runtime="14.3.x-scala2.12"), "runtime is a Databricks scenario's runtime"),
    (lambda s: s.update(clustering_columns=["x"]), "clustering_columns"),
])
def test_validator_rejects(scenarios, mutate, problem):
    s = copy.deepcopy(_by_id(scenarios, "spark-legacy-disjoint-partitions"))
    assert validate_scenario(s) == []
    mutate(s)
    problems = validate_scenario(s)
    assert any(problem in p for p in problems), problems


@pytest.mark.parametrize("mutate, problem", [
    (lambda s: s.update(runtime="14.3"), "runtime is a Databricks scenario's runtime"),
    (lambda s: s["source"].pop("row"), "source needs exactly ['url', 'page', 'table', 'row']"),
    (lambda s: s.update(source={"repo": "r", "commit": "c", "file": "f", "test": "t"}), "source needs exactly"),
    (lambda s: s.update(clustering_columns=["nope"]), "clustering_columns"),
])
def test_validator_rejects_databricks(scenarios, mutate, problem):
    """A Databricks scenario names a documentation row, and the runtime its engineInfo writes."""
    s = copy.deepcopy(_by_id(scenarios, "dbr-133-delete-delete-other-rows"))
    assert validate_scenario(s) == []
    mutate(s)
    assert any(problem in p for p in validate_scenario(s)), validate_scenario(s)


# The two conflict matrices of the Databricks page "Row-level concurrency" (conflict-rules §11.3): every
# cell is a scenario, and a cell whose answer depends on the data has both a conflicting case and a
# sibling that commits.
_CELLS = {
    "INSERT x INSERT": {"commit"},
    "UPDATE, DELETE, MERGE INTO x INSERT": {"commit", "conflict"},
    "UPDATE, DELETE, MERGE INTO x UPDATE, DELETE, MERGE INTO": {"commit", "conflict"},
    "OPTIMIZE x INSERT": {"commit"},
    "OPTIMIZE x UPDATE, DELETE, MERGE INTO": {"commit", "conflict"},
    "OPTIMIZE x OPTIMIZE": {"commit", "conflict"},
}


def test_databricks_matrices_row_by_row(scenarios):
    dbr = [s for s in scenarios if s["engine"] == "databricks"]
    for s in dbr:
        assert s["source"]["url"].startswith("https://docs.databricks.com/"), s["id"]
    for matrix in ("Conflict matrix with row-level concurrency", "Conflict matrix without row-level concurrency"):
        rows = [s for s in dbr if s["source"]["table"] == matrix]
        for cell, outcomes in _CELLS.items():
            seen = {"commit" if s["expected"]["outcome"] == "commit" else "conflict"
                    for s in rows if s["source"]["row"].startswith(cell + ":") or s["source"]["row"].startswith(cell + ",")}
            assert seen == outcomes, (matrix, cell, seen)
    levels = {(s["source"]["table"], s["isolation"]["table"]) for s in dbr}
    assert {lv for _, lv in levels} == {"Serializable", "WriteSerializable"}
    runtimes = {s.get("runtime", "14.3.x-scala2.12") for s in dbr}
    assert {"13.3.x-scala2.12", "14.2.x-scala2.12", "14.2.x-photon-scala2.12", "14.3.x-scala2.12"} <= runtimes
    assert any(s.get("clustering_columns") for s in dbr)  # liquid clustering


def test_databricks_log_is_a_runtime_log(scenarios, tmp_path):
    """Version 0 of a liquid table: managed CREATE with clusterBy, the delta.clustering domain, statsOnLoad."""
    s = _by_id(scenarios, "dbr-liquid-delete-delete-other-rows")
    v0 = _log(materialize_scenario(s, tmp_path))[0]
    ci = _commit_info(v0)
    assert ci["operationParameters"]["clusterBy"] == '["id"]' and ci["operationParameters"]["isManaged"] == "true"
    assert ci["isolationLevel"] == "WriteSerializable" and ci["tags"] == {"restoresDeletedRows": "false"}
    dom = next(a["domainMetadata"] for a in v0 if "domainMetadata" in a)
    assert dom["domain"] == "delta.clustering" and json.loads(dom["configuration"])["clusteringColumns"] == [["id"]]


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
# comparison, and the logs as each engine writes them (no Spark)
# --------------------------------------------------------------------------------------


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


def _log(root: Path) -> list[list[dict]]:
    files = sorted((root / "_delta_log").glob("*.json"))
    return [[json.loads(line) for line in f.read_text().splitlines()] for f in files]


def _commit_info(version: list[dict]) -> dict:
    return next(a["commitInfo"] for a in version if "commitInfo" in a)


def test_materialize_writes_setup_winners_and_the_transaction(scenarios, tmp_path):
    for s in scenarios:
        root = materialize_scenario(s, tmp_path)
        log = _log(root)
        n = len(s["winning_commits"])
        assert len(log) == n + 2 == transaction_version(s) + 1, s["id"]
        v0 = log[0]
        kinds = [next(iter(a)) for a in v0]
        assert kinds[0] == "commitInfo" and {"protocol", "metaData"} <= set(kinds[1:3]), s["id"]
        assert kinds.count("add") == len(s["setup_files"])
        assert next(a["protocol"] for a in v0 if "protocol" in a) == s["table_protocol"]
        meta = next(a["metaData"] for a in v0 if "metaData" in a)
        assert meta["partitionColumns"] == s["partition_columns"]
        assert meta["configuration"] == s["table_properties"]
        assert [f["name"] for f in json.loads(meta["schemaString"])["fields"]] == list(s["schema"])
        for version, (actions, w) in enumerate(zip(log[1:], [*s["winning_commits"], s["transaction"]]), start=1):
            assert next(iter(actions[0])) == "commitInfo", (s["id"], version)
            assert sorted(next(iter(a)) for a in actions[1:]) == sorted(next(iter(a)) for a in w["actions"])
            ci = _commit_info(actions)
            assert ci["engineInfo"] == engine_info(s)
            for a in actions[1:]:
                if "add" in a:
                    assert {"size", "modificationTime"} <= set(a["add"])


def test_transaction_commit_in_each_engines_form(scenarios, tmp_path):
    """The current transaction's commitInfo as its engine writes it (conflict-rules §1.1, §2.2, §10)."""
    seen = set()
    for s in scenarios:
        ci = _commit_info(_log(materialize_scenario(s, tmp_path))[transaction_version(s)])
        txn = s["transaction"]
        op = (txn.get("commit") or {}).get("operation") or txn["operation"]
        assert ci["operation"] == op, s["id"]
        if s["engine"] == "delta-spark":
            assert ci["readVersion"] == 0 and ci["isolationLevel"] == s["isolation"]["transaction"], s["id"]
            assert isinstance(ci["isBlindAppend"], bool) and ci["txnId"]
            for v in ci["operationParameters"].values():
                assert not isinstance(v, (list, dict)), (s["id"], "list parameters are JSON text on disk")
        elif s["engine"] == "delta-rs":
            assert "isolationLevel" not in ci and "isBlindAppend" not in ci and "txnId" not in ci, s["id"]
            assert ci["clientVersion"].startswith("delta-rs.")
            assert all(isinstance(v, str) for v in ci["operationParameters"].values()), s["id"]
            assert ("readVersion" in ci) == (op in DELTA_RS_READ_VERSION_OPS), s["id"]
            if "readVersion" in ci:
                assert ci["readVersion"] == 0
        elif s["engine"] == "databricks":
            # delta-spark's commitInfo plus what a runtime adds (conflict-rules §8.1, §11)
            assert ci["readVersion"] == 0 and ci["isolationLevel"] == s["isolation"]["transaction"], s["id"]
            assert isinstance(ci["isBlindAppend"], bool) and ci["txnId"], s["id"]
            assert {"clusterId", "userId", "userName", "notebook", "operationMetrics"} <= set(ci), s["id"]
            assert ci["engineInfo"] == f"Databricks-Runtime/{s.get('runtime', '14.3.x-scala2.12')}", s["id"]
            assert all(isinstance(v, str) for v in ci["operationMetrics"].values()), s["id"]
            if op == "WRITE":
                assert ci["operationParameters"]["statsOnLoad"] is False, s["id"]
        else:
            assert "readVersion" not in ci and "isolationLevel" not in ci and ci["isBlindAppend"] is False, s["id"]
        seen.add(s["engine"])
    assert seen == set(ENGINES)


def test_delta_spark_parameters_encoded_as_on_disk(scenarios, tmp_path):
    s = _by_id(scenarios, "spark-feature-dv-unset-vs-delete")
    log = _log(materialize_scenario(s, tmp_path))
    assert _commit_info(log[2])["operationParameters"] == {"predicate": '["idCol#2891L IN (90)"]'}
    assert _commit_info(log[1])["operationParameters"] == {"properties": '["delta.enableDeletionVectors"]',
                                                          "ifExists": False}


def test_fresh_metadata_winner_carries_a_new_table_id(scenarios, tmp_path):
    """delta-spark's `Metadata()` draws a new random id and createdTime: the winner's metaData as written
    names another table (OptimisticTransactionSuite "schema change", Legacy "block append against metadata
    change")."""
    for sid in ("spark-otx-schema-change", "spark-legacy-append-vs-metadata-change"):
        s = _by_id(scenarios, sid)
        log = _log(materialize_scenario(s, tmp_path))
        table = next(a["metaData"] for a in log[0] if "metaData" in a)
        winner = next(a["metaData"] for a in log[1] if "metaData" in a)
        assert winner["id"] != table["id"] and winner["createdTime"] != table["createdTime"], sid
        assert s["expected"]["outcome"] == "MetadataChangedException"


def test_every_scenario_is_answerable_or_says_why(scenarios):
    """No silent skip: each path either is asked or carries its reason in the data."""
    for s in scenarios:
        nx = s.get("not_expressible") or {}
        assert ("whatif" in s) != ("whatif" in nx), s["id"]
        assert whatif_request(s) is None or whatif_request(s)["until"] == len(s["winning_commits"])
        for reason in [*nx.values(), *(s.get("known_difference") or {}).values()]:
            assert len(reason) > 20, s["id"]
    ids = {s["id"] for s in scenarios}
    readvers = {s["id"] for s in scenarios if "readVersion" in (s.get("not_expressible") or {}).get("explain", "")}
    assert {i for i in ids if i.startswith("kernel-")} <= readvers  # Kernel records no readVersion


def test_materialized_log_reads_back_with_delta_rs(scenarios, tmp_path):
    """A real engine (delta-rs) opens the materialized table at the transaction's version."""
    import deltalake

    s = _by_id(scenarios, "spark-legacy-disjoint-partitions")
    table = deltalake.DeltaTable(str(materialize_scenario(s, tmp_path)))
    assert table.version() == transaction_version(s)
    live = sorted(u.split("/")[-1] for u in table.file_uris())
    setup = {f["path"] for f in s["setup_files"]}
    acts = [a for w in [*s["winning_commits"], s["transaction"]] for a in w["actions"]]
    added = {a["add"]["path"] for a in acts if "add" in a}
    removed = {a["remove"]["path"] for a in acts if "remove" in a}
    assert live == sorted(p.split("/")[-1] for p in (setup | added) - removed)
    assert table.metadata().partition_columns == s["partition_columns"]


# --------------------------------------------------------------------------------------
# (c) the conformance run: every scenario through Table.explain and Table.whatif
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report(spark):
    return run_conformance(spark_factory=lambda: spark)


@pytest.mark.slow
def test_every_scenario_agrees_or_has_a_documented_reason(report, scenarios):
    assert report["total"] == len(scenarios)
    assert [c["id"] for c in report["cases"]] == [s["id"] for s in scenarios]
    bad = [(c["id"], p, c["expected"], c[p]["answer"], c[p].get("why")) for c in report["cases"]
           for p in ("explain", "whatif") if c[p]["status"] not in (AGREE, NOT_EXPRESSIBLE, KNOWN_DIFFERENCE)]
    assert bad == []
    assert report["findings"] == 0
    for c in report["cases"]:
        for p in ("explain", "whatif"):
            if c[p]["status"] != AGREE:
                assert c[p]["reason"] and len(c[p]["reason"]) > 20, (c["id"], p)  # the reason is in the output


@pytest.mark.slow
def test_known_differences_still_disagree(report, scenarios):
    """A scenario's known difference must still reproduce: when the code is fixed, the record goes."""
    known = [(s["id"], p) for s in scenarios for p in (s.get("known_difference") or {})]
    by_id = {c["id"]: c for c in report["cases"]}
    assert [(i, p, by_id[i][p]["status"]) for i, p in known if by_id[i][p]["status"] != KNOWN_DIFFERENCE] == []


@pytest.mark.slow
def test_not_expressible_explain_is_still_answered(report, scenarios):
    """explain runs on every scenario; where the test's reads cannot be recorded its answer is shown, not counted."""
    by_id = {c["id"]: c for c in report["cases"]}
    for s in scenarios:
        c = by_id[s["id"]]
        assert c["explain"]["answer"] and not c["explain"]["answer"].startswith("error"), s["id"]
        if "explain" in (s.get("not_expressible") or {}):
            assert c["explain"]["status"] == NOT_EXPRESSIBLE
            if "no readVersion" in s["not_expressible"]["explain"]:
                assert c["explain"]["verdict"] == "skipped", s["id"]  # the engine's commit names no window


@pytest.mark.slow
def test_profiles_follow_each_engines_engine_info(report):
    """The rule profile comes from the engineInfo the scenario's engine writes, as for any user log."""
    seen = {}
    for c in report["cases"]:
        for p in ("explain", "whatif"):
            if c[p].get("profile"):
                seen.setdefault(c["engine"], set()).add(c[p]["profile"])
    assert seen == {e: {ENGINES[e].profile} for e in seen}
    assert set(seen) == set(ENGINES)


@pytest.mark.slow
def test_counts_per_engine_add_up(report):
    assert report["summary"] == (f"{report['explainAgree']} of {report['total']} agree through explain, "
                                 f"{report['whatifAgree']} of {report['total']} through whatif, "
                                 f"{report['documented']} with a documented reason")
    assert sum(n["total"] for n in report["byEngine"].values()) == report["total"]
    assert sum(n["explainAgree"] for n in report["byEngine"].values()) == report["explainAgree"]
    assert sum(n["whatifAgree"] for n in report["byEngine"].values()) == report["whatifAgree"]


@pytest.mark.slow
def test_a_stale_known_difference_is_a_finding(spark, scenarios, tmp_path, capsys, monkeypatch):
    """A known difference that no longer reproduces is reported, and fails --strict (exit 1)."""
    from forensics.cli.main import main

    monkeypatch.setenv("COLUMNS", "200")  # whatever terminal the run has (none under pytest-xdist): no wrapped words

    s = copy.deepcopy(_by_id(scenarios, "rs-delete-read"))
    s["known_difference"] = {"explain": "pretend forensics/sets/commit_sets.py:_delta_rs_plan reads the wrong files"}
    f = _write_doc(tmp_path / "stale.json", [s])
    rep = run_conformance(f, spark_factory=lambda: spark)
    assert rep["cases"][0]["explain"]["status"] == FIXED and rep["findings"] == 1
    assert main(["conformance", "--cases", str(f)]) == 0
    out = capsys.readouterr().out
    assert "DISAGREEMENT" in out and "no longer reproduces" in out
    assert main(["conformance", "--cases", str(f), "--strict"]) == 1


@pytest.mark.slow
def test_cli_runs_a_scenario_file(spark, scenarios, tmp_path, capsys, monkeypatch):
    from forensics.cli.main import main

    monkeypatch.setenv("COLUMNS", "200")  # whatever terminal the run has (none under pytest-xdist): no wrapped words

    f = _write_doc(tmp_path / "two.json", [_by_id(scenarios, "rs-delete-read"), _by_id(scenarios, "rs-append-append")])
    assert main(["conformance", "--cases", str(f), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["total"], out["explainAgree"], out["whatifAgree"], out["documented"]) == (2, 1, 2, 1)
    assert out["cases"][1]["explain"]["status"] == NOT_EXPRESSIBLE  # delta-rs WRITE records no readVersion
    assert main(["conformance", "--cases", str(f), "--strict"]) == 0
    text = capsys.readouterr().out
    assert "1 of 2 agree through explain, 2 of 2 through whatif, 1 with a documented reason" in text
    assert "no readVersion" in text and "No disagreements" in text


def test_cli_refuses_other_formats(tmp_path, capsys):
    from forensics.cli.main import main

    other = tmp_path / "cases.json"
    other.write_text(json.dumps({"schema_version": 1, "cases": []}))
    assert main(["conformance", "--cases", str(other)]) == 2
    assert "not a scenario file" in capsys.readouterr().err
    assert main(["conformance", "--cases", str(tmp_path / "absent.json")]) == 2
