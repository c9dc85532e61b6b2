"""forensics.errortext: real error texts (corpus/errors), texts built from the conflict-rules §7 templates
with real commitInfo from corpus tables, real delta-rs conflicts, Spark event logs, and
property tests that the readers never raise."""

from __future__ import annotations

import gzip
import json
import string
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from forensics.errortext import (
    ErrorReport,
    parse_error_text,
    parse_event_log,
    parse_lenient,
)

DOCS = "https://docs.delta.io/latest/concurrency-control.html"

# ----------------------------------------------------------------------------------------------
# corpus/errors: expectations written by hand from corpus/errors/INDEX.md and each file's name and
# `# source:` line (not from the parser). Partition: {} = "root of the table", None = not stated.
# ----------------------------------------------------------------------------------------------

CORPUS = {
    "01-concurrent-append-root-oss-delta31-stacktrace.txt":
        dict(exc="ConcurrentAppendException", partition={}, family="delta-spark<=3.1",
             txn="27fd66c8-5027-4e2e-b5e7-5611887b2f73", read_version=4, blind=True),
    "03-concurrent-delete-delete-optimize-databricks.txt":
        dict(exc="ConcurrentDeleteDeleteException", family="databricks", wrapper="Caused by",
             file="organization_id=152650970577842/part-00000-96b0700b-cf3e-4a51-8931-410b19e828b8.c000.snappy.parquet",
             txn="c9291a12-77ec-4976-a6b2-6927fc295d60", read_version=274, operation="OPTIMIZE"),
    "04-metadata-changed-standalone-update-schema.txt":
        dict(exc="MetadataChangedException", operation="UPDATE SCHEMA", read_version=3,
             engine="pulsar-sink-connector-version-2.9.1 Delta-Standalone/0.3.0"),
    "06-protocol-changed-via-simba-odbc-dbt.txt":
        dict(exc="ProtocolChangedException", empty_dir=True, wrapper="HiveSQLException", truncated=True),
    "07-protocol-changed-empty-dir-no-readversion.txt":
        dict(exc="ProtocolChangedException", empty_dir=True, family="databricks",
             txn="ad84ea00-7c1b-484c-ba7b-59fcec903211", read_version=None,
             params={"mode": "Append", "partitionBy": ["organization_id"]}),
    "09-concurrent-append-partition-tahoe-short.txt":
        dict(exc="ConcurrentAppendException", partition={"cust_id": "000"}, family="databricks"),
    "10-concurrent-append-error-class-prefix.txt":
        dict(exc="ConcurrentAppendException", partition={}, error_class="DELTA_CONCURRENT_APPEND"),
    "12-concurrent-append-partition-manual-update-one-line.txt":
        dict(exc="ConcurrentAppendException", partition={"data_day": "<data-day>"},
             error_class="DELTA_CONCURRENT_APPEND", operation="Manual Update", json_complete=False),
    "13-concurrent-delete-delete-dlt-apply-changes.txt":
        dict(exc="ConcurrentDeleteDeleteException", error_class="DELTA_CONCURRENT_DELETE_DELETE",
             file="XXXX.snappy.parquet"),
    "15-concurrent-append-parallel-notebooks.txt":
        dict(exc="ConcurrentAppendException", partition={}, error_class="DELTA_CONCURRENT_APPEND"),
    "16-delta-rs-concurrent-delete-read-help.txt":
        dict(exc="ConcurrentDeleteReadException", family="delta-rs", rule="delete-read"),
    # a lock-client VersionAlreadyExists followed by the conflict checker's verdict: the verdict counts
    "18-delta-rs-lock-client-version-exists.txt":
        dict(exc="MetadataChangedException", family="delta-rs", rule="metadata"),
    # a retry storm of VersionAlreadyExists ending in a successful flush: a log-store race, no verdict
    "19-delta-rs-version-already-exists-retry-storm.txt": None,
    "21-trino-delta-failed-to-write-log-entry.txt": None,
    "22-protocol-changed-python-dynamodb-logstore.txt":
        dict(exc="ProtocolChangedException", empty_dir=True, truncated=True),
    "24-negative-spark-streaming-commit-log.txt": None,
    "25-negative-iceberg-commit-failed-base-metadata.txt": None,
    "27-concurrent-append-multicol-partition-python-truncated.txt":
        dict(exc="ConcurrentAppendException", truncated=True,
             partition={"pk1": "sadadq3r242r", "pk2": "94", "year": "2022", "month": "10", "day": "16"}),
    "28-concurrent-append-main-thread-blind-append-winner.txt":
        dict(exc="ConcurrentAppendException", partition={}, blind=True, read_version=317,
             txn="d7ccb149-a3d3-449e-b21e-06f3ee27d711"),
    "30-trino-delta-reconciliation-library-strings.txt": None,
}

