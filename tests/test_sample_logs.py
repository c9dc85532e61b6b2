"""sample_logs/: structure, readable by delta-rs, orphans, and error texts checked against the logs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

INCIDENTS = {
    # name: (has error.txt, exception class or None)
    "quickstart": (False, None),
    "busy": (False, None),
    "a-merge-partitions": (True, "ConcurrentAppendException"),
    "b-writeserializable-reorder": (False, None),
    "c-optimize-vs-delete": (True, "ConcurrentDeleteReadException"),
    "d-alter-table": (True, "MetadataChangedException"),
    "e-streaming-shared-checkpoint": (True, "ConcurrentTransactionException"),
    "f-delta-rs-aborted": (True, None),
}
BY_DELTA_SPARK = ["a-merge-partitions", "c-optimize-vs-delete", "d-alter-table", "e-streaming-shared-checkpoint"]
ASSEMBLED = ["b-writeserializable-reorder"]  # WriteSerializable: Databricks-only, so assembled (forensics/synth)


def _commits(table: Path) -> dict[int, list[dict]]:
    out = {}
    for f in sorted((table / "_delta_log").glob("*.json")):
        if re.fullmatch(r"\d{20}\.json", f.name):
            out[int(f.name[:20])] = [json.loads(x) for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]
    return out


def _referenced(table: Path) -> set[str]:
    refs = set()
    for actions in _commits(table).values():
        for a in actions:
            for kind in ("add", "remove", "cdc"):
                if kind in a:
                    refs.add(a[kind]["path"])
    return refs


def _orphans(table: Path) -> set[str]:
    on_disk = {p.relative_to(table).as_posix() for p in table.rglob("*.parquet") if "_delta_log" not in p.parts}
    return on_disk - _referenced(table)


def _by_txn(table: Path, txn_id: str) -> tuple[int, list[dict]]:
    for v, actions in _commits(table).items():
        if actions and actions[0].get("commitInfo", {}).get("txnId") == txn_id:
            return v, actions
    raise AssertionError(f"no commit with txnId {txn_id}")


@pytest.mark.parametrize("name", sorted(INCIDENTS))
def test_structure_and_delta_rs_reads_it(sample_logs, name):
    from deltalake import DeltaTable

    d = sample_logs / name
    has_error, _ = INCIDENTS[name]
    assert (d / "table" / "_delta_log").is_dir()
    assert (d / "error.txt").exists() == has_error
    readme = (sample_logs / "README.md").read_text(encoding="utf-8")
    assert sum(1 for line in readme.splitlines() if line.startswith(f"- `{name}/`:")) == 1
    dt = DeltaTable(str(d / "table"))
    assert dt.version() == max(_commits(d / "table"))
    data = dt.to_pyarrow_table()  # every data file of the latest version is present
    assert data.num_rows > 0


def test_sizes(sample_logs):
    total = sum(p.stat().st_size for p in sample_logs.rglob("*") if p.is_file())
    busy = sum(p.stat().st_size for p in (sample_logs / "busy").rglob("*") if p.is_file())
    assert total < 3_000_000 and busy < 1_100_000


def test_real_engine_tables(sample_logs):
    from deltalake import DeltaTable

    q = DeltaTable(str(sample_logs / "quickstart" / "table"))
    assert 15 <= q.version() + 1 <= 30
    ops = {h["operation"] for h in q.history()}
    assert {"WRITE", "DELETE", "UPDATE", "MERGE", "OPTIMIZE"} <= ops
    assert list((sample_logs / "quickstart/table/_delta_log").glob("*.checkpoint.parquet"))
    assert q.metadata().partition_columns == ["date"]
    b = DeltaTable(str(sample_logs / "busy" / "table"))
    assert 300 <= b.version() + 1 <= 600
    writers = {h.get("writer") for h in b.history()}
    assert {"ingest-a", "ingest-b"} <= writers
    for t in ("quickstart", "busy", "f-delta-rs-aborted"):
        ci = _commits(sample_logs / t / "table")[0][0]["commitInfo"]
        assert ci["engineInfo"].startswith("delta-rs:")


@pytest.mark.parametrize("name", ["a-merge-partitions", "c-optimize-vs-delete", "d-alter-table",
                                  "e-streaming-shared-checkpoint", "f-delta-rs-aborted"])
def test_aborted_attempts_leave_orphans(sample_logs, name):
    table = sample_logs / name / "table"
    orphans = _orphans(table)
    assert orphans, "the loser's data files must remain"
    if name == "f-delta-rs-aborted":
        attempts = json.loads((sample_logs / name / "attempts.json").read_text())
        failed = [a for a in attempts if a["outcome"] == "CommitFailedError"]
        assert len({a["partition"] for a in failed}) >= 2
        assert orphans == {f for a in failed for f in a["files_written"]}


@pytest.mark.parametrize("name", BY_DELTA_SPARK)
def test_spark_error_texts_name_the_real_winner(sample_logs, name):
    """error.txt is what delta-spark printed (`toString()`: class, then message): its error class, the
    winner it names (4.1+ file conflicts: `committed at version N`; the others quote the winner's
    commitInfo, which must be the one on disk, key for key) and what it says of that winner."""
    text = (sample_logs / name / "error.txt").read_text(encoding="utf-8")
    exc = INCIDENTS[name][1]
    assert text.startswith(f"io.delta.exceptions.{exc}: [DELTA_")
    assert "Refer to https://docs.delta.io/latest/concurrency-control.html" in text
    table = sample_logs / name / "table"
    m = re.search(r"committed at version (\d+)", text)
    if m:
        w = int(m.group(1))
        actions = _commits(table)[w]
        assert f"a concurrent {actions[0]['commitInfo']['operation']} " in text
    else:
        quoted = json.loads(re.search(r"\nConflicting commit: (\{.*\})\n", text).group(1))
        w, actions = _by_txn(table, quoted["txnId"])
        assert quoted == actions[0]["commitInfo"]  # the winner's commitInfo as written, parameters quoted (4.1+)
    ci = actions[0]["commitInfo"]
    assert ci["engineInfo"] == "Apache-Spark/4.2.0 Delta-Lake/4.4.0" and ci["readVersion"] == w - 1
    part = re.search(r"partition \[date=([\d-]+)\]", text)
    if exc == "ConcurrentAppendException":
        assert any(a["add"]["partitionValues"]["date"] == part.group(1) for a in actions if "add" in a)
    if exc == "ConcurrentDeleteReadException":
        assert any(a["remove"]["partitionValues"]["date"] == part.group(1) for a in actions if "remove" in a)
    if exc == "MetadataChangedException":
        assert any("metaData" in a for a in actions)
    if exc == "ConcurrentTransactionException":
        assert any("txn" in a and a["txn"]["appId"] == ci["operationParameters"]["queryId"] for a in actions)
    # the loser's output is on disk, never in the log, and written in what the text names as contended
    # (ALTER TABLE and the streaming batch: the loser's own partition)
    assert _orphans(table)


def test_delta_spark_samples_are_delta_spark_logs(sample_logs):
    """Every commit of the four delta-spark incidents was written by delta-spark (its engineInfo, its
    txnIds), as the README says; Delta's checksum files beside them."""
    readme = (sample_logs / "README.md").read_text(encoding="utf-8")
    for name in BY_DELTA_SPARK:
        line = next(ln for ln in readme.splitlines() if ln.startswith(f"- `{name}/`"))
        assert "Produced: written by delta-spark 4.4.0" in line and "assembled" not in line
        commits = _commits(sample_logs / name / "table")
        assert all(c[0]["commitInfo"]["engineInfo"] == "Apache-Spark/4.2.0 Delta-Lake/4.4.0" for c in commits.values())
        assert len({c[0]["commitInfo"]["txnId"] for c in commits.values()}) == len(commits)
        assert all((sample_logs / name / "table" / "_delta_log" / f"{v:020d}.crc").is_file() for v in commits)
    b = next(ln for ln in readme.splitlines() if ln.startswith("- `b-writeserializable-reorder/`"))
    assert "assembled" in b and "Databricks-only" in b


