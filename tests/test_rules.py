"""Unit tests of the conflict rule profiles (conflict-rules §2, §4.5, §5, §6, §7, §9, §10, §11).

Each test builds a transaction and winning commits by hand and asserts the verdict the spec
prescribes for the modelled engine/release; message tests compare with the spec's
templates and with the real texts in ../shared/corpus/errors.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from forensics.model import (Bound, CommitRecord, DeletionVectorRef, FileAction, Metadata, Protocol, ReadSet,
                             Transaction, WinningCommit, WriteSet)
from forensics.rules import (PROFILES, check_window, check_winner, effective_isolation_level, get_profile,
                             is_blind_append, partition_hint, profile_for_engine_info, render_message, start_state)
from forensics.rules.isolation import delta_rs_isolation_level, delta_rs_table_level
from forensics.rules.messages import MessageInput, conflicting_commit_json, delta_name

SCHEMA = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "part", "type": "string", "nullable": True, "metadata": {}}]})
FULL = Protocol(3, 7, ("deletionVectors",), ("appendOnly", "deletionVectors", "domainMetadata", "inCommitTimestamp",
                                              "invariants", "rowTracking"))


def md(partitioned: bool = True, **conf: str) -> Metadata:
    return Metadata("tbl-id", None, None, "parquet", SCHEMA, ("part",) if partitioned else (), dict(conf), 1)


def add(path: str, part: str | None = "1", *, dc: bool = True, v: int = 1, dv: str | None = None) -> FileAction:
    pv = {} if part is None else {"part": part}
    ref = DeletionVectorRef("p", f"/dv/{dv}.bin", 1, 40, 1) if dv else None
    return FileAction(v, "add", path, pv, 10, dc, None, ref)


def rm(path: str, part: str | None = "1", *, dc: bool = True, v: int = 1) -> FileAction:
    return FileAction(v, "remove", path, {} if part is None else {"part": part}, 10, dc)


def txn(*, preds=(), files=(), whole=False, adds=(), removes=(), level="Serializable", partitioned=True,
        metadata=None, protocol=None, app_ids=(), app_txns=None, blind=None, op="Manual Update", read_md=None,
        params=None) -> Transaction:
    files = list(files)
    fa = [*adds, *removes]
    b = is_blind_append(fa, list(preds) + (["TRUE"] if whole else []), files) if blind is None else blind
    rmd = read_md or md(partitioned)
    return Transaction(
        operation=op, operation_parameters=dict(params or {}), read_version=0, isolation_level=level,
        read=ReadSet(list(preds), [], whole, files, Bound.EXACT, set(app_ids), bool(preds or files), "test"),
        write=WriteSet(list(adds), list(removes), [], metadata, protocol, dict(app_txns or {}), [], b, b),
        partition_columns=rmd.partition_columns, schema_string=SCHEMA, read_metadata=rmd, read_protocol=FULL)


def win(v: int, *, adds=(), removes=(), blind: bool | None = False, metadata=None, protocol=None, app_txns=None,
        op="WRITE", tags=None, commit_info: dict | None = None) -> WinningCommit:
    rec = None
    if commit_info is not None:
        rec = CommitRecord(v, None, None, None, op, {}, None, None, blind, None, None, has_commit_info=True,
                           commit_info_raw=json.dumps(commit_info))
    return WinningCommit(v, op, list(adds), list(removes), metadata, protocol, dict(app_txns or {}), [], blind,
                         commit=rec, tags=dict(tags or {}))


P = get_profile


# ---- profiles ----------------------------------------------------------------------------


@pytest.mark.parametrize("engine_info,present,name,exact", [
    ("Apache-Spark/3.5.0 Delta-Lake/3.1.0", True, "delta-spark<=3.1", True),
    ("Apache-Spark/3.5.1 Delta-Lake/3.2.0", True, "delta-spark-3.2-4.0", True),
    ("Apache-Spark/4.0.0 Delta-Lake/4.1.0", True, "delta-spark-4.1+", True),
    ("Databricks-Runtime/15.4.x-photon-scala2.12", True, "databricks", False),
    ("delta-rs:py-0.25.5", True, "delta-rs", False),
    ("delta-rs.0.17.1", True, "delta-rs", False),
    ("Kernel-3.2.0/DefaultEngine", True, "kernel", False),
    ("<unknown>", True, "delta-spark-4.1+", False),
    (None, True, "delta-spark-4.1+", False),
    (None, False, "delta-spark<=3.1", False),
])
def test_profile_for_engine_info(engine_info, present, name, exact):
    prof, why = profile_for_engine_info(engine_info, present)
    assert prof.name == name
    assert why.startswith("exact" if exact else "inferred")
    assert prof.exact or not exact


def test_profile_release_pinned_from_engine_info_and_override():
    prof, _ = profile_for_engine_info("Apache-Spark/3.1.2 Delta-Lake/1.0.1", True)
    assert prof.release == (1, 0) and not prof.append_shortcuts and not prof.ws_counts_blind_when_metadata_changed
    assert get_profile("delta-spark-3.2-4.0@3.2").metadata_mode == "any"
    assert get_profile("delta-spark-3.2-4.0@3.3").metadata_mode == "tolerant"
    assert get_profile("delta-spark-4.1+").metadata_mode == "allow_list"
    assert set(PROFILES) == {"delta-spark<=3.1", "delta-spark-3.2-4.0", "delta-spark-4.1+", "databricks",
                             "delta-rs", "kernel"}
    with pytest.raises(KeyError):
        get_profile("spark-9")


def test_databricks_old_runtime_prints_plain_messages():
    old, _ = profile_for_engine_info("Databricks-Runtime/13.3.x-scala2.12", True)
    new, _ = profile_for_engine_info("Databricks-Runtime/15.3.x-photon-scala2.12", True)
    assert (old.message_style, new.message_style) == ("plain", "error_class")
    assert new.default_isolation == "WriteSerializable"


# ---- check order ----------------------------------------------------------------------------


def test_appids_after_file_checks_before_32_and_first_from_32():
    t = txn(preds=["part = '1'"], adds=[add("mine")], app_ids=["q1"], app_txns={"q1": 5})
    w = win(1, adds=[add("theirs")], app_txns={"q1": 5})
    old = check_window(t, [w], P("delta-spark<=3.1"))
    new = check_window(t, [w], P("delta-spark-3.2-4.0"))
    assert (old.exception, old.rule) == ("ConcurrentAppendException", "appends")
    assert (new.exception, new.rule) == ("ConcurrentTransactionException", "appIds")
    assert [c.check for c in new.checks][-1] == "appIds"


def test_append_reported_before_delete_read_for_merge_like_winner():
    t = txn(preds=["part = '1'"], files=[add("a", v=0)], adds=[add("mine")])
    w = win(1, adds=[add("b")], removes=[rm("a")])
    r = check_window(t, [w], P("delta-spark-4.1+"))
    assert r.exception == "ConcurrentAppendException" and r.file == "b"
    only_remove = check_window(t, [win(1, removes=[rm("a")])], P("delta-spark-4.1+"))
    assert only_remove.exception == "ConcurrentDeleteReadException" and only_remove.partition == {"part": "1"}


def test_every_check_is_recorded_with_reason():
    t = txn(preds=["part = '2'"], adds=[add("mine", "2")])
    r = check_window(t, [win(1, adds=[add("x", "1")]), win(2, adds=[add("y", "3")])], P("delta-spark-4.1+"))
    assert r.verdict == "commit"
    names = [c.check for c in r.checks]
    assert names.count("appends") == 2 and names[:2] == ["protocol", "metadata"]
    assert all(c.reason for c in r.checks)
    assert {c.winner_version for c in r.checks} == {1, 2}


def test_window_stops_at_first_abort():
    t = txn(preds=["part = '1'"], adds=[add("mine")])
    r = check_window(t, [win(2, adds=[add("late")]), win(1, adds=[add("x", "1")])], P("delta-spark-4.1+"))
    assert r.winning_version == 1
    assert {c.winner_version for c in r.checks} == {1}


# ---- isolation and reorders (conflict-rules §6) ---------------------------------------------------------


def test_write_serializable_forgives_blind_append_and_reports_reorder():
    t = txn(preds=["part = '1'"], adds=[add("mine")], level="WriteSerializable")
    r = check_window(t, [win(7, adds=[add("x")], blind=True)], P("delta-spark-4.1+"))
    assert r.verdict == "commit" and r.reordered_before == [7]
    ap = next(c for c in r.checks if c.check == "appends")
    assert ap.reordered and "blind append; forgiven under WriteSerializable" in ap.reason and ap.file == "x"
    assert r.to_dict()["reorderedBefore"] == [7]


def test_serializable_aborts_on_blind_append():
    t = txn(preds=["part = '1'"], adds=[add("mine")], level="Serializable")
    r = check_window(t, [win(7, adds=[add("x")], blind=True)], P("delta-spark-4.1+"))
    assert r.verdict == "abort" and r.exception == "ConcurrentAppendException" and r.winning_version == 7


def test_write_serializable_does_not_forgive_missing_is_blind_append():
    t = txn(preds=["part = '1'"], adds=[add("mine")], level="WriteSerializable")
    assert check_window(t, [win(3, adds=[add("x")], blind=None)], P("delta-spark-4.1+")).verdict == "abort"


def test_snapshot_isolation_commits_and_reorders_but_delete_read_still_aborts():
    t = txn(preds=["TRUE"], files=[add("a", v=0)], removes=[rm("a", dc=False)], adds=[add("c", dc=False)],
            level="SnapshotIsolation")
    ok = check_window(t, [win(4, adds=[add("n")])], P("delta-spark-4.1+"))
    assert ok.verdict == "commit" and ok.reordered_before == [4]
    bad = check_window(t, [win(4, removes=[rm("a")])], P("delta-spark-4.1+"))
    assert bad.exception == "ConcurrentDeleteReadException"


def test_write_serializable_with_metadata_change_counts_blind_appends_except_v10():
    t = txn(preds=["part = '1'"], adds=[add("mine")], level="WriteSerializable", metadata=md())
    w = [win(2, adds=[add("x")], blind=True)]
    assert check_window(t, w, P("delta-spark<=3.1")).exception == "ConcurrentAppendException"
    assert check_window(t, w, P("delta-spark<=3.1@1.0")).verdict == "commit"  # v1.0-1.1 quirk


def test_unpartitioned_any_non_blind_txn_conflicts_from_31_only():
    t = txn(partitioned=False, adds=[add("mine", None)], removes=[rm("old", None)])  # no reads recorded
    w = [win(1, adds=[add("x", None)])]
    assert check_window(t, w, P("delta-spark<=3.1")).exception == "ConcurrentAppendException"
    assert check_window(t, w, P("delta-spark<=3.1@3.0")).verdict == "commit"  # pre-3.1: no shortcut


def test_blind_append_never_conflicts_with_adds_from_31():
    t = txn(partitioned=False, adds=[add("mine", None)])
    assert t.write.is_blind_append
    assert check_window(t, [win(1, adds=[add("x", None)])], P("delta-spark-4.1+")).verdict == "commit"


def test_effective_isolation_level_spec_2_1():
    comp = [rm("a", dc=False), add("b", dc=False)]
    assert effective_isolation_level(comp, "OPTIMIZE", "Serializable") == "SnapshotIsolation"
    assert effective_isolation_level(comp, "OPTIMIZE", "WriteSerializable") == "SnapshotIsolation"
    assert effective_isolation_level([], "DELETE", "Serializable") == "SnapshotIsolation"
    assert effective_isolation_level([], "DELETE", "WriteSerializable") == "WriteSerializable"
    assert effective_isolation_level(comp, "MERGE", "WriteSerializable") == "WriteSerializable"
    assert effective_isolation_level([add("x")], "WRITE", "Serializable") == "Serializable"
    assert effective_isolation_level(comp, "OPTIMIZE", "Serializable", other_actions=["metaData"]) == "Serializable"
    assert effective_isolation_level(comp, "X", "Serializable",
                                     other_actions=["domainMetadata:delta.rowTracking"]) == "SnapshotIsolation"
    assert effective_isolation_level(comp, "X", "Serializable", other_actions=["domainMetadata:delta.rowTracking"],
                                     release=(2, 4)) == "Serializable"


def test_is_blind_append_spec_4_5():
    assert is_blind_append([add("a")], [], [])
    assert is_blind_append([], [], [])  # e.g. SET TBLPROPERTIES
    assert not is_blind_append([add("a")], ["TRUE"], [])
    assert not is_blind_append([add("a")], [], [add("r")])
    assert not is_blind_append([add("a"), rm("b")], [], [])


def test_delta_rs_isolation_downgrade_quirk():
    assert delta_rs_table_level("WriteSerializable") == "Serializable"  # camelCase parse falls back
    assert delta_rs_table_level("writeSerializable") == "WriteSerializable"
    with_ci = win(1, adds=[add("a")], blind=True)
    assert delta_rs_isolation_level(with_ci, "OPTIMIZE", "Serializable") == "Serializable"
    compaction = win(1, adds=[add("a", dc=False)], removes=[rm("b", dc=False)], blind=None)
    assert delta_rs_isolation_level(compaction, "OPTIMIZE", "Serializable") == "Serializable"
    empty = win(1, blind=None)
    assert delta_rs_isolation_level(empty, "OPTIMIZE", "Serializable") == "SnapshotIsolation"
    assert delta_rs_isolation_level(empty, None, "Serializable") == "Serializable"


# ---- metadata by release (conflict-rules §5.2) --------------------------------------------------------------


def _dv_enablement(v: int) -> WinningCommit:
    return win(v, metadata=md(partitioned=False, **{"delta.enableDeletionVectors": "true"}), protocol=FULL,
               op="SET TBLPROPERTIES", blind=True)


def test_metadata_allow_list_41_vs_checkNoMetadataUpdates():
    t = txn(partitioned=False, preds=["TRUE"], files=[add("f", None, v=0)], removes=[rm("f", None)],
            adds=[add("g", None)])
    assert check_window(t, [_dv_enablement(1)], P("delta-spark-4.1+")).verdict == "commit"
    old = check_window(t, [_dv_enablement(1)], P("delta-spark-3.2-4.0"))
    assert old.exception == "MetadataChangedException" and old.rule == "metadata"
    assert check_window(t, [_dv_enablement(1)], P("delta-rs")).exception == "MetadataChangedException"


def test_metadata_allow_list_rejects_removed_and_unlisted_keys():
    t = txn(partitioned=False, read_md=md(False, **{"delta.enableDeletionVectors": "true"}))
    unset = win(1, metadata=md(False), op="UNSET TBLPROPERTIES", blind=True)
    other = win(1, metadata=md(False, **{"delta.enableDeletionVectors": "true", "delta.checkpointInterval": "5"}),
                blind=True)
    for w in (unset, other):
        r = check_window(t, [w], P("delta-spark-4.1+"))
        assert r.exception == "MetadataChangedException"
    assert "removed configuration key" in check_window(t, [unset], P("delta-spark-4.1+")).why


def test_identity_only_winner_tolerated_from_33():
    t = txn(partitioned=False, adds=[add("mine", None)])
    w = win(1, metadata=md(False), tags={"delta.identity.schemaUpdate": "true"}, blind=True, adds=[add("x", None)])
    assert check_window(t, [w], P("delta-spark-3.2-4.0@3.2")).exception == "MetadataChangedException"
    assert check_window(t, [w], P("delta-spark-3.2-4.0@3.3")).verdict == "commit"
    t2 = txn(partitioned=False, adds=[add("mine", None)], metadata=md(False))
    assert check_window(t2, [w], P("delta-spark-3.2-4.0@3.3")).exception == "MetadataChangedException"


def test_protocol_feature_drop_and_both_change():
    dropped = Protocol(3, 7, ("deletionVectors",), ("appendOnly", "deletionVectors", "invariants"))
    t = txn(adds=[add("mine")], preds=["part = '1'"])
    r = check_window(t, [win(1, protocol=dropped, op="DROP FEATURE", blind=True)], P("delta-spark-4.1+"))
    assert r.exception == "ProtocolChangedException" and "rowTracking" in r.why
    assert check_window(t, [win(1, protocol=FULL, blind=True)], P("delta-spark-4.1+")).verdict == "commit"
    t2 = txn(adds=[add("mine")], protocol=FULL)
    assert check_window(t2, [win(1, protocol=FULL, blind=True)], P("delta-spark-4.1+")).exception == \
        "ProtocolChangedException"


# ---- delta-rs (conflict-rules §9) ------------------------------------------------------------------------


def test_delta_rs_no_predicate_reads_every_file_and_ignores_appends():
    snapshot = [add("old1", None, v=0), add("old2", None, v=0)]
    t = txn(partitioned=False, adds=[add("mine", None)], op="WRITE")
    t.read.files = None
    assert check_window(t, [win(1, adds=[add("x", None)], blind=None)], P("delta-rs"),
                        read_snapshot_files=snapshot).verdict == "commit"
    r = check_window(t, [win(1, removes=[rm("old2", None)], blind=None)], P("delta-rs"), read_snapshot_files=snapshot)
    assert r.exception == "ConcurrentDeleteReadException" and r.file == "old2"
    # the same transaction under Spark rules records no reads: a concurrent delete is fine
    t.read.files = []
    assert check_window(t, [win(1, removes=[rm("old2", None)])], P("delta-spark-4.1+")).verdict == "commit"


def test_delta_rs_compaction_removes_ignored_for_delete_read():
    t = txn(partitioned=False, preds=["TRUE"], files=[add("f", None, v=0)], adds=[add("mine", None)])
    w = [win(1, removes=[rm("f", None, dc=False)], adds=[add("c", None, dc=False)], blind=None)]
    rs = check_window(replace(t, read=replace(t.read, whole_table=False, partition_predicates=[])), w, P("delta-rs"))
    assert rs.verdict == "commit"
    assert check_window(t, w, P("delta-spark-4.1+")).exception in ("ConcurrentAppendException",
                                                                    "ConcurrentDeleteReadException")


def test_delta_rs_app_ids_are_own_txn_actions():
    t = txn(partitioned=False, app_txns={"s1": 3})
    assert check_window(t, [win(1, app_txns={"s1": 1}, blind=None)], P("delta-rs")).exception == \
        "ConcurrentTransactionException"
    assert check_window(t, [win(1, app_txns={"s1": 1})], P("delta-spark-4.1+")).verdict == "commit"  # read none


# ---- Kernel (conflict-rules §10) ----------------------------------------------------------------------------


def test_kernel_only_metadata_protocol_txn_delete_delete():
    t = txn(partitioned=False, preds=["TRUE"], files=[add("f1", None, v=0)], adds=[add("mine", None)],
            removes=[rm("f2", None)], app_txns={"app": 5})
    k = P("kernel")
    assert check_window(t, [win(1, adds=[add("x", None)], removes=[rm("f1", None)])], k).verdict == "commit"
    dd = check_window(t, [win(1, removes=[rm("f2", None)])], k)
    assert dd.exception == "ConcurrentWriteException" and "file f2 that this transaction (attempting version 2)" \
        in dd.message
    assert check_window(t, [win(1, app_txns={"app": 4})], k).verdict == "commit"  # version-aware
    assert check_window(t, [win(1, app_txns={"app": 5})], k).exception == "ConcurrentTransactionException"
    assert check_window(t, [win(1, metadata=md(False))], k).exception == "MetadataChangedException"
    assert [c.check for c in check_window(t, [win(1)], k).checks] == list(k.order)


# ---- Databricks row-level concurrency (conflict-rules §11, inferred) ------------------------------------------


def test_databricks_row_level_concurrency_only_on_unpartitioned_dv_tables():
    dv_md = md(False, **{"delta.enableDeletionVectors": "true"})
    t = txn(partitioned=False, preds=["TRUE"], files=[add("p", None, v=0)], removes=[rm("p", None)],
            adds=[add("p", None, dv="mine")], level="WriteSerializable", read_md=dv_md, op="DELETE")
    w = [win(1, removes=[rm("p", None)], adds=[add("p", None, dv="theirs")], op="DELETE")]
    r = check_window(t, w, P("databricks"))
    assert r.verdict == "commit" and r.certainty == Bound.UNKNOWN
    assert any(c.inferred and "row-level concurrency" in c.reason for c in r.checks)
    assert check_window(t, w, P("delta-spark-4.1+")).exception == "ConcurrentAppendException"
    no_dv = replace(t, read_metadata=md(False))
    assert check_window(no_dv, w, P("databricks")).verdict == "abort"


# ---- messages (conflict-rules §7) --------------------------------------------------------------------------------


def test_partition_hint_formats():
    assert partition_hint(("a", "b"), {"a": "1", "b": None}) == "partition [a=1, b=null]"
    assert partition_hint((), {}) == "the root of the table"


def test_message_templates_by_release():
    t = txn(preds=["part = '1'"], adds=[add("mine")])
    ci = {"timestamp": 5, "operation": "WRITE", "operationParameters": {"mode": "Append"}, "readVersion": 0,
          "isolationLevel": "Serializable", "isBlindAppend": True, "txnId": "t"}
    w = [win(3, adds=[add("x")], blind=True, commit_info=ci)]
    plain = check_window(t, w, P("delta-spark<=3.1")).message
    assert plain == ('Files were added to partition [part=1] by a concurrent update. Please try the operation again.'
                     '\nConflicting commit: {"timestamp":5,"operation":"WRITE","operationParameters":{"mode":Append},'
                     '"readVersion":0,"isolationLevel":"Serializable","isBlindAppend":true,"txnId":"t"}'
                     '\nRefer to https://docs.delta.io/latest/concurrency-control.html for more details.')
    ec = check_window(t, w, P("delta-spark-3.2-4.0"))
    assert ec.message.startswith("[DELTA_CONCURRENT_APPEND] ConcurrentAppendException: Files were added to partition "
                                 "[part=1] by a concurrent update.") and ec.error_class == "DELTA_CONCURRENT_APPEND"
    new = check_window(t, w, P("delta-spark-4.1+"), table_name="main.s.t")
    assert new.error_class == "DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT"
    assert new.message == ("[DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT] Transaction conflict detected. a concurrent "
                           "WRITE added data to table main.s.t committed at version 3. The concurrent operation "
                           "modified data in the partition [part=1] that should have been read by this operation. "
                           "Please retry the operation. Refer to https://docs.delta.io/latest/concurrency-control.html"
                           " for more information.")
    assert "Conflicting commit" not in new.message


def test_41_delete_delete_uses_copy_pasted_sub_message_and_without_hint():
    t = txn(partitioned=False, removes=[rm("f", None)])
    r = check_window(t, [win(9, removes=[rm("f", None)], op="OPTIMIZE")], P("delta-spark-4.1+"))
    assert r.error_class == "DELTA_CONCURRENT_DELETE_DELETE.WITHOUT_HINT"
    assert "a concurrent OPTIMIZE deleted data from table delta.`<table path>` (committed at version 9) that this " \
           "transaction attempted to delete. The concurrent operation deleted data that was read by this operation." \
        in r.message


def test_upgrade_retry_message_when_winner_lacks_is_blind_append():
    t = txn(preds=["part = '1'"], adds=[add("mine")], level="WriteSerializable")
    ci = {"timestamp": 1, "operation": "WRITE", "operationParameters": {}}
    r = check_window(t, [win(2, adds=[add("x")], blind=None, commit_info=ci)], P("delta-spark<=3.1"))
    assert "Upgrading all your concurrent writers to use the latest Delta Lake may avoid this error." in r.message


def test_delta_rs_message_and_name_mapping():
    t = txn(partitioned=False, removes=[rm("f", None)])
    r = check_window(t, [win(1, removes=[rm("f", None)], blind=None)], P("delta-rs"))
    assert r.message.startswith("Failed to commit transaction: Commit failed: a concurrent transaction deleted the "
                                "same data your transaction deletes.\nHelp: you should retry this write operation.")
    assert delta_name("ConcurrentAppend") == "ConcurrentAppendException"
    assert delta_name("CommitConflict (ConcurrentAppend expected first)") == "ConcurrentAppendException"
    assert delta_name("MetadataChanged") == "MetadataChangedException"


def _corpus(shared_dir, name: str) -> list[str]:
    return (shared_dir / "corpus" / "errors" / name).read_text().splitlines()[1:]


def _trailer_commit(line: str) -> dict:
    """Re-encode a ≤4.0 trailer's lossy operationParameters the way the log stores them (§7.4, §8.1)."""
    import re
    body = line.split("Conflicting commit: ", 1)[1]
    body = re.sub(r'"mode":(\w+)', r'"mode":"\1"', body)
    obj = json.loads(body)
    obj["operationParameters"] = {k: v if isinstance(v, (bool, str)) else json.dumps(v) if isinstance(v, list)
                                  else str(v) for k, v in obj["operationParameters"].items()}
    return obj