RULE_OF = {
    "ConcurrentAppendException": "append",
    "ConcurrentDeleteReadException": "delete-read",
    "ConcurrentDeleteDeleteException": "delete-delete",
    "MetadataChangedException": "metadata",
    "ProtocolChangedException": "protocol",
}


def _corpus_text(path: Path) -> str:
    """INDEX.md: line 1 is `# source: …`; strip it before parsing."""
    text = path.read_text(encoding="utf-8")
    first, _, rest = text.partition("\n")
    assert first.startswith("# source:")
    return rest


def test_corpus_index_covers_every_file(shared_dir):
    files = sorted(p.name for p in (shared_dir / "corpus" / "errors").glob("*.txt"))
    assert files == sorted(CORPUS), "corpus/errors changed: add expectations for the new files"


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_file_classified(shared_dir, name):
    path = shared_dir / "corpus" / "errors" / name
    exp = CORPUS[name]
    r = parse_error_text(_corpus_text(path))
    assert isinstance(r, ErrorReport)
    if exp is None or "negative" in name:
        assert exp is None
        assert not r.recognized
        assert r.why_not and "\n" not in r.why_not
        assert r.exception is None and r.family == "unknown"
        return
    assert r.recognized, r.why_not
    assert r.why_not is None
    assert r.exception == exp["exc"]
    assert r.rule == exp.get("rule", RULE_OF[exp["exc"]])
    if "partition" in exp:
        assert r.partition == exp["partition"]
    if "family" in exp:
        assert r.family == exp["family"]
    if "error_class" in exp:
        assert r.error_class == exp["error_class"]
    if "file" in exp:
        assert r.file == exp["file"]
    if "wrapper" in exp:
        assert exp["wrapper"] in r.wrapper
    assert r.empty_directory == exp.get("empty_dir", False)
    if exp.get("truncated"):
        assert r.truncated
    winner_keys = {"txn", "read_version", "blind", "operation", "engine", "params", "json_complete"}
    if winner_keys & exp.keys():
        w = r.winner
        assert w is not None and w.json_present
        if "txn" in exp:
            assert w.txn_id == exp["txn"]
        if "read_version" in exp:
            assert w.read_version == exp["read_version"]
        if "blind" in exp:
            assert w.is_blind_append is exp["blind"]
        if "operation" in exp:
            assert w.operation == exp["operation"]
        if "engine" in exp:
            assert w.engine_info == exp["engine"]
        if "params" in exp:
            assert w.operation_parameters == exp["params"]
        if "json_complete" in exp:
            assert w.json_complete is exp["json_complete"]
    assert r.excerpt and "\x1b" not in r.excerpt


def test_corpus_json_quirks(shared_dir):
    """Spec §7.4 quirks on the real texts: unquoted values, a line break inside engineInfo,
    placeholders, and a winner that is version 0 (no readVersion)."""
    errors = shared_dir / "corpus" / "errors"
    w1 = parse_error_text(_corpus_text(errors / "01-concurrent-append-root-oss-delta31-stacktrace.txt")).winner
    assert w1.operation_parameters == {"mode": "Append"}
    assert w1.commit_info["operationMetrics"] == {"numFiles": "3", "numOutputRows": "160724",
                                                  "numOutputBytes": "120799894"}
    assert w1.timestamp == 1728639379364 and w1.json_complete
    w12 = parse_error_text(_corpus_text(errors / "12-concurrent-append-partition-manual-update-one-line.txt")).winner
    assert {"timestamp", "readVersion", "txnId", "userName"} <= set(w12.redacted_keys)
    assert w12.txn_id is None and w12.timestamp is None and w12.read_version is None
    assert w12.isolation_level == "WriteSerializable" and w12.is_blind_append is False
    assert w12.engine_info == "Databricks-Runtime/15.3.x-photon-scala2.12"


# ----------------------------------------------------------------------------------------------
# Texts built from the conflict-rules §7 templates with real commitInfo from a corpus table
# ----------------------------------------------------------------------------------------------


def _commit_info(shared_dir, table: str, version: int) -> tuple[dict, str]:
    """The commitInfo of one real commit: (parsed with json, the raw line)."""
    log = shared_dir / "corpus" / "tables" / table / "_delta_log" / f"{version:020d}.json"
    for line in log.read_text().splitlines():
        obj = json.loads(line)
        if "commitInfo" in obj:
            return obj["commitInfo"], line
    raise AssertionError(f"no commitInfo in {log}")


def _printed_le40(ci: dict) -> str:
    """How delta-spark <= 4.0 prints a winner's commitInfo (conflict-rules §7.4): Jackson JSON whose
    operationParameters values are written raw (one level of encoding lost)."""
    parts = []
    for k, v in ci.items():
        if k == "operationParameters":
            inner = ",".join(f"{json.dumps(pk)}:{pv}" for pk, pv in v.items())
            parts.append(f'"operationParameters":{{{inner}}}')
        else:
            parts.append(f"{json.dumps(k)}:{json.dumps(v, separators=(',', ':'))}")
    return "{" + ",".join(parts) + "}"


