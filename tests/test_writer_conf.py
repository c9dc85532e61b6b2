"""`--writer-conf`: session settings of the writer being modelled change the verdict (conflict-rules §14).

Each log is written in delta-spark's on-disk form (forensics.synth) and read back through the real
path: `forensics.Table` (Spark reader, set reconstruction, rules) and the CLI. Expected outcomes
come from the engine source at the tags conflict-rules §14 cites, not from this code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import forensics.synth.opparams as P
from forensics import ForensicsError, Table
from forensics.errors import ExitCode
from forensics.rules.writer_conf import WriterConf
from forensics.synth.actions import MetaData, ProtocolAction
from forensics.synth.sparktable import SparkTable, schema_string
from helpers import run_cli

pytestmark = pytest.mark.usefixtures("spark")

T0 = 1_718_870_400_000  # 2024-06-20
ENFORCE = "spark.databricks.delta.conflictChecker.enforceConcurrentFeatureEnablement.enabled"
WIDEN = "spark.databricks.delta.conflictDetection.partitionLevelConcurrency.widenNonDeterministicPredicates"
DEFAULT_LEVEL = "spark.databricks.delta.properties.defaults.isolationLevel"
DELETE_0102 = {"read_version": 0, "operation": "DELETE", "predicate": "date = '2024-01-02'", "until": 1}


def _spark(release: str) -> str:
    return f"Apache-Spark/4.0.0 Delta-Lake/{release}" if release >= "4" else f"Apache-Spark/3.5.1 Delta-Lake/{release}"


def _feature_race(root: Path, release: str, feature: str = "materializePartitionColumns") -> tuple[Path, int]:
    """v0 CTAS (protocol 1/2), v1 ALTER TABLE ... SET TBLPROPERTIES ('delta.feature.<feature>' = 'supported')
    (read v0: a Protocol that adds the feature, metadata unchanged), v2 a DELETE of 2024-01-02 that also
    read v0 and committed after it."""
    t = SparkTable(root / "t", _spark(release), seed=31, start_ms=T0)
    f1, f2 = t.data_file("2024-01-01", [1, 2]), t.data_file("2024-01-02", [3, 4], task=1)
    t.create_as_select([f1, f2])
    t.tick(2_000)
    change = {f"delta.feature.{feature}": "supported"}
    if feature == "deletionVectors":  # a reader-writer feature, turned on by its property
        change = {"delta.enableDeletionVectors": "true"}
        t.config = dict(change)
        proto = ProtocolAction(3, 7, ["deletionVectors"], ["appendOnly", "deletionVectors", "invariants"])
    else:
        proto = ProtocolAction(1, 7, None, ["appendOnly", "invariants", feature])
    md = MetaData(t.table_id, schema_string(), ["date"], dict(t.config), T0 - 2300)
    t.commit("SET TBLPROPERTIES", P.set_tblproperties_params(change), [proto, md], 0, blind=True)
    t.tick(2_000)
    v = t.commit("DELETE", P.delete_params([P.eq(t.attr["date"], "2024-01-02")]), [f2.remove(t.now - 300)], 0)
    return t.dir, v


def _udf_race(root: Path, release: str) -> tuple[Path, int]:
    """v0 CTAS (2024-01-01, 2024-01-02), v1 a blind append to 2024-01-09 (read v0), v2 DELETE WHERE
    expired(date) — a UDF on the partition column — that read v0 and removed the 2024-01-01 file."""
    t = SparkTable(root / "t", _spark(release), seed=37, start_ms=T0)
    f1, f2 = t.data_file("2024-01-01", [1, 2]), t.data_file("2024-01-02", [3, 4], task=1)
    t.create_as_select([f1, f2])
    t.tick(2_000)
    t.append([t.data_file("2024-01-09", [5])], 0)
    t.tick(2_000)
    v = t.commit("DELETE", P.delete_params([f"expired({t.attr['date']})"]), [f1.remove(t.now - 300)], 0)
    return t.dir, v


def _append_race(root: Path, release: str) -> Path:
    """v0 CTAS, v1 a blind append to 2024-01-02 (read v0): a DELETE of 2024-01-02 from v0 meets it."""
    t = SparkTable(root / "t", _spark(release), seed=41, start_ms=T0)
    t.create_as_select([t.data_file("2024-01-01", [1, 2]), t.data_file("2024-01-02", [3, 4], task=1)])
    t.tick(2_000)
    t.append([t.data_file("2024-01-02", [5])], 0)
    return t.dir


def _cli_json(*argv: str) -> tuple[dict, str]:
    rc, out, err = run_cli([*argv, "--json"])
    assert rc == 0, err
    return json.loads(out), err


# ---- conflict-rules §14.2: enforceConcurrentFeatureEnablement -------------------------------------

@pytest.mark.parametrize("release", ["4.2.0", "4.4.0"])
def test_feature_enablement_aborts_only_when_the_writer_enforces_it(tmp_path, release):
    """materializePartitionColumns is marked failConcurrentTransactionsAtUpgrade (TableFeature.scala,
    v4.2.0+): with the setting the DELETE must abort with ProtocolChangedException; without it, the
    winner's protocol is simply adopted and the DELETE commits."""
    path, v = _feature_race(tmp_path, release)
    plain = Table(path)
    assert plain.explain(v, use_evidence=False).verdict.verdict == "clean"
    assert plain.whatif(**DELETE_0102).result.verdict == "commit"

    writer = Table(path, writer_conf={ENFORCE: "true"})
    ex = writer.explain(v, use_evidence=False).verdict
    assert (ex.verdict, ex.exception, ex.winning_version, ex.rule) == ("anomaly", "ProtocolChangedException", 1, "protocol")
    assert f"because the writer ran with {ENFORCE}=true" in ex.why and "materializePartitionColumns" in ex.why
    wi = writer.whatif(**DELETE_0102).result
    assert (wi.verdict, wi.exception) == ("abort", "ProtocolChangedException")
    assert f"because the writer ran with {ENFORCE}=true" in wi.why
    assert writer.replay_report().verdicts[v].exception == "ProtocolChangedException"


