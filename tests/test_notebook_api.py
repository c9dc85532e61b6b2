"""The Python API driven as a notebook drives it: history as a DataFrame, answers read as flat
attributes, stories joined as text, times as datetimes, and `explain_error` handed what a job
actually catches (issue 24 items 2 and 3).

The exceptions are the real classes built the way their packages build them: delta-spark's
`delta.exceptions` (plain, captured inside the live Spark session, Spark Connect's) from the
engine-form text of sample (a); a PySpark captured exception raised by Spark itself
(`raise_error` carrying that text); deltalake's `CommitFailedError` raised by a real race
(tests/races.py). Sample (a)'s truth: the 2024-06-19 MERGE won at v3 (sample_logs/README.md).
"""

from __future__ import annotations

import datetime as dt
import traceback
from pathlib import Path

import polars as pl
import pytest

import forensics
from forensics import Table
from helpers import run_cli
from races import two_partition_race

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
A = SAMPLES / "a-merge-partitions"
UTC = dt.timezone.utc


@pytest.fixture(scope="module")
def user_spark(spark):
    """A SparkSession the notebook made itself (its own session on the one JVM a process can have)."""
    return spark.newSession()


@pytest.fixture(scope="module")
def sample_a(user_spark):
    return Table(A / "table", spark=user_spark, use_cache=False)


@pytest.fixture(scope="module")
def a_text() -> str:
    return (A / "error.txt").read_text()


@pytest.fixture(scope="module")
def race(tmp_path_factory, user_spark):
    r = two_partition_race(str(tmp_path_factory.mktemp("race") / "t"))
    return r, Table(r.uri, spark=user_spark, use_cache=False)


def _delta_message(text: str) -> str:
    """What delta-spark's Python class carries: the JVM message after `io.delta.exceptions.X: `."""
    return text.split(": ", 1)[1]


def _same_answer(ex, winning_version: int, partition: dict) -> None:
    assert ex.verdict == "aborted"
    assert ex.exception == "ConcurrentAppendException" and ex.rule == "append"
    assert ex.winning_version == winning_version, ex.why
    assert ex.partition == partition


# ---- the session and history ----------------------------------------------------------------------


def test_the_callers_session_reads_the_log(sample_a, user_spark):
    assert sample_a._spark_session() is user_spark and not sample_a.read_from_cache
    h = sample_a.history()
    assert isinstance(h, pl.DataFrame) and h["version"].to_list() == sample_a.versions
    v3 = h.filter(pl.col("version") == 3).row(0, named=True)
    # the whole commitInfo, metrics typed: delta-spark writes them as strings ("10", "21")
    assert v3["operation"] == "MERGE" and h.schema["operationMetrics"].to_schema()["numOutputRows"] == pl.Int64
    assert (v3["operationMetrics"]["numTargetRowsCopied"], v3["operationMetrics"]["numOutputRows"]) == (10, 21)


def test_history_of_a_deltalake_table(race):
    r, t = race
    h = t.history()
    v5 = h.filter(pl.col("version") == 5).row(0, named=True)  # the append with app transaction and user metadata
    assert (v5["userMetadata"], v5["operationMetrics"]["num_added_rows"]) == ("nightly run", 2)
    assert h.schema["operationMetrics"].to_schema()["num_added_rows"] == pl.Int64


# ---- explain and whatif: flat answers ---------------------------------------------------------------


def test_explain_answers_flat(user_spark):
    t = Table(SAMPLES / "b-writeserializable-reorder" / "table", spark=user_spark)
    e = t.explain(3)
    assert isinstance(e.verdict, str) and e.verdict == "reordered"
    assert e.winning_version == 2 and e.reordered_before == [2] and e.exception is None
    assert e.verdict.why == e.replayed.why  # code written against the nested record keeps working
    row = t.history().filter(pl.col("version") == 3)
    ts = row["timestamp"].item()
    assert e.committed_at == dt.datetime.fromtimestamp(ts / 1000, UTC) and e.committed_at.tzinfo is not None
    assert row["committedAt"].item() == e.committed_at  # the history DataFrame's datetime column agrees
    text = "\n".join(e.story())
    assert text == e.story_text and text.splitlines()[0].startswith("v3 DELETE")
    assert e.story()[2].kind == "rule" and e.to_dict()["story"] == text.splitlines()
    assert e.to_dict()["verdict"]["verdict"] == "reordered"  # the JSON is unchanged