def _decoded_params(ci: dict) -> dict:
    """What operationParameters mean, decoded independently of the parser (json only)."""
    out = {}
    for k, v in ci["operationParameters"].items():
        try:
            out[k] = json.loads(v)
        except ValueError:
            out[k] = v
    return out


@pytest.fixture(scope="module")
def update_ci(shared_dir):
    """A real UPDATE commit (delta-spark 3.0 SNAPSHOT) with a predicate parameter."""
    ci, _ = _commit_info(shared_dir, "golden-basic-with-inserts-updates", 1)
    assert ci["operation"] == "UPDATE"
    return ci


def _assert_winner_matches(w, ci: dict, *, txn: bool = True):
    assert w is not None and w.json_present
    assert w.timestamp == ci["timestamp"]
    assert w.operation == ci["operation"]
    assert w.read_version == ci.get("readVersion")
    assert w.isolation_level == ci.get("isolationLevel")
    assert w.is_blind_append is ci.get("isBlindAppend")
    assert w.engine_info == ci.get("engineInfo")
    assert w.txn_id == (ci.get("txnId") if txn else None)
    assert w.operation_parameters == _decoded_params(ci)
    assert w.commit_info["operationMetrics"] == ci["operationMetrics"]


def test_le31_plain_append_with_partition_and_json(update_ci):
    # conflict-rules §7.1: base message + "\nConflicting commit: " + JSON + "\nRefer to ... for more details."
    text = ("io.delta.exceptions.ConcurrentAppendException: Files were added to partition "
            "[date=2024-01-01, region=null] by a concurrent update. Please try the operation again.\n"
            f"Conflicting commit: {_printed_le40(update_ci)}\nRefer to {DOCS} for more details.")
    r = parse_error_text(text)
    assert r.recognized and r.exception == "ConcurrentAppendException" and r.rule == "append"
    assert r.family == "delta-spark<=3.1" and r.error_class is None
    assert r.partition == {"date": "2024-01-01", "region": None}
    assert r.partition_text == "[date=2024-01-01, region=null]"
    assert r.package == "io.delta.exceptions" and not r.truncated
    _assert_winner_matches(r.winner, update_ci)
    # unquoted values are invalid JSON but lose nothing: complete, with the quirk listed
    assert r.winner.json_complete is True
    assert "Conflicting commit" in r.excerpt and r.details["docs_link"] == DOCS


def test_le40_json_is_complete_when_only_unquoted(shared_dir):
    ci, _ = _commit_info(shared_dir, "golden-basic-with-inserts-updates", 0)  # WRITE, mode ErrorIfExists
    printed = _printed_le40(ci)
    assert '"mode":ErrorIfExists' in printed
    res = parse_lenient(printed)
    assert res.value["operationParameters"] == {"mode": "ErrorIfExists", "partitionBy": []}
    assert res.value["txnId"] == ci["txnId"] and res.end == len(printed)


def test_v32_delete_read_with_txn_and_without(update_ci):
    # conflict-rules §7.2 template; <file> for DeleteRead = "<path> in <partition>"
    path = "date=2024-01-01/part-00000-6dfaec75-bd45-4fd6-b20f-7d58c9341479-c000.snappy.parquet"
    base = ("[DELTA_CONCURRENT_DELETE_READ] ConcurrentDeleteReadException: This transaction attempted to read one "
            f"or more files that were deleted (for example {path} in partition [date=2024-01-01]) by a concurrent "
            "update. Please try the operation again.\nConflicting commit: {json}\nRefer to " + DOCS +
            " for more details.")
    r = parse_error_text(base.replace("{json}", _printed_le40(update_ci)))
    assert r.recognized and r.exception == "ConcurrentDeleteReadException" and r.rule == "delete-read"
    assert r.error_class == "DELTA_CONCURRENT_DELETE_READ" and r.family == "delta-spark-3.2-4.0"
    assert r.file == path and r.partition == {"date": "2024-01-01"}
    _assert_winner_matches(r.winner, update_ci)

    no_txn = {k: v for k, v in update_ci.items() if k != "txnId"}
    r2 = parse_error_text(base.replace("{json}", _printed_le40(no_txn)))
    _assert_winner_matches(r2.winner, update_ci, txn=False)
    assert "txnId" not in r2.winner.commit_info and r2.winner.redacted_keys == ()