def test_message_reproduces_corpus_oss_31_concurrent_append(shared_dir):
    lines = _corpus(shared_dir, "01-concurrent-append-root-oss-delta31-stacktrace.txt")
    ci = _trailer_commit(lines[1])
    prof, _ = profile_for_engine_info("Apache-Spark/3.5.0 Delta-Lake/3.1.0", True)
    text, cls = render_message(prof, MessageInput("ConcurrentAppendException", (), None, winner_version=5,
                                                  winner_commit_info=ci))
    expected = "\n".join(lines[:3]).replace("io.delta.exceptions.ConcurrentAppendException: ", "", 1)
    assert text == expected and cls is None


def test_message_reproduces_corpus_databricks_delete_delete_and_protocol(shared_dir):
    lines = _corpus(shared_dir, "03-concurrent-delete-delete-optimize-databricks.txt")
    ci = _trailer_commit(lines[1])
    path = "organization_id=152650970577842/part-00000-96b0700b-cf3e-4a51-8931-410b19e828b8.c000.snappy.parquet"
    prof, _ = profile_for_engine_info("Databricks-Runtime/13.3.x-scala2.12", True)
    text, _ = render_message(prof, MessageInput("ConcurrentDeleteDeleteException", ("organization_id",),
                                                {"organization_id": "152650970577842"}, file=path,
                                                winner_commit_info=ci))
    assert text == "\n".join(lines[:3]).replace("Caused by: io.delta.exceptions.ConcurrentDeleteDeleteException: ", "")
    lines7 = _corpus(shared_dir, "07-protocol-changed-empty-dir-no-readversion.txt")
    ci7 = _trailer_commit(lines7[2])
    prof7 = replace(prof, docs_link="https://docs.microsoft.com/azure/databricks/delta/concurrency-control")
    text7, _ = render_message(prof7, MessageInput("ProtocolChangedException", winner_version=0, winner_commit_info=ci7))
    assert text7 == "\n".join(lines7[1:4])


