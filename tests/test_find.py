"""`find`: did my write land? On tables written live by deltalake with app transactions (one of them
checkpointed and cleaned up, so commits are gone but the checkpoint's txn actions stay) and on the
sample incidents. Each answer has its own exit code: 0 committed, 14 at or before, 15 absent, 16 unknown."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from forensics import Table
from forensics.errors import ExitCode
from forensics.schemas import load_schema
from helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
E = str(ROOT / "sample_logs" / "e-streaming-shared-checkpoint" / "table")


def _e_commit(version: int) -> list[dict]:
    """Sample (e)'s commit file, read with json (delta-spark wrote it; ids and times are its own)."""
    return [json.loads(x) for x in (Path(E) / "_delta_log" / f"{version:020d}.json").read_text().splitlines() if x.strip()]


E_APP = next(a["txn"]["appId"] for a in _e_commit(1) if "txn" in a)  # the streaming query's id


def _batch(i: int) -> pa.Table:
    return pa.table({"id": pa.array([i], pa.int64()), "p": ["a"]})


def _write(path: str, i: int, app: str | None = None, version: int | None = None, note: str | None = None) -> None:
    props = CommitProperties(app_transactions=[Transaction(app, version)] if app else None,
                             custom_metadata={"userMetadata": note} if note else None)
    write_deltalake(path, _batch(i), mode="append", commit_properties=props)


@pytest.fixture(scope="module")
def cleaned(tmp_path_factory) -> str:
    """v0 create; v1 etl 1 (run-1); v2 etl 2 (run-2); v3 other 7; checkpoint 3; v4 etl 3 (run-3); then
    deltalake's own log cleanup (retention 0) removes v0..v2: the log keeps checkpoint 3, v3 and v4."""
    p = str(tmp_path_factory.mktemp("find") / "cleaned")
    write_deltalake(p, _batch(0), configuration={"delta.logRetentionDuration": "interval 0 days"})
    _write(p, 1, "etl", 1, "run-1")
    _write(p, 2, "etl", 2, "run-2")
    _write(p, 3, "other", 7)
    DeltaTable(p).create_checkpoint()
    _write(p, 4, "etl", 3, "run-3")
    DeltaTable(p).cleanup_metadata()
    names = sorted(f.name for f in (Path(p) / "_delta_log").iterdir())
    assert "00000000000000000001.json" not in names and "00000000000000000003.checkpoint.parquet" in names, names
    return p


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> str:
    """Every commit retained: v0 create, v1 etl 1, v2 etl 2 (run-2), v3 a plain append."""
    p = str(tmp_path_factory.mktemp("find") / "whole")
    write_deltalake(p, _batch(0))
    _write(p, 1, "etl", 1)
    _write(p, 2, "etl", 2, "run-2")
    _write(p, 3)
    return p


def _find(table: str, *args: str) -> tuple[int, dict]:
    rc, out, err = run_cli(["find", table, *args, "--json", "-q"])
    assert out, err
    doc = json.loads(out)
    assert list(jsonschema.Draft202012Validator(load_schema("find")).iter_errors(doc)) == []
    return rc, doc


def test_committed_names_the_version_and_the_commit(whole):
    rc, doc = _find(whole, "--app-id", "etl", "--txn-version", "2")
    assert rc == 0 and doc["answer"] == "committed" and doc["version"] == 2 and doc["matches"] == [2]
    assert doc["commit"]["version"] == 2 and doc["commit"]["txnAppIds"] == {"etl": 2} and doc["txnVersion"] == 2
    rc, doc = _find(whole, "--app-id", "etl")  # the latest version the app reached
    assert rc == 0 and doc["version"] == 2 and doc["matches"] == [1, 2]
    rc, doc = _find(whole, "--user-metadata", "run-")
    assert rc == 0 and doc["version"] == 2


def test_absent_when_everything_searched_is_retained(whole):
    rc, doc = _find(whole, "--app-id", "etl", "--txn-version", "3")
    assert rc == int(ExitCode.FIND_ABSENT) == 15 and doc["answer"] == "absent" and doc["version"] is None
    assert doc["searched"] == [0, 3] == doc["retained"]
    rc, doc = _find(whole, "--app-id", "etl", "--txn-version", "1", "--from", "2")  # landed, but before the range asked
    assert rc == 15 and doc["searched"] == [2, 3]
    rc, _ = _find(whole, "--user-metadata", "run-2", "--operation", "DELETE")  # every field given must match
    assert rc == 15