def test_v41_subclass_with_partition_hint_names_winner_version():
    # conflict-rules §7.3: "[<CLASS>.<SUB>] <main> <sub>"
    text = ("io.delta.exceptions.ConcurrentAppendException: [DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT] "
            "Transaction conflict detected. a concurrent MERGE added data to table spark_catalog.default.events "
            "committed at version 12. The concurrent operation modified data in the partition "
            "[date=2024-01-01, country=null] that should have been read by this operation. Please retry the "
            f"operation. Refer to {DOCS} for more information.")
    r = parse_error_text(text)
    assert r.recognized and r.family == "delta-spark-4.1+"
    assert r.exception == "ConcurrentAppendException" and r.rule == "append"
    assert r.error_class == "DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT"
    assert r.table == "spark_catalog.default.events"
    assert r.partition == {"date": "2024-01-01", "country": None}
    assert r.winner.version == 12 and r.winner.operation == "MERGE"
    assert r.winner.json_present is False and r.winner.commit_info == {}


def test_v41_delete_delete_without_hint_and_path_table():
    text = ("[DELTA_CONCURRENT_DELETE_DELETE.WITHOUT_HINT] Transaction conflict detected, a concurrent OPTIMIZE "
            "deleted data from table delta.`/data/my table` (committed at version 7) that this transaction "
            "attempted to delete. The concurrent operation deleted data that was read by this operation. Please "
            f"retry the operation. Refer to {DOCS} for more information.")
    r = parse_error_text(text)
    assert r.exception == "ConcurrentDeleteDeleteException" and r.rule == "delete-delete"
    assert r.table == "delta.`/data/my table`" and r.winner.version == 7 and r.winner.operation == "OPTIMIZE"
    assert r.partition is None


def test_v44_metadata_changed_names_table(update_ci):
    text = ("[DELTA_METADATA_CHANGED] MetadataChangedException: The metadata of the Delta table "
            "main.sales.orders has been changed by a concurrent update. Please try the operation again.\n"
            f"Conflicting commit: {json.dumps(update_ci)}\nRefer to {DOCS} for more details.")
    r = parse_error_text(text)
    assert r.exception == "MetadataChangedException" and r.table == "main.sales.orders"
    assert r.family == "delta-spark-4.1+"
    # v4.1+ round-trips commitInfo: proper JSON, parameters still JSON-encoded strings
    assert r.winner.json_complete and r.winner.operation_parameters == _decoded_params(update_ci)


def test_truncated_json_salvages_complete_members(update_ci):
    printed = _printed_le40(update_ci)
    cut = printed[: printed.index('"engineInfo"') + 20]
    text = ("org.apache.spark.sql.delta.ConcurrentAppendException: Files were added to the root of the table by a "
            f"concurrent update. Please try the operation again.\nConflicting commit: {cut}")
    r = parse_error_text(text)
    assert r.recognized and r.partition == {} and r.truncated
    w = r.winner
    assert not w.json_complete and w.txn_id is None and w.engine_info is None
    assert w.timestamp == update_ci["timestamp"] and w.read_version == update_ci["readVersion"]
    assert w.commit_info["operationMetrics"] == update_ci["operationMetrics"]


def test_redacted_and_elided_json(update_ci):
    ci = dict(update_ci, txnId="<redacted>", userName="****")
    printed = _printed_le40(ci).replace(json.dumps(update_ci["engineInfo"]), "...")
    text = ("[DELTA_CONCURRENT_APPEND] ConcurrentAppendException: Files were added to partition [id=3] by a "
            f"concurrent update. Please try the operation again.\nConflicting commit: {printed}\nRefer to "
            f"{DOCS} for more details.")
    w = parse_error_text(text).winner
    assert set(w.redacted_keys) == {"txnId", "userName"}
    assert not w.json_complete and w.txn_id is None and w.engine_info is None
    assert w.timestamp == update_ci["timestamp"] and w.is_blind_append is False


def test_wrapped_in_python_py4j_traceback(update_ci):
    text = textwrap.dedent("""\
        Traceback (most recent call last):
          File "/jobs/load.py", line 41, in <module>
            df.write.format("delta").mode("append").save(path)
          File "/opt/spark/python/pyspark/sql/readwriter.py", line 1463, in save
            self._jwrite.save(path)
          File "/opt/spark/python/lib/py4j-0.10.9.7-src.zip/py4j/java_gateway.py", line 1322, in __call__
        py4j.protocol.Py4JJavaError: An error occurred while calling o61.save.
        : io.delta.exceptions.ConcurrentAppendException: [DELTA_CONCURRENT_APPEND] ConcurrentAppendException: \
        Files were added to partition [date=2024-01-01] by a concurrent update. Please try the operation again.
        Conflicting commit: JSON
        Refer to DOCS for more details.
        \tat org.apache.spark.sql.delta.DeltaErrorsBase.concurrentAppendException(DeltaErrors.scala:2300)
        \tat org.apache.spark.sql.delta.ConflictChecker.checkForAddedFilesThatShouldHaveBeenReadByCurrentTxn(ConflictChecker.scala:305)
        """).replace("JSON", _printed_le40(update_ci)).replace("DOCS", DOCS)
    r = parse_error_text(text)
    assert r.recognized and r.exception == "ConcurrentAppendException"
    assert r.wrapper[:2] == ["Python traceback", "Py4JJavaError"]
    assert r.partition == {"date": "2024-01-01"}
    _assert_winner_matches(r.winner, update_ci)
    assert "\tat " not in r.excerpt and "DeltaErrorsBase" not in r.excerpt