def test_message_matches_corpus_error_class_prefix(shared_dir):
    line = _corpus(shared_dir, "12-concurrent-append-partition-manual-update-one-line.txt")[0]
    prof, _ = profile_for_engine_info("Databricks-Runtime/15.3.x-photon-scala2.12", True)
    text, cls = render_message(prof, MessageInput("ConcurrentAppendException", ("data_day",),
                                                  {"data_day": "<data-day>"}))
    assert cls == "DELTA_CONCURRENT_APPEND"
    assert line.startswith(text.split("\n")[0])
    rs = _corpus(shared_dir, "16-delta-rs-concurrent-delete-read-help.txt")
    text_rs, _ = render_message(P("delta-rs"), MessageInput("ConcurrentDeleteReadException"))
    assert text_rs.startswith("\n".join(rs))


def test_conflicting_commit_json_lossy_vs_roundtrip():
    ci = {"txnId": "x", "timestamp": 1, "operation": "WRITE", "operationParameters": {"mode": "Append",
          "partitionBy": "[\"d\"]"}, "unknownKey": 1}
    assert conflicting_commit_json(ci, lossy=True) == \
        '{"timestamp":1,"operation":"WRITE","operationParameters":{"mode":Append,"partitionBy":["d"]},"txnId":"x"}'
    assert json.loads(conflicting_commit_json(ci, lossy=False))["operationParameters"]["mode"] == "Append"


# ---- state / JSON contract ---------------------------------------------------------------------------------


def test_check_winner_applies_rebase_and_json_contract():
    t = txn(partitioned=False, preds=["TRUE"], files=[add("f", None, v=0)], removes=[rm("f", None)])
    st = start_state(t, P("delta-spark-4.1+"))
    out = check_winner(t, _dv_enablement(1), P("delta-spark-4.1+"), st)
    assert out.status == "passed"
    assert st.metadata.configuration["delta.enableDeletionVectors"] == "true" and st.protocol == FULL
    r = check_window(t, [_dv_enablement(1), win(2, removes=[rm("f", None)])], P("delta-spark-4.1+"))
    j = r.to_dict()
    for k in ("verdict", "exception", "winningVersion", "rule", "partition", "file", "message", "reorderedBefore"):
        assert k in j
    assert (j["verdict"], j["exception"], j["winningVersion"], j["rule"], j["file"]) == \
        ("abort", "ConcurrentDeleteReadException", 2, "deleteRead", "f")
    json.dumps(j)