def test_checkpoint_txn_answers_at_or_before_once_the_commits_are_gone(cleaned):
    rc, doc = _find(cleaned, "--app-id", "etl", "--txn-version", "3")
    assert rc == 0 and doc["version"] == 4
    rc, doc = _find(cleaned, "--app-id", "etl", "--txn-version", "2")  # the checkpoint records etl at 2 exactly
    assert rc == int(ExitCode.FIND_AT_OR_BEFORE) == 14
    assert doc["answer"] == "at-or-before" and doc["checkpoint"] == 3 and doc["certainty"] == "exact"
    assert doc["version"] == 2  # v3 and v4 are retained and do not carry it: before v3
    assert doc["txnVersion"] == 2 and doc["commit"] is None and doc["retained"] == [3, 4]
    rc, doc = _find(cleaned, "--app-id", "etl", "--txn-version", "1")  # past it: inferred (app versions only grow)
    assert rc == 14 and doc["version"] == 2 and doc["certainty"] == "inferred"
    rc, doc = _find(cleaned, "--app-id", "etl", "--txn-version", "2", "--to", "3")
    assert rc == 14 and doc["version"] == 2
    rc, out, err = run_cli(["find", cleaned, "--app-id", "etl", "--txn-version", "2", "--until", "1d", "-q"])
    assert rc == int(ExitCode.RANGE_OUTSIDE_LOG) and out == "" and "it retains v3..v4" in err  # nothing retained until then


def test_checkpoint_txn_below_the_version_asked_means_absent(cleaned):
    rc, doc = _find(cleaned, "--app-id", "etl", "--txn-version", "9")
    assert rc == 15 and doc["answer"] == "absent" and doc["checkpoint"] == 3
    rc, doc = _find(cleaned, "--app-id", "never-wrote")  # no txn retention set: the checkpoint would hold it
    assert rc == 15 and "holds no txn" in doc["why"]


def test_unknown_when_the_search_reaches_past_retention(cleaned):
    rc, doc = _find(cleaned, "--user-metadata", "run-1")  # its commit (v1) was cleaned up; a checkpoint keeps no commitInfo
    assert rc == int(ExitCode.FIND_UNKNOWN) == 16 and doc["answer"] == "unknown" and "v3" in doc["why"]
    rc, doc = _find(cleaned, "--user-metadata", "run-1", "--from", "4")  # within what is retained: a sure no
    assert rc == 15
    rc, doc = _find(cleaned, "--user-metadata", "run-3")
    assert rc == 0 and doc["version"] == 4


def test_the_python_api_gives_the_same_answers(cleaned):
    t = Table(cleaned)
    r = t.find(app_id="etl", txn_version=2)
    assert (r.answer, r.version, r.checkpoint, r.exit_code) == ("at-or-before", 2, 3, ExitCode.FIND_AT_OR_BEFORE)
    r = t.find(app_id="etl", txn_version=3)
    assert r.found and r.version == 4 and r.commit["txnAppIds"] == {"etl": 3}
    assert t.find(user_metadata="run-1").answer == "unknown"


def test_sample_incident_streaming_txns():
    """e: two instances of one streaming query ran epoch 3; one committed v4, the other aborted."""
    rc, doc = _find(E, "--app-id", E_APP, "--txn-version", "3")
    assert rc == 0 and doc["version"] == 4 and doc["commit"]["operation"] == "STREAMING UPDATE"
    import re
    from datetime import datetime, timezone

    named = re.search(r'"txnId":"([0-9a-f-]{36})"', (Path(E).parent / "error.txt").read_text()).group(1)
    rc, doc = _find(E, "--txn-id", named)  # the winner the error text names
    assert rc == 0 and doc["version"] == 4
    rc, doc = _find(E, "--app-id", E_APP, "--txn-version", "5")
    assert rc == 15 and doc["answer"] == "absent"
    v4 = _e_commit(4)[0]["commitInfo"]["timestamp"]  # a second before v4, after v3
    since = datetime.fromtimestamp(v4 // 1000 - 1, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert _e_commit(3)[0]["commitInfo"]["timestamp"] < (v4 // 1000 - 1) * 1000
    rc, doc = _find(E, "--operation", "streaming update", "--since", since)
    assert rc == 0 and doc["matches"] == [4, 5] and doc["version"] == 5


def test_text_output_and_usage_errors():
    rc, out, err = run_cli(["find", E, "--app-id", E_APP, "--txn-version", "3", "-q", "--utc"])
    from datetime import datetime, timezone

    at = datetime.fromtimestamp(_e_commit(4)[0]["commitInfo"]["timestamp"] / 1000, timezone.utc)
    assert rc == 0 and out.startswith("committed at version 4:") and f"{at:%Y-%m-%d %H:%M:%S}Z" in out
    rc, out, err = run_cli(["find", E, "-q"])
    assert rc == int(ExitCode.USAGE) and out == "" and len(err.strip().splitlines()) == 1
    rc, out, err = run_cli(["find", E, "--txn-version", "3", "-q"])
    assert rc == int(ExitCode.USAGE) and "--app-id" in err
    rc, out, err = run_cli(["find", E, "--app-id", E_APP, "--from", "30", "-q"])
    assert rc == int(ExitCode.RANGE_OUTSIDE_LOG) and out == "" and len(err.strip().splitlines()) == 1
    assert "it retains v0..v5" in err