def test_wrapped_in_hive_and_caused_by(update_ci):
    msg = ("[DELTA_METADATA_CHANGED] MetadataChangedException: The metadata of the Delta table has been changed "
           "by a concurrent update. Please try the operation again.\nConflicting commit: "
           f"{_printed_le40(update_ci)}\nRefer to {DOCS} for more details.")
    text = (f"org.apache.hive.service.cli.HiveSQLException: Error running query: io.delta.exceptions."
            f"MetadataChangedException: {msg}\n"
            "\tat org.apache.spark.sql.hive.thriftserver.HiveThriftServerErrors$.runningQueryError(HiveThriftServerErrors.scala:46)\n"
            f"Caused by: io.delta.exceptions.MetadataChangedException: {msg}\n"
            "\tat org.apache.spark.sql.delta.DeltaErrorsBase.metadataChangedException(DeltaErrors.scala:2339)\n"
            "\t... 17 more\n")
    r = parse_error_text(text)
    assert r.recognized and r.exception == "MetadataChangedException" and r.rule == "metadata"
    assert r.wrapper == ["HiveSQLException", "Caused by"]
    assert r.error_class == "DELTA_METADATA_CHANGED" and r.table is None
    _assert_winner_matches(r.winner, update_ci)


def test_odbc_repr_with_escaped_newlines(update_ci):
    inner = ("io.delta.exceptions.ConcurrentDeleteDeleteException: This transaction attempted to delete one or more "
             "files that were deleted (for example p=1/part-0001.parquet) by a concurrent update. Please try the "
             f"operation again.\\nConflicting commit: {_printed_le40(update_ci)}\\nRefer to {DOCS} for more details.")
    text = repr(("HY000", f"[HY000] [Simba][Hardy] (35) Error from server: error code: '0' error message: "
                          f"'org.apache.hive.service.cli.HiveSQLException: Error running query: {inner}'."))
    r = parse_error_text(text)
    assert r.exception == "ConcurrentDeleteDeleteException" and r.file == "p=1/part-0001.parquet"
    assert r.family == "databricks" and "Simba ODBC" in r.wrapper
    assert r.winner.txn_id == update_ci["txnId"]


def test_upgrade_retry_message_and_other_spark_exceptions():
    # conflict-rules §7.1 retryMsg variant
    r = parse_error_text("io.delta.exceptions.ConcurrentAppendException: Files were added to the root of the table "
                         "by a concurrent update. Upgrading all your concurrent writers to use the latest Delta Lake "
                         "may avoid this error. Please upgrade and then retry this operation again.")
    assert r.exception == "ConcurrentAppendException" and r.details["retry_message"] == "upgrade-writers"
    r = parse_error_text("[DELTA_CONCURRENT_WRITE] ConcurrentWriteException: A concurrent transaction has written new "
                         "data since the current transaction read the table. Please try the operation again.\n"
                         f"Refer to {DOCS} for more details.")
    assert (r.exception, r.rule, r.error_class) == ("ConcurrentWriteException", "write", "DELTA_CONCURRENT_WRITE")
    assert r.winner is None
    r = parse_error_text("io.delta.exceptions.ConcurrentTransactionException: [DELTA_CONCURRENT_TRANSACTION] "
                         "ConcurrentTransactionException: This error occurs when multiple streaming queries are "
                         "using the same checkpoint to write into this table. Did you run multiple instances of the "
                         "same streaming query at the same time?")
    assert (r.exception, r.rule) == ("ConcurrentTransactionException", "txn")
    # conflict-rules §5.3: plain message
    r = parse_error_text("io.delta.exceptions.ConcurrentTransactionException: A conflicting metadata domain "
                         "delta.clustering is added.")
    assert (r.exception, r.rule, r.details["domain"]) == ("ConcurrentTransactionException", "domain", "delta.clustering")
    # conflict-rules §7.2: v3.2+ ProtocolChanged has no "Please try the operation again."
    r = parse_error_text("[DELTA_PROTOCOL_CHANGED] ProtocolChangedException: The protocol version of the Delta table "
                         "has been changed by a concurrent update. \nRefer to " + DOCS + " for more details.")
    assert (r.exception, r.empty_directory, r.family) == ("ProtocolChangedException", False, "delta-spark-3.2-4.0")