def test_whatif_answers_flat_and_agrees_with_the_engine(race):
    r, t = race
    loser = r.losers[0]  # deltalake aborted this UPDATE, read at v3, against v4
    w = t.whatif(read_version=loser.read_version, operation=loser.operation, predicate=f"date = '{loser.partition}'")
    assert (w.verdict, w.exception, w.winning_version, w.rule) == ("abort", loser.exception, loser.winner, "appends")
    assert w.partition == {"date": loser.partition} and w.read_version == loser.read_version
    assert w.to_dict()["winningVersion"] == loser.winner
    ok = t.whatif(read_version=t.latest_version, operation="DELETE", predicate="date = '2024-06-20'")
    assert ok.verdict == "commit" and ok.exception is None and ok.winning_version is None


def test_whatif_spells_its_parameters_out():
    import inspect

    params = inspect.signature(Table.whatif).parameters
    assert {"read_version", "operation", "predicate", "mode", "partitions", "isolation_level", "rules", "until",
            "app_id"} <= set(params)
    assert not any(p.kind is p.VAR_KEYWORD for p in params.values())
    assert all(name in Table.whatif.__doc__ for name in ("read_version", "predicate", "isolation_level", "app_id"))


def test_whatif_without_what_it_did_is_a_usage_error(race):
    with pytest.raises(forensics.UsageError, match="read_version and operation"):
        race[1].whatif(read_version=3)


# ---- explain_error: what the job caught -------------------------------------------------------------


def test_delta_spark_exception_object(sample_a, a_text):
    import delta.exceptions

    by_text = sample_a.explain_error(a_text)
    caught = delta.exceptions.ConcurrentAppendException(_delta_message(a_text))
    ex = sample_a.explain_error(caught)
    _same_answer(ex, 3, {"date": "2024-06-19"})
    assert ex.winning_version == by_text.winning_version and ex.story_text == by_text.story_text
    assert ex.winner_committed_at == dt.datetime.fromtimestamp(sample_a.commit(3).timestamp / 1000, UTC)
    assert isinstance(ex.candidates, list) and isinstance(ex.ambiguous, bool)
    assert "\n".join(ex.story()).startswith("Your transaction failed with ConcurrentAppendException")


def test_captured_and_connect_classes(sample_a, a_text, user_spark, monkeypatch):
    """delta-spark's captured class (what PySpark raises from the JVM) needs the live JVM to be
    built; Spark Connect's does not. Neither is a subclass of DeltaConcurrentModificationException."""
    from delta.connect.exceptions import ConcurrentAppendException as ConnectAppend
    from delta.exceptions.captured import ConcurrentAppendException as CapturedAppend
    from delta.exceptions.captured import DeltaConcurrentModificationException
    from pyspark import SparkContext

    jvm = user_spark.sparkContext._jvm
    java = jvm.java.lang.RuntimeException("io.delta.exceptions.ConcurrentAppendException: " + _delta_message(a_text))
    captured = CapturedAppend(_delta_message(a_text), jvm.org.apache.spark.util.Utils.exceptionString(java))
    assert not isinstance(captured, DeltaConcurrentModificationException)
    _same_answer(sample_a.explain_error(captured), 3, {"date": "2024-06-19"})
    with monkeypatch.context() as m:  # kept after its session stopped: read from what it carries, no JVM call
        m.setattr(SparkContext, "_jvm", None)
        with pytest.raises(AssertionError):
            str(captured)
        report = forensics.parse_error_text(captured)
    assert (report.exception, report.partition) == ("ConcurrentAppendException", {"date": "2024-06-19"})
    # Spark Connect hands the error class apart from the message: here a message without it
    import re

    cls = re.match(r"\[(DELTA_[\w.]+)\] ", _delta_message(a_text)).group(1)  # DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT (4.1+)
    connect = ConnectAppend(message=_delta_message(a_text).replace(f"[{cls}] ", ""), errorClass=cls, messageParameters={})
    ex = sample_a.explain_error(connect)
    _same_answer(ex, 3, {"date": "2024-06-19"})
    assert ex.error_class == cls


def test_pyspark_captured_exception_holding_delta_text(sample_a, a_text, user_spark):
    from pyspark.errors.exceptions.captured import CapturedException
    from pyspark.sql import functions as F

    with pytest.raises(CapturedException) as caught:
        user_spark.range(1).select(F.raise_error(F.lit(a_text))).collect()
    _same_answer(sample_a.explain_error(caught.value), 3, {"date": "2024-06-19"})
    try:  # the pipeline's own exception, raised from Spark's: the chain is followed
        raise RuntimeError("nightly merge failed") from caught.value
    except RuntimeError as outer:
        _same_answer(sample_a.explain_error(outer), 3, {"date": "2024-06-19"})


def test_traceback_text_and_object(sample_a, a_text):
    import delta.exceptions

    try:
        raise delta.exceptions.ConcurrentAppendException(_delta_message(a_text))
    except Exception as e:
        tb, te = traceback.format_exc(), traceback.TracebackException.from_exception(e)
    assert tb.startswith("Traceback (most recent call last)")
    _same_answer(sample_a.explain_error(tb), 3, {"date": "2024-06-19"})
    _same_answer(sample_a.explain_error(te), 3, {"date": "2024-06-19"})