def test_feature_enablement_through_the_cli(tmp_path):
    path, v = _feature_race(tmp_path, "4.2.0")
    base, _ = _cli_json("explain", str(path), str(v), "--no-evidence")
    assert base["verdict"]["verdict"] == "clean"
    ex, _ = _cli_json("explain", str(path), str(v), "--no-evidence", "--writer-conf", f"{ENFORCE}=TRUE")
    assert (ex["verdict"]["verdict"], ex["exception"]) == ("anomaly", "ProtocolChangedException")
    assert f"because the writer ran with {ENFORCE}=true" in ex["verdict"]["why"]
    args = ["whatif", str(path), "--read-version", "0", "--operation", "DELETE", "--predicate", "date = '2024-01-02'", "--until", "1"]
    assert _cli_json(*args)[0]["verdict"] == "commit"
    wi, _ = _cli_json(*args, "--writer-conf", f"{ENFORCE}= true ")  # Spark trims a boolean and ignores its case
    assert (wi["verdict"], wi["exception"]) == ("abort", "ProtocolChangedException")
    rp, _ = _cli_json("replay", str(path), "--writer-conf", f"{ENFORCE}=true")
    assert [c["verdict"] for c in rp["commits"] if c["version"] == v] == ["anomaly"]


def test_feature_enablement_setting_has_no_effect_before_4_2(tmp_path):
    """v4.1.0 has neither the setting nor the step: the DELETE commits, and the verdict says why."""
    path, v = _feature_race(tmp_path, "4.1.0")
    ex = Table(path, writer_conf={ENFORCE: "true"}).explain(v, use_evidence=False).verdict
    assert ex.verdict == "clean", ex.why
    assert "no effect on delta-spark 4.1, the setting exists from 4.2.0" in ex.why