def test_max_commit_retries_exceeded():
    text = ("io.delta.exceptions.DeltaIllegalStateException: [DELTA_MAX_COMMIT_RETRIES_EXCEEDED] This commit has "
            "failed as it has been tried 10000001 times but did not succeed. This can be caused by the Delta table "
            "being committed continuously by many concurrent commits.\nCommit started at version: 41\nCommit failed "
            "at version: 52\nNumber of actions attempted to commit: 3\nTotal time spent attempting this commit: 9120 ms")
    r = parse_error_text(text)
    assert r.recognized and r.rule == "max-retries" and r.error_class == "DELTA_MAX_COMMIT_RETRIES_EXCEEDED"
    assert r.details == {"attempts": 10000001, "start_version": 41, "fail_version": 52, "num_actions": 3,
                         "time_ms": 9120}


# ----------------------------------------------------------------------------------------------
# delta-rs (conflict-rules §7.5): real conflicts raised by the deltalake engine, plus templates
# ----------------------------------------------------------------------------------------------


def _real_delta_rs_errors(tmp_path) -> dict[str, BaseException]:
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    out: dict[str, BaseException] = {}
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": list(range(10)), "p": ["a"] * 5 + ["b"] * 5}), partition_by=["p"])
    stale = DeltaTable(path)  # reads version 0
    DeltaTable(path).delete("id < 3")  # the winner, version 1: removes files of partition a
    try:
        stale.delete("id < 2")
    except Exception as e:  # noqa: BLE001
        out["delete-read"] = e
    try:
        DeltaTable(path, version=0).update({"id": "id + 1"}, predicate="p = 'a'")
    except Exception as e:  # noqa: BLE001
        out["append"] = e
    path2 = str(tmp_path / "u")
    write_deltalake(path2, pa.table({"id": [1, 2]}))
    stale2 = DeltaTable(path2)
    DeltaTable(path2).alter.set_table_description("winner changes metadata")
    try:
        stale2.delete("id < 2")
    except Exception as e:  # noqa: BLE001
        out["metadata"] = e
    return out


def test_real_delta_rs_conflicts(tmp_path):
    errors = _real_delta_rs_errors(tmp_path)
    expected = {"delete-read": "ConcurrentDeleteReadException", "append": "ConcurrentAppendException",
                "metadata": "MetadataChangedException"}
    assert set(errors) == set(expected), errors
    for rule, exc in expected.items():
        e = errors[rule]
        assert type(e).__name__ == "CommitFailedError"
        for text in (str(e), "".join(traceback.format_exception(e))):
            r = parse_error_text(text)
            assert r.recognized and r.family == "delta-rs", text
            assert (r.exception, r.rule) == (exc, rule)
            assert r.winner is None and r.partition is None
    tb = parse_error_text("".join(traceback.format_exception(errors["append"])))
    assert "Python traceback" in tb.wrapper and "Help:" in tb.excerpt


def test_delta_rs_templates():
    r = parse_error_text("Failed to commit transaction: Protocol changed since last commit: reqired read/write 3/7, "
                         "current read/write 1/2")
    assert (r.exception, r.family) == ("ProtocolChangedException", "delta-rs")
    assert r.details["winner_min_writer_version"] == 7 and r.details["current_min_reader_version"] == 1
    r = parse_error_text("_internal.CommitFailedError: Failed to commit transaction: Commit failed: a concurrent "
                         "transaction deleted the same data your transaction deletes.\nHelp: you should retry this "
                         "write operation. If it was based on data contained in the table, you should rerun the query "
                         "generating the data.")
    assert (r.exception, r.rule) == ("ConcurrentDeleteDeleteException", "delete-delete")
    r = parse_error_text("deltalake.exceptions.CommitFailedError: Failed to commit transaction: 15")
    assert (r.recognized, r.rule, r.details["attempts"], r.family) == (True, "max-retries", 15, "delta-rs")
    r = parse_error_text("Failed to commit transaction: Concurrent transaction failed.")
    assert (r.exception, r.rule) == ("ConcurrentTransactionException", "txn")


# ----------------------------------------------------------------------------------------------
# Delta Kernel (conflict-rules §7.6, §10)
# ----------------------------------------------------------------------------------------------


def test_kernel_texts():
    text = ("io.delta.kernel.exceptions.ConcurrentWriteException: A concurrent transaction removed (or updated the "
            "deletion vector of) file s3://b/t/part-00001.parquet that this transaction (attempting version 9) also "
            "removes. Letting both commits through would leave two active entries for the same data file. Retry "
            "the operation against the latest table state.")
    r = parse_error_text(text)
    assert (r.exception, r.rule, r.family) == ("ConcurrentWriteException", "delete-delete", "kernel")
    assert r.file == "s3://b/t/part-00001.parquet" and r.details["attempt_version"] == 9
    r = parse_error_text("io.delta.kernel.exceptions.ProtocolChangedException: Transaction has encountered a conflict "
                         "and can not be committed. Query needs to be re-executed using the latest version of the "
                         "table. This happens when multiple writers are writing to an empty directory. Creating the "
                         "table ahead of time will avoid this conflict.")
    assert (r.exception, r.rule, r.family, r.empty_directory) == ("ProtocolChangedException", "protocol", "kernel", True)
    r = parse_error_text("io.delta.kernel.exceptions.ConcurrentTransactionException: This error occurs when multiple "
                         "updates are using the same transaction identifier to write into this table.\nApplication "
                         "ID: ingest-7, Attempted version: 4, Latest version in table: 5")
    assert (r.exception, r.rule, r.details["app_id"], r.details["latest_txn_version"]) == (
        "ConcurrentTransactionException", "txn", "ingest-7", 5)