def test_deltalake_commit_failed_error_from_a_real_race(race):
    r, t = race
    for loser in r.losers:
        assert type(loser.error).__name__ == "CommitFailedError"
        ex = t.explain_error(loser.error)
        by_text = t.explain_error(loser.text)
        assert (ex.verdict, ex.exception, ex.rule, ex.family) == ("aborted", loser.exception, "append", "delta-rs")
        assert ex.certainty == "inferred" and ex.partition is None  # delta-rs's text names no partition
        # the text names no winner: every commit that can have beaten it, ranked, the engine's among them
        assert loser.winner in [c.winning_version for c in ex.candidates]
        assert ex.ambiguous == (len({c.winning_version for c in ex.candidates}) > 1)
        assert (ex.winning_version, ex.candidates) == (by_text.winning_version, by_text.candidates)
    assert t.explain_error(r.losers[0].error).winning_version == r.losers[0].winner


def test_failed_at_takes_a_datetime_text_or_epoch_ms(race):
    """Failed just after the winner committed: only commits before then can have beaten it."""
    r, t = race
    loser = r.losers[0]
    won_ms = t.commit(loser.winner).timestamp
    at = dt.datetime.fromtimestamp((won_ms + 1) / 1000, UTC)
    answers = [t.explain_error(loser.error, failed_at=v) for v in
               (at, at.isoformat(), won_ms + 1, at.astimezone(dt.timezone(dt.timedelta(hours=2))))]
    assert [(a.winning_version, [c.winning_version for c in a.candidates]) for a in answers] == [(loser.winner, [loser.winner])] * 4
    before = t.explain_error(loser.error, failed_at=dt.datetime.fromtimestamp((won_ms - 1) / 1000, UTC))
    assert loser.winner not in [c.winning_version for c in before.candidates]
    with pytest.raises(forensics.UsageError, match="failed_at"):
        t.explain_error(loser.error, failed_at="not a time")


def test_what_is_not_an_error_says_so(sample_a):
    with pytest.raises(forensics.UsageError, match="int"):
        sample_a.explain_error(42)
    with pytest.raises(forensics.NotAConflictError):
        sample_a.explain_error(ValueError("disk full"))


# ---- the command line: a pasted repr or a traceback file ----------------------------------------


def test_cli_reads_a_traceback_file_and_a_pasted_repr(tmp_path, a_text):
    import json

    import delta.exceptions

    e = delta.exceptions.ConcurrentAppendException(_delta_message(a_text))
    try:
        raise RuntimeError("job 42 failed") from e
    except RuntimeError:
        (tmp_path / "tb.txt").write_text(traceback.format_exc())
    (tmp_path / "repr.txt").write_text(repr(e))
    for name in ("tb.txt", "repr.txt"):
        rc, out, err = run_cli(["explain-error", "--error-file", str(tmp_path / name), "--json"])
        assert rc == 0, err
        d = json.loads(out)
        assert (d["exception"], d["rule"], d["partition"]) == ("ConcurrentAppendException", "append", {"date": "2024-06-19"})


# ---- live: the exception delta-spark's engine builds, as PySpark hands it to the notebook ----------


@pytest.mark.live
def test_delta_spark_engine_exception_as_pyspark_raises_it(spark, sample_a):
    """delta-spark 4.4's own error builder (DeltaErrors.concurrentAppendException, the one its
    conflict checker calls) makes the Java exception; PySpark's converter, with delta-spark's patch,
    turns it into `delta.exceptions.captured.ConcurrentAppendException`: what `except` catches."""
    from pyspark.errors.exceptions.captured import convert_exception

    from forensics.runtime import delta_jvm

    if not delta_jvm.loaded(spark):
        pytest.fail("delta-spark's JVM classes are not on the classpath: run `make test-live` (it fetches them)")
    jvm = spark.sparkContext._jvm
    none = jvm.scala.Option.empty()
    java = jvm.org.apache.spark.sql.delta.DeltaErrors.concurrentAppendException(none, "orders", 3, none)
    caught = convert_exception(java)
    assert type(caught).__module__ == "delta.exceptions.captured" and type(caught).__name__ == "ConcurrentAppendException"
    ex = sample_a.explain_error(caught)
    assert (ex.exception, ex.error_class, ex.winning_version) == ("ConcurrentAppendException",
                                                                  "DELTA_CONCURRENT_APPEND.WITHOUT_HINT", 3)
    try:
        raise caught
    except Exception:
        assert sample_a.explain_error(traceback.format_exc()).winning_version == 3