def test_a_feature_not_marked_never_aborts(tmp_path):
    """deletionVectors overrides failConcurrentTransactionsAtUpgrade to false: enabling it does not
    fail the DELETE even with the setting on (its property change is on the 4.2 allow-list)."""
    path, v = _feature_race(tmp_path, "4.2.0", feature="deletionVectors")
    ex = Table(path, writer_conf={ENFORCE: "true"}).explain(v, use_evidence=False)
    assert ex.verdict.verdict == "clean", ex.verdict.why
    protocol = [c for c in ex.verdict.result.checks if c.check == "protocol"]
    assert "not marked failConcurrentTransactionsAtUpgrade" in protocol[0].reason


def test_other_engines_say_the_setting_does_not_apply(tmp_path):
    path, v = _feature_race(tmp_path, "4.2.0")
    rs = Table(path, rules="delta-rs", writer_conf={ENFORCE: "true"}).explain(v, use_evidence=False).verdict
    assert "no effect, delta-rs does not read Spark session settings" in rs.why
    assert rs.exception != "ProtocolChangedException" or "failConcurrentTransactionsAtUpgrade" not in rs.why
    dbr = Table(path, rules="databricks", writer_conf={ENFORCE: "true"}).explain(v, use_evidence=False).verdict
    assert (dbr.verdict, dbr.exception) == ("anomaly", "ProtocolChangedException")
    assert dbr.certainty != "exact"  # Databricks is modelled, not read


# ---- conflict-rules §14.3: widenNonDeterministicPredicates ----------------------------------------

@pytest.mark.parametrize("mode", ["off", "LOGGING"])
def test_a_udf_read_predicate_is_widened_unless_the_writer_turned_it_off(tmp_path, mode):
    """delta-spark 3.2: `expired(date)` is widened to TRUE, so the blind append to 2024-01-09 aborts the
    DELETE (ConcurrentAppendException); the log shows it committed: an anomaly. With widening off (or
    logging only) the engine evaluated the UDF on 2024-01-09, whose value the log does not hold: the
    commit is consistent with the rules, inferred."""
    path, v = _udf_race(tmp_path, "3.2.0")
    widened = Table(path).explain(v, use_evidence=False).verdict
    assert (widened.verdict, widened.exception, widened.certainty) == ("anomaly", "ConcurrentAppendException", "exact")
    as_written = Table(path, writer_conf={WIDEN: mode}).explain(v, use_evidence=False).verdict
    assert as_written.verdict == "clean", as_written.why
    assert as_written.certainty != "exact"
    assert f"because the writer ran with {WIDEN}={mode.lower()}" in as_written.why
    whatif = Table(path, writer_conf={WIDEN: mode}).whatif(read_version=0, operation="DELETE", predicate="expired(date)", until=1)
    assert whatif.result.verdict == "abort" and "so it may match" in whatif.result.why


def test_widening_through_the_cli(tmp_path):
    path, v = _udf_race(tmp_path, "3.2.0")
    base, _ = _cli_json("replay", str(path))
    off, _ = _cli_json("replay", str(path), "--writer-conf", f"{WIDEN}=off")
    by_version = lambda d: {c["version"]: c for c in d["commits"]}  # noqa: E731
    assert by_version(base)[v]["verdict"] == "anomaly"
    assert by_version(off)[v]["verdict"] == "clean"
    assert f"{WIDEN}=off" in by_version(off)[v]["why"]


def test_before_3_2_nothing_is_widened_and_the_setting_has_no_effect(tmp_path):
    path, v = _udf_race(tmp_path, "3.1.0")
    plain = Table(path).explain(v, use_evidence=False).verdict
    assert plain.verdict == "clean", plain.why
    assert "delta-spark 3.1 never widens them (widening exists from 3.2.0)" in plain.why
    on = Table(path, writer_conf={WIDEN: "on"}).explain(v, use_evidence=False).verdict
    assert on.verdict == "clean"
    assert "no effect on delta-spark 3.1, the setting exists from 3.2.0" in on.why


# ---- conflict-rules §14.4: isolation-level defaults ------------------------------------------------