# ----------------------------------------------------------------------------------------------
# Negatives
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "org.apache.iceberg.exceptions.ValidationException: Found conflicting files that can contain records matching "
    "ref(name=\"id\") == 1: [s3://b/t/data/00000-1.parquet]",
    "Generic DeltaTable error: Version mismatch",
    "Tried committing existing table version: 5",
    "java.util.ConcurrentModificationException\n\tat java.base/java.util.HashMap$HashIterator.nextNode(HashMap.java:1597)",
    "",
    "ConcurrentWriteException: another request changed the same data at the same time; try again",
])
def test_negatives_not_recognized(text):
    r = parse_error_text(text)
    assert not r.recognized and r.why_not and r.family == "unknown"


# ----------------------------------------------------------------------------------------------
# Spark event logs
# ----------------------------------------------------------------------------------------------


def _event_lines(error: str) -> list[str]:
    """A small event log in Spark's own JSON-lines format (field names as Spark 3.4+ writes them)."""
    ev = [
        {"Event": "SparkListenerLogStart", "Spark Version": "3.5.1"},
        {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart", "executionId": 3,
         "rootExecutionId": 3, "description": "MERGE INTO events t USING updates s ON t.id = s.id",
         "details": "", "physicalPlanDescription": "", "sparkPlanInfo": {}, "time": 1712912520000,
         "modifiedConfigs": {}},
        {"Event": "SparkListenerJobStart", "Job ID": 5, "Submission Time": 1712912521000, "Stage Infos": [],
         "Stage IDs": [7], "Properties": {"spark.sql.execution.id": "3"}},
        {"Event": "SparkListenerJobEnd", "Job ID": 5, "Completion Time": 1712912524000,
         "Job Result": {"Result": "JobSucceeded"}},
        {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd", "executionId": 3,
         "time": 1712912526500, "errorMessage": error},
        {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart", "executionId": 4,
         "rootExecutionId": 4, "description": "SELECT count(*) FROM events", "time": 1712912527000},
        {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd", "executionId": 4,
         "time": 1712912528000, "errorMessage": ""},
        {"Event": "SparkListenerJobStart", "Job ID": 6, "Submission Time": 1712912529000, "Stage IDs": [8],
         "Properties": {}},
        {"Event": "SparkListenerTaskEnd", "Stage ID": 8, "Task End Reason": {
            "Reason": "ExceptionFailure", "Class Name": "java.lang.ArithmeticException", "Description": "/ by zero",
            "Stack Trace": [], "Full Stack Trace": "java.lang.ArithmeticException: / by zero\n\tat X.y(X.java:1)"}},
        {"Event": "SparkListenerJobEnd", "Job ID": 6, "Completion Time": 1712912530000,
         "Job Result": {"Result": "JobFailed", "Exception": {"Message": "Job aborted due to stage failure: / by zero",
                                                              "Stack Trace": []}}},
    ]
    return [json.dumps(e) for e in ev] + ['{"Event":"SparkListenerTaskEnd","Stage ID": 9, "Task En']  # cut tail


def _conflict_error(shared_dir) -> str:
    text = _corpus_text(shared_dir / "corpus" / "errors" / "28-concurrent-append-main-thread-blind-append-winner.txt")
    return text.replace('Exception in thread "main" ', "")


def test_event_log_handwritten(tmp_path, shared_dir):
    error = _conflict_error(shared_dir)
    lines = _event_lines(error)
    plain = tmp_path / "app-1"
    plain.write_text("\n".join(lines) + "\n")
    gz = tmp_path / "app-2.gz"
    with gzip.open(gz, "wt") as f:
        f.write("\n".join(lines) + "\n")
    rolled = tmp_path / "eventlog_v2_app-3"
    rolled.mkdir()
    (rolled / "events_2_app-3").write_text("\n".join(lines[4:]) + "\n")
    (rolled / "events_1_app-3").write_text("\n".join(lines[:4]) + "\n")
    (rolled / "appstatus_app-3").write_text("")
    for source in (plain, gz, rolled, lines):
        failures = parse_event_log(source)
        assert [f.execution_id for f in failures] == [3, None]
        f = failures[0]
        assert f.description.startswith("MERGE INTO events")
        assert (f.start_ms, f.end_ms) == (1712912520000, 1712912526500) and f.job_ids == (5,)
        assert f.error_text == error and f.source == "sql-execution-end"
        assert f.report.recognized and f.report.exception == "ConcurrentAppendException"
        assert f.report.winner.txn_id == "d7ccb149-a3d3-449e-b21e-06f3ee27d711"
        assert f.report.winner.timestamp <= f.end_ms
        other = failures[1]
        assert other.source == "job-end" and other.job_ids == (6,) and "/ by zero" in other.error_text
        assert not other.report.recognized