def test_b_reordered_delete_keeps_the_inserted_rows(sample_logs):
    commits = _commits(sample_logs / "b-writeserializable-reorder" / "table")
    ins, dele = commits[2][0]["commitInfo"], commits[3][0]["commitInfo"]
    assert ins["isBlindAppend"] is True and dele["operation"] == "DELETE" and dele["readVersion"] == 1
    assert dele["isolationLevel"] == "WriteSerializable" and ins["engineInfo"].startswith("Databricks-Runtime/")
    inserted = {a["add"]["path"] for a in commits[2] if "add" in a}
    removed = {a["remove"]["path"] for a in commits[3] if "remove" in a}
    assert inserted and not inserted & removed
    conf = next(a for a in commits[0] if "metaData" in a)["metaData"]["configuration"]
    assert conf["delta.isolationLevel"] == "WriteSerializable"


def test_f_error_is_the_real_delta_rs_text(sample_logs, shared_dir, tmp_path):
    """Re-run the same conflict with delta-rs now: it raises the very text stored in error.txt."""
    from forensics.synth.rs_incidents import f_delta_rs_aborted

    stored = (sample_logs / "f-delta-rs-aborted" / "error.txt").read_text(encoding="utf-8")
    spec = (shared_dir / "spec" / "conflict-rules.md").read_text(encoding="utf-8")
    first_sentence = stored.split("\n")[0].removeprefix("Failed to commit transaction: ")
    assert stored.startswith("Failed to commit transaction: Commit failed: ") and first_sentence in spec
    (tmp_path / "f").mkdir()
    f_delta_rs_aborted(tmp_path / "f")
    assert (tmp_path / "f" / "error.txt").read_text(encoding="utf-8") == stored
    attempts = json.loads((tmp_path / "f" / "attempts.json").read_text())
    assert all(a["error"].startswith("Failed to commit transaction: ") for a in attempts if a["error"])


def _normalised(table: Path) -> list[list[dict]]:
    """Commits without byte sizes (they depend on the pyarrow release that wrote the Parquet)."""
    def strip(o):
        if isinstance(o, dict):
            return {k: strip(v) for k, v in o.items()
                    if k != "size" and "Bytes" not in k and "FileSize" not in k}
        if isinstance(o, list):
            return [strip(x) for x in o]
        return o
    return [strip(c) for _, c in sorted(_commits(table).items())]


@pytest.mark.parametrize("name", ASSEMBLED)
def test_assembled_incidents_regenerate_identically(sample_logs, tmp_path, name):
    from forensics.synth import incidents

    builder = getattr(incidents, name.split("-", 1)[0] + "_" + name.split("-", 1)[1].replace("-", "_"))
    builder(tmp_path)
    assert _normalised(tmp_path / "table") == _normalised(sample_logs / name / "table")
    assert _orphans(tmp_path / "table") == _orphans(sample_logs / name / "table")