@pytest.mark.parametrize(("release", "said"), [
    ("3.2.0", "no effect on a transaction against an existing table"),
    ("2.0.0", "no effect on delta-spark 2.0, which has no delta.isolationLevel property"),
])
def test_the_session_isolation_default_does_not_change_an_existing_table(tmp_path, release, said):
    """The table has no delta.isolationLevel: delta-spark reads the level from the table's metadata only
    (TransactionHelper.getDefaultIsolationLevel), so a WriteSerializable session default does not forgive
    the blind append: the DELETE still aborts, and the verdict says the setting changed nothing."""
    path = _append_race(tmp_path, release)
    plain = Table(path).whatif(**DELETE_0102)
    assert (plain.result.verdict, plain.result.exception) == ("abort", "ConcurrentAppendException")
    writer = Table(path, writer_conf={DEFAULT_LEVEL: "WriteSerializable"}).whatif(**DELETE_0102)
    assert (writer.result.verdict, writer.result.exception, writer.isolation_level) == (
        "abort", "ConcurrentAppendException", "Serializable")
    assert said in writer.result.why


# ---- unknown keys, bad values, where the settings come from ----------------------------------------

def test_an_unknown_key_is_reported_not_dropped(tmp_path):
    path, v = _feature_race(tmp_path, "4.2.0")
    rc, out, err = run_cli(["replay", str(path), "--json", "--writer-conf", "spark.sql.shuffle.partitions=3",
                            "--writer-conf", f"{ENFORCE}=true"])
    assert rc == 0, err
    notes = [line for line in err.splitlines() if "spark.sql.shuffle.partitions" in line]
    assert len(notes) == 1 and "not modelled" in notes[0]
    why = {c["version"]: c["why"] for c in json.loads(out)["commits"]}[v]
    assert "writer setting spark.sql.shuffle.partitions is not modelled" in why
    assert Table(path, writer_conf={"spark.sql.shuffle.partitions": "3"}).writer_conf.not_modelled == ("spark.sql.shuffle.partitions",)


@pytest.mark.parametrize("value", [ENFORCE, f"{ENFORCE}=yes", f"{WIDEN}=sometimes", f"{WIDEN}= on"])
def test_a_malformed_or_refused_setting_is_a_usage_error(tmp_path, value):
    path = _append_race(tmp_path, "3.2.0")
    rc, out, err = run_cli(["replay", str(path), "--writer-conf", value])
    assert rc == int(ExitCode.USAGE)
    assert out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_the_api_refuses_what_the_writer_would_refuse(tmp_path):
    path = _append_race(tmp_path, "3.2.0")
    with pytest.raises(ForensicsError) as e:
        Table(path, writer_conf={ENFORCE: "1"})
    assert e.value.code == ExitCode.USAGE and ENFORCE in str(e.value)
    conf = WriterConf.parse({ENFORCE: " False ", WIDEN: "OFF"})
    assert (conf.enforce_feature_enablement, conf.widen_nondeterministic) == (False, "off")


def test_writer_conf_from_a_config_profile(tmp_path, monkeypatch):
    """`[profiles.NAME.writer_conf]` in the config file states the writer's settings; --writer-conf wins."""
    path, v = _feature_race(tmp_path, "4.2.0")
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[profiles.prod.writer_conf]\n"{ENFORCE}" = true\n', encoding="utf-8")
    monkeypatch.setenv("DELTA_FORENSICS_CONFIG", str(cfg))
    assert Table(path, profile="prod").explain(v, use_evidence=False).verdict.exception == "ProtocolChangedException"
    ex, _ = _cli_json("explain", str(path), str(v), "--no-evidence", "--profile", "prod", "--writer-conf", f"{ENFORCE}=false")
    assert ex["verdict"]["verdict"] == "clean"


def test_a_command_that_replays_nothing_says_so(tmp_path):
    path = _append_race(tmp_path, "3.2.0")
    rc, _, err = run_cli(["history", str(path), "--writer-conf", f"{ENFORCE}=true"])
    assert rc == 0
    assert "--writer-conf has no effect on history" in err