@pytest.mark.slow
def test_event_log_from_real_spark(tmp_path):
    """A real PySpark run with event logging on (Spark 4.x writes a rolled, zstd-compressed log).
    No Delta jars are available offline, so the failure is a raise_error carrying a Delta message:
    the envelope (USER_RAISED_EXCEPTION, SQLSTATE) and the event-log format are Spark's own."""
    msg = ("io.delta.exceptions.ConcurrentAppendException: Files were added to partition [p=1] by a concurrent "
           "update. Please try the operation again.")
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        from pyspark.sql import SparkSession
        spark = (SparkSession.builder.master("local[1]").appName("errortext-eventlog")
                 .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", sys.argv[1])
                 .config("spark.ui.enabled", "false").getOrCreate())
        try:
            spark.sql("SELECT raise_error('{msg}') AS x").collect()
        except Exception:
            pass
        try:
            spark.range(3).selectExpr("assert_true(id < 1, 'plain failure') AS y").collect()
        except Exception:
            pass
        spark.range(2).collect()
        spark.stop()
    """))
    logs = tmp_path / "events"
    logs.mkdir()
    proc = subprocess.run([sys.executable, str(script), str(logs)], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    apps = [p for p in logs.iterdir() if not p.name.startswith(".")]
    assert len(apps) == 1
    failures = parse_event_log(apps[0])
    assert len(failures) == 2
    first, second = failures
    assert first.source == "sql-execution-end" and first.start_ms < first.end_ms
    assert msg in first.error_text
    assert first.report.recognized and first.report.exception == "ConcurrentAppendException"
    assert first.report.partition == {"p": "1"}
    assert "plain failure" in second.error_text and not second.report.recognized


# ----------------------------------------------------------------------------------------------
# Properties: never raise; valid JSON round-trips; truncation salvages only complete members
# ----------------------------------------------------------------------------------------------

_SAFE = "".join(c for c in string.ascii_lowercase + string.digits + " _-:,{}[]\"\\/\n\t" if c not in "x")
_json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                          st.text(alphabet=_SAFE, max_size=12))
_json = st.recursive(_json_scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.dictionaries(st.text(alphabet=_SAFE, max_size=8), kids, max_size=4)),
    max_leaves=20)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=3000))
def test_parse_error_text_never_raises(text):
    r = parse_error_text(text)
    assert isinstance(r, ErrorReport)
    assert r.recognized == (r.why_not is None)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([
    "io.delta.exceptions.ConcurrentAppendException: ", "[DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT] ",
    "Files were added to partition [", "a=1, b=", "] by a concurrent update. ", "Conflicting commit: ", "{",
    '"mode":', "Append", ",", "}", "[", "]", "...", "<redacted>", "\n\tat x.Y(Z.java:1)\n", "Caused by: ",
    "(for example ", ") by a concurrent update", "a concurrent MERGE added data to table t committed at version ",
    "12", "in the partition [", "Failed to commit transaction: ", "Metadata changed since last commit.",
    "This happens when multiple writers", '"', "\\n", "\\", "\x1b[31m", "…",
]), max_size=40))
def test_parse_error_text_never_raises_on_delta_fragments(parts):
    r = parse_error_text("".join(parts))
    assert isinstance(r, ErrorReport) and "\x1b" not in r.excerpt


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=2000), st.integers(0, 50))
def test_lenient_json_never_raises(text, start):
    res = parse_lenient(text, start)
    assert isinstance(res.complete, bool)


def test_lenient_json_depth_bound():
    deep = "[" * 100_000 + "]" * 100_000
    res = parse_lenient('{"a":' + deep + ',"b":1}')
    assert res.value == {"b": 1} and not res.complete and any("nesting" in p for p in res.problems)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(alphabet=_SAFE, max_size=8), _json, max_size=6))
def test_lenient_json_valid_json_round_trips(obj):
    text = json.dumps(obj)
    res = parse_lenient(text)
    assume(not res.redacted)  # a generated string may look like a placeholder (e.g. "<ab>")
    assert res.value == obj and res.complete and res.end == len(text)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(alphabet=_SAFE, max_size=8), _json, min_size=1, max_size=6), st.data())
def test_lenient_json_truncation_salvages_only_complete_values(obj, data):
    text = json.dumps(obj)
    cut = data.draw(st.integers(1, len(text) - 1))
    res = parse_lenient(text[:cut])
    assert not res.complete
    assert isinstance(res.value, dict)
    for k, v in res.value.items():
        assert k in obj
        if not isinstance(obj[k], (dict, list)):
            assert v == obj[k]
