"""forensics.predicates: every predicate format writers record, classification, evaluation.

Literal samples below are copied from ../shared/corpus/tables/*/_delta_log (the table named
in each comment) so the core tests run without ../shared; the corpus tests re-read the real
files through the `shared_dir` fixture.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forensics.predicates import (
    MAX_PREDICATE_CHARS,
    TRUE_PREDICATE,
    ParsedPredicate,
    conjuncts,
    decode_param,
    matches_partition,
    may_match_stats,
    parse_predicate,
    predicate_strings,
    rewrite_with_partition_literal,
    split_partition_and_data,
    target_only_conjuncts,
    to_sql,
)
from forensics.log.schema import TableSchema

# ---- schemas of the corpus tables used below (copied from their metaData) -----------------------

CDC_ICT = TableSchema.from_simple({"name": "string", "birthyear": "integer", "age": "integer"}, ["birthyear"])
CDF_TABLE = TableSchema.from_simple({"id": "integer", "name": "string", "birthday": "date"}, ["birthday"])
MERGE_TABLE = TableSchema.from_simple({"id": "integer", "str": "string"})
PART_LONG = TableSchema.from_simple({"id": "long", "text": "string", "part": "long"}, ["part"])
SPEC = TableSchema.from_simple(
    {"id": "long", "part": "int", "year": "int", "date": "date", "region": "string", "value": "int", "name": "string"},
    ["part", "date", "region"],
)


def sql(text: str, schema: TableSchema | None = None) -> str | None:
    return parse_predicate(text, schema).sql


# ---- operationParameters decoding (conflict-rules §8.1) -----------------------------------------------------


def test_decode_param_decodes_json_text_once():
    on_disk = json.loads('{"predicate":"[\\"(id#480 < 50)\\"]"}')["predicate"]
    assert on_disk == '["(id#480 < 50)"]'
    assert decode_param(on_disk) == ["(id#480 < 50)"]
    assert decode_param("(col2#477L = 2)") == "(col2#477L = 2)"
    assert decode_param(False) is False
    assert decode_param("[not json") == "[not json"


def test_predicate_strings_delete_array():
    # golden-basic-with-inserts-deletes-checkpoint
    srcs = predicate_strings("DELETE", {"predicate": '["((id#1904L >= 5) AND (id#1904L <= 9))"]'})
    assert [(s.text, s.role) for s in srcs] == [("((id#1904L >= 5) AND (id#1904L <= 9))", "condition")]
    assert predicate_strings("UPDATE", {"predicate": "[]"}) == []


def test_predicate_strings_update_plain_string_delta_1_2():
    # dspark-delta-1.2.1 (Delta 1.2.1: UPDATE predicate is a plain Catalyst string)
    srcs = predicate_strings("UPDATE", {"predicate": "(col2#477L = 2)"})
    assert [(s.text, s.role) for s in srcs] == [("(col2#477L = 2)", "condition")]


def test_predicate_strings_merge_clauses():
    # golden-basic-with-inserts-merge
    params = {
        "predicate": '["(id#480L = cast(id#482 as bigint))"]',
        "matchedPredicates": '[{"actionType":"update"}]',
        "notMatchedPredicates": '[{"actionType":"insert"}]',
        "notMatchedBySourcePredicates": '[{"predicate":"(id#482 < 10)","actionType":"delete"}]',
    }
    got = [(s.text, s.role, s.action_type) for s in predicate_strings("MERGE", params)]
    assert got == [
        ("(id#480L = cast(id#482 as bigint))", "merge_condition", None),
        ("", "matched", "update"),
        ("", "not_matched", "insert"),
        ("(id#482 < 10)", "not_matched_by_source", "delete"),
    ]
    assert parse_predicate("").sql == "TRUE"


def test_predicate_strings_merge_delta_2_x_plain_sql():
    # rs-simple_table v1 (old writer: MERGE predicate is condition.sql, not an array)
    srcs = predicate_strings("MERGE", {"predicate": "(oldData.`id` = newData.`id`)"})
    assert [(s.text, s.role) for s in srcs] == [("(oldData.`id` = newData.`id`)", "merge_condition")]


def test_predicate_strings_delta_rs_merge_and_write():
    srcs = predicate_strings(
        "MERGE",
        {"predicate": "event_date = '2021-02-02' AND id BETWEEN 'C' AND 'D'", "mergePredicate": "target.id = source.id"},
    )
    assert [(s.role, s.key) for s in srcs] == [("condition", "predicate"), ("merge_condition", "mergePredicate")]
    w = predicate_strings("WRITE", {"mode": "Overwrite", "predicate": "date >= '2024-01-01' AND region = 'EU'"})
    assert [(s.text, s.role) for s in w] == [("date >= '2024-01-01' AND region = 'EU'", "replace_where")]
    o = predicate_strings("OPTIMIZE", {"predicate": '["(part#1 = 2)"]', "zOrderBy": "[]", "auto": False})
    assert [s.role for s in o] == ["optimize"]
    assert predicate_strings("STREAMING UPDATE", {"outputMode": "Append"}) == []


def test_predicate_strings_salvages_cut_json_array():
    srcs = predicate_strings("DELETE", {"predicate": '["(id#1 = 5)","((id#2 > 3) AND (na'})
    assert [s.text for s in srcs] == ["(id#1 = 5)", "((id#2 > 3) AND (na ..."]
    assert not parse_predicate(srcs[0].text).truncated
    assert parse_predicate(srcs[1].text).truncated
    # cut right after a balanced element: still marked truncated
    (only,) = predicate_strings("DELETE", {"predicate": '["id#1 IN (1,2,3)'})
    assert parse_predicate(only.text).truncated


# ---- parsing each format ---------------------------------------------------------------------------


def test_catalyst_expression_ids_and_type_suffix():
    # golden-basic-with-inserts-updates / golden-dv-partitioned-with-checkpoint
    p = parse_predicate("(id#480 < 50)")
    assert (p.sql, p.columns, p.error) == ("id < 50", frozenset({"id"}), None)
    assert sql("(col1#10915 = 16)") == "col1 = 16"
    assert sql("((id#1904L >= 5) AND (id#1904L <= 9))") == "id >= 5 AND id <= 9"
    assert sql("((id#105854L = 2) OR (id#105854L = 8))") == "id = 2 OR id = 8"


def test_catalyst_in_list_and_true():
    # rs-cdf-table-non-partitioned, krs-cdf-table-delete-unconditional
    assert sql("id#1262 IN (2,3,4)") == "id IN (2, 3, 4)"
    assert sql("true") == "TRUE"


def test_catalyst_unquoted_string_literals():
    # rs-cdf-table v3: DELETE WHERE name = 'Dennis' recorded as `(name#40 = Dennis)`
    assert sql("(name#40 = Dennis)", CDF_TABLE) == "name = 'Dennis'"
    assert sql("(part#12 = 2024-01-01)") == "part = '2024-01-01'"
    assert sql("(name#3 = foo bar)") == "name = 'foo bar'"
    assert sql("(name#3 = O'Brien)") == "name = 'O\\'Brien'"
    assert sql("(ts#3 = 2024-01-01 10:00:00)") == "ts = '2024-01-01 10:00:00'"
    assert sql("StartsWith(name#1, abc)") == "STARTSWITH(name, 'abc')"
    assert sql("name#1 LIKE data-2-%") == "name LIKE 'data-2-%'"
    # numbers, NULL, negative numbers and decimals stay what they are
    assert sql("(v#1 = -5)") == "v = -5"
    assert sql("(v#1 = 1.50)") == "v = 1.50"
    assert sql("(v#1 <=> null)") == "v IS NOT DISTINCT FROM NULL"


def test_catalyst_empty_string_literal_and_struct_fields():
    assert sql("(name#1 = )") == "name = ''"
    assert sql("name#1 IN (a,,b)") == "name IN ('a', '', 'b')"
    nested = parse_predicate("(isnotnull(s#12.f) AND (s#12.f > 2))")
    assert nested.columns == {"s"}
    assert matches_partition(nested, {}, SPEC)  # nested values are unknown: conservative


def test_catalyst_functions_and_casts():
    # golden-basic-with-inserts-merge, rs-simple_table v3
    p = parse_predicate("(id#480L = cast(id#482 as bigint))")
    assert p.sql == "id = CAST(id AS BIGINT)"
    assert sql("((id#697L % cast(2 as bigint)) = cast(0 as bigint))") == "id % CAST(2 AS BIGINT) = CAST(0 AS BIGINT)"
    assert sql("isnotnull(x#1)") == "ISNOTNULL(x)"
    assert sql("x#1 INSET 1, 2, 3") == "x IN (1, 2, 3)"



def test_catalyst_python_udf_result_id():
    # delta-spark 4.4 UPDATE/DELETE with a Python UDF in the condition (seen live, bench/differential_spark_threads.py):
    # PythonUDF prints its result id after its arguments; the partition conjunct stays the read predicate
    p = parse_predicate("((p#204 = b) AND gate(id#202)#205)")
    assert (p.sql, p.columns, p.error) == ("p = 'b' AND GATE(id)", frozenset({"id", "p"}), None)
    part, data = split_partition_and_data([p], TableSchema.from_simple({"id": "integer", "v": "integer", "p": "string"}, ["p"]))
    assert part.sql == "p = 'b'" and [d.sql for d in data] == ["GATE(id)"]
    assert sql("(gate(id#1)#2L AND (id#1 > 5))") == "GATE(id) AND id > 5"

def test_plain_sql_form():
    # rs-delta-0.8.0 (DELETE element in <=2.3 is `.sql`), rs-simple_table v4, golden-snapshot-data2-deleted
    assert sql("(`value` = 3)") == "value = 3"
    assert sql("((`id` % CAST(2 AS BIGINT)) = CAST(0 AS BIGINT))") == "id % CAST(2 AS BIGINT) = CAST(0 AS BIGINT)"
    assert sql("`col2` LIKE 'data-2-%'") == "col2 LIKE 'data-2-%'"


def test_fully_qualified_names_reduced_but_remembered():
    # dspark-table-with-dv-large (DBR): qualifier is the table path
    p = parse_predicate(
        "(spark_catalog.delta.`/private/var/folders/g3/hcd28y8s71s0yh7whh443wz00000gp/T/spark-f3dd4a29`.value IN (0, 180, 300, 700, 1800))"
    )
    assert p.sql == "value IN (0, 180, 300, 700, 1800)"
    assert p.columns == {"value"}
    assert p.qualifiers == {"/private/var/folders/g3/hcd28y8s71s0yh7whh443wz00000gp/t/spark-f3dd4a29"}
    q = parse_predicate("spark_catalog.default.tbl.col = 1 AND target.x = source.x")
    assert q.sql == "tbl.col = 1 AND target.x = source.x"
    assert q.qualifiers == {"tbl", "target", "source"}
    assert parse_predicate("(oldData.`id` = newData.`id`)").qualifiers == {"olddata", "newdata"}


def test_replace_where_and_delta_rs_sql():
    p = parse_predicate("date >= '2024-01-01' AND region = 'EU'", SPEC)
    assert p.sql == "date >= '2024-01-01' AND region = 'EU'"
    assert p.columns == {"date", "region"}
    assert sql("event_date = '2021-02-02' AND id BETWEEN 'C' AND 'D'") == "event_date = '2021-02-02' AND id BETWEEN 'C' AND 'D'"
    assert sql("value > 5") == "value > 5"
    # plain SQL: an unknown name stays a column (it evaluates as unknown, never as a constant)
    assert parse_predicate("zzz = 1", SPEC).columns == {"zzz"}


def test_schema_case_is_kept():
    assert parse_predicate("(ID#1 = 3)", SPEC).columns == {"id"}
    assert parse_predicate("Region = 'EU'", SPEC).sql == "region = 'EU'"


def test_truncated_inputs_never_raise():
    elided = parse_predicate("id#1 IN (1,2,... 5 more fields)")
    assert elided.truncated and elided.columns == {"id"} and elided.sql == "id IN (1, 2, __truncated__)"
    cut = parse_predicate("((id#1 = 5) AND (part#2 = 2024-01")
    assert cut.truncated and cut.columns == {"id", "part"} and cut.error is None
    assert parse_predicate("(name#1 = 'abc").truncated
    for text in ["(((", "cast(id#1 as big", "`unterminated", "a = 1 AND", '["(id#1']:
        p = parse_predicate(text)
        assert p.truncated or p.error, text


def test_unparseable_inputs_report_error():
    for text in [")", "SELECT 1", "a = 1; DROP TABLE x", "foo bar baz qux"]:
        p = parse_predicate(text)
        assert p.sql is None and p.error and "\n" not in p.error, text
        assert to_sql(p) == text


def test_size_and_depth_bounds():
    big = parse_predicate("a = 1 OR " * (MAX_PREDICATE_CHARS // 9 + 1) + "a = 2")
    assert big.sql is None and "longer than" in big.error
    deep = parse_predicate("(" * 5000 + "a = 1" + ")" * 5000)
    assert deep.sql is None and "deeper" in deep.error
    deep_not = parse_predicate("NOT " * 3000 + "a = 1")
    assert deep_not.sql is None and deep_not.error
    long_chain = parse_predicate(" AND ".join(f"a = {i}" for i in range(2000)))
    assert long_chain.sql is not None and len(conjuncts(long_chain)) == 2000


def test_determinism():
    assert not parse_predicate("rand() < 0.5").deterministic
    assert not parse_predicate("uuid() = id").deterministic
    assert not parse_predicate("my_udf(id) = 1").deterministic
    assert not parse_predicate("id IN (SELECT id FROM other)").deterministic
    assert parse_predicate("isnotnull(id#1) AND lower(name#2) = abc").deterministic


def test_conjuncts_split_top_level_and_only():
    p = parse_predicate("((birthyear#132 = 1995) AND (age#133 < 30))", CDC_ICT)
    assert [c.sql for c in conjuncts(p)] == ["birthyear = 1995", "age < 30"]
    q = parse_predicate("(a = 1 OR b = 2) AND c = 3")
    assert [c.sql for c in conjuncts(q)] == ["a = 1 OR b = 2", "c = 3"]
    assert conjuncts(TRUE_PREDICATE) == [TRUE_PREDICATE]


# ---- partition vs data (conflict-rules §4.1) -----------------------------------------------------------------


def test_mixed_or_is_a_data_filter():
    part, data = split_partition_and_data([parse_predicate("part = 1 OR year > 2019", SPEC)], SPEC)
    assert part is TRUE_PREDICATE
    assert [d.sql for d in data] == ["part = 1 OR year > 2019"]


def test_partition_and_data_conjuncts_split():
    part, data = split_partition_and_data([parse_predicate("date = '2024-01-01' AND id = 5", SPEC)], SPEC)
    assert part.sql == "date = '2024-01-01'"
    assert [d.sql for d in data] == ["id = 5"]


def test_partition_predicates_extracted_from_or():
    p = parse_predicate("(part = 1 AND id = 5) OR (part = 2 AND id > 3)", SPEC)
    part, data = split_partition_and_data([p], SPEC)
    assert part.sql == "part = 1 OR part = 2"
    assert len(data) == 1
    legacy, _ = split_partition_and_data([p], SPEC, extract_from_or=False)
    assert legacy is TRUE_PREDICATE


def test_no_reference_counts_as_partition_only_and_truncated_counts_as_data():
    part, data = split_partition_and_data([parse_predicate("true", SPEC)], SPEC)
    assert part.sql == "TRUE" and data == []
    part, data = split_partition_and_data([parse_predicate("(part#1 = 3) AND (part#1 IN (1,2,... 9 more fields)", SPEC)], SPEC)
    assert part is TRUE_PREDICATE and all(d.truncated for d in data)


def test_unpartitioned_table_everything_with_refs_is_data():
    part, data = split_partition_and_data([parse_predicate("(id#480 < 50)", MERGE_TABLE)], MERGE_TABLE)
    assert part is TRUE_PREDICATE and [d.sql for d in data] == ["id < 50"]


# ---- MERGE target-only conjuncts (conflict-rules §8.2) -----------------------------------------------------


def test_target_only_by_alias():
    cond = parse_predicate("t.id = s.id AND t.date = '2024-01-01' AND s.value > 3", SPEC)
    got, why = target_only_conjuncts(cond, SPEC)
    assert [c.sql for c in got] == ["t.date = '2024-01-01'"]
    assert "`t`" in why
    got2, _ = target_only_conjuncts(cond, SPEC, target_alias="s")
    assert [c.sql for c in got2] == ["s.value > 3"]


def test_target_only_unqualified_is_assumed_and_said():
    cond = parse_predicate("date = '2024-01-01' AND target.id = source.id", SPEC)
    got, why = target_only_conjuncts(cond, SPEC)
    assert [c.sql for c in got] == ["date = '2024-01-01'"]
    assert "which side `date` belongs to cannot be told from the log; assumed target" in why


def test_target_only_catalyst_ids_with_not_matched_by_source_evidence():
    # golden-basic-with-inserts-merge: target id is INT (id#482), source id is BIGINT (id#480L)
    cond = parse_predicate("((id#480L = cast(id#482 as bigint)) AND (id#482 > 5))", MERGE_TABLE)
    nmbs = [parse_predicate("(id#482 < 10)", MERGE_TABLE)]
    got, why = target_only_conjuncts(cond, MERGE_TABLE, not_matched_by_source=nmbs)
    assert [c.sql for c in got] == ["id > 5"]
    assert "NOT MATCHED BY SOURCE" in why
    # without clause evidence the `L` suffix against the INT schema type decides
    got2, why2 = target_only_conjuncts(cond, MERGE_TABLE)
    assert [c.sql for c in got2] == ["id > 5"] and "type suffix" in why2


def test_target_only_ambiguous_attributes_are_left_out():
    # krs-cdf-table-partitioned v1: both sides are BIGINT, nothing tells them apart
    cond = parse_predicate("((id#6739L = id#6741L) AND (id#6741L > 2))", PART_LONG)
    got, why = target_only_conjuncts(cond, PART_LONG)
    assert got == [] and "cannot be told" in why


def test_rewrite_with_partition_literal():
    assert rewrite_with_partition_literal("t.id = s.id", "date", ["2024-01-01", "2024-01-02"], SPEC) == (
        "t.id = s.id AND t.date IN ('2024-01-01', '2024-01-02')"
    )
    assert rewrite_with_partition_literal("target.id = source.id", "part", ["3"], SPEC) == (
        "target.id = source.id AND target.part = 3"
    )
    assert rewrite_with_partition_literal("a = b OR c = d", "region", ["EU", None], SPEC) == (
        "(a = b OR c = d) AND (target.region = 'EU' OR target.region IS NULL)"
    )
    out = rewrite_with_partition_literal(")", "region", ["x'y"], SPEC)
    assert out.startswith("()) AND") and "x\\'y" in out


# ---- evaluation on partition values (conflict-rules §5.6 c/d) ----------------------------------------------


@pytest.mark.parametrize(
    "pred, pv, expected",
    [
        ("part = 1", {"part": "1"}, True),
        ("part = 1", {"part": "2"}, False),
        ("part = 1", {"part": None}, False),  # NULL => no match
        ("part = 1", {"part": "__HIVE_DEFAULT_PARTITION__"}, False),
        ("part = 1", {"part": ""}, False),  # empty string is NULL in partitionValues
        ("part IS NULL", {"part": "__HIVE_DEFAULT_PARTITION__"}, True),
        ("part IS NULL", {"part": None}, True),
        ("part IS NOT NULL", {"part": None}, False),
        ("NOT (part = 1)", {"part": None}, False),
        ("part = 1 OR part IS NULL", {"part": None}, True),
        ("part IN (1, NULL)", {"part": "2"}, False),  # NULL from the list, still no match
        ("part IN (1, 2)", {"part": " 2 "}, True),  # Spark trims before casting to int
        ("part = 1", {"part": "1.9"}, True),  # CAST('1.9' AS INT) = 1 (non-ANSI truncation)
        ("part = 1", {"part": "abc"}, False),  # invalid cast => NULL
        ("part = '01'", {"part": "1"}, True),  # int vs string compares as int
        ("region = 'EU'", {"region": "EU"}, True),
        ("region = 1", {"region": "1.0"}, True),  # string column vs int literal: cast to int
        ("region > 'B'", {"region": "a"}, True),  # strings compare as strings
        ("date = '2024-01-01'", {"date": "2024-01-01"}, True),
        ("date > '2024-01-01'", {"date": "2024-1-2"}, True),
        ("date = '2024-01-01'", {"date": "2024-13-01"}, False),
        ("date BETWEEN '2024-01-01' AND '2024-01-31'", {"date": "2024-01-15"}, True),
        ("date BETWEEN '2024-01-01' AND '2024-01-31'", {"date": "2024-02-15"}, False),
        ("region LIKE 'E_%'", {"region": "EU"}, True),
        ("region LIKE 'E_%'", {"region": "E"}, False),
        ("STARTSWITH(region, 'E')", {"region": "EU"}, True),
        ("TRUE", {}, True),
        ("part = 1 AND id = 5", {"part": "1"}, True),  # data column: unknown, conservative
        ("part = 1 AND id = 5", {"part": "2"}, False),
    ],
)
def test_matches_partition(pred, pv, expected):
    assert matches_partition(pred, pv, SPEC) is expected


def test_matches_partition_decimals_and_types():
    s = TableSchema.from_simple({"amt": "decimal(5,2)", "b": "boolean", "d": "double", "ts": "timestamp", "ntz": "timestamp_ntz"}, ["amt", "b", "d", "ts", "ntz"])
    assert matches_partition("amt = 1.5", {"amt": "1.50"}, s)
    assert matches_partition("amt = 1.01", {"amt": "1.005"}, s)  # rounds half up to scale 2
    assert not matches_partition("amt = 1.5", {"amt": "12345.6"}, s)  # overflow => NULL
    assert matches_partition("b = true", {"b": "TRUE"}, s) and not matches_partition("b", {"b": "no"}, s)
    assert not matches_partition("b", {"b": "maybe"}, s)
    assert matches_partition("d > 1", {"d": "Infinity"}, s) and matches_partition("d > 1e300", {"d": "NaN"}, s)
    assert matches_partition("ts = '2024-01-01 10:00:00'", {"ts": "2024-01-01T10:00:00.000000Z"}, s)
    assert matches_partition("ts = '2024-01-01 10:00:00'", {"ts": "2024-01-01 12:00:00+02:00"}, s)
    assert matches_partition("ntz = '2024-01-01 10:00:00'", {"ntz": "2024-01-01 10:00:00"}, s)
    assert matches_partition("CAST(amt AS INT) = 1", {"amt": "1.99"}, s)


def test_matches_partition_column_mapping_uses_physical_names():
    schema = TableSchema.from_schema_string(
        json.dumps({"type": "struct", "fields": [
            {"name": "Region", "type": "string", "nullable": True,
             "metadata": {"delta.columnMapping.physicalName": "col-5f422f40"}},
        ]}),
        ["Region"],
        "name",
    )
    assert matches_partition("region = 'EU'", {"col-5f422f40": "EU"}, schema)
    assert not matches_partition("region = 'EU'", {"col-5f422f40": "US"}, schema)


def test_non_deterministic_parts_are_widened():
    assert matches_partition("part = 1 OR rand() < 0.1", {"part": "2"}, SPEC)  # a OR nd => TRUE
    assert not matches_partition("part = 1 AND rand() < 0.1", {"part": "2"}, SPEC)  # a AND nd => a
    assert matches_partition("NOT (rand() < 0.1)", {"part": "2"}, SPEC)  # NOT nd => TRUE
    assert matches_partition("part = 1 AND my_udf(part) = 1", {"part": "1"}, SPEC)


def test_unparsed_and_truncated_match_conservatively():
    assert matches_partition("SELECT 1", {"part": "1"}, SPEC)
    assert matches_partition("(part#1 = 7) AND (part#1 IN (1,... 3 more fields)", {"part": "2"}, SPEC)
    assert matches_partition(ParsedPredicate(text="x", sql=None, error="boom"), {}, SPEC)


# ---- delta-rs style stats skipping (conflict-rules §9) -------------------------------------------------------

STATS = json.dumps({"numRecords": 10, "minValues": {"value": 1, "name": "b"}, "maxValues": {"value": 4, "name": "d"}, "nullCount": {"value": 0, "name": 3}})


@pytest.mark.parametrize(
    "pred, expected",
    [
        ("value > 5", False),
        ("value > 3", True),
        ("value = 0", False),
        ("value BETWEEN 2 AND 3", True),
        ("value IN (7, 8)", False),
        ("value IS NULL", False),  # nullCount 0
        ("name IS NULL", True),
        ("name = 'a'", False),
        ("name = 'c'", True),
        ("value <> 2", True),
        ("value > 5 OR name = 'c'", True),
        ("value > 5 AND name = 'c'", False),
        ("id = 1", True),  # no stats for the column
    ],
)
def test_may_match_stats(pred, expected):
    assert may_match_stats(pred, STATS, {}, SPEC) is expected


def test_may_match_stats_missing_or_broken_stats_and_partitions():
    assert may_match_stats("value > 5", None, {}, SPEC)
    assert may_match_stats("value > 5", "{not json", {}, SPEC)
    assert not may_match_stats("part = 1 AND value > 3", STATS, {"part": "2"}, SPEC)
    all_null = {"numRecords": 4, "nullCount": {"value": 4}}
    assert not may_match_stats("value = 1", all_null, {}, SPEC)
    assert may_match_stats("value IS NULL", all_null, {}, SPEC)


# ---- real corpus tables (../shared) ------------------------------------------------------------------


def _commits(table: Path):
    """(version, actions) per JSON commit, in order; TableSchema from the latest metaData."""
    for f in sorted((table / "_delta_log").glob("*.json")):
        if not (len(f.stem) == 20 and f.stem.isdigit()):
            continue  # V2 checkpoint manifests, compacted ranges, ...
        actions = []
        for line in f.read_text(errors="replace").splitlines():
            if line.strip():
                try:
                    actions.append(json.loads(line))
                except ValueError:
                    pass
        yield int(f.stem), actions


def _schema(actions, current):
    for a in actions:
        if "metaData" in a:
            m = a["metaData"]
            return TableSchema.from_schema_string(
                m.get("schemaString"), m.get("partitionColumns") or [], (m.get("configuration") or {}).get("delta.columnMapping.mode", "none")
            )
    return current


def test_corpus_every_recorded_predicate_parses(shared_dir):
    seen = 0
    for table in sorted((shared_dir / "corpus" / "tables").iterdir()):
        schema = None
        for version, actions in _commits(table):
            schema = _schema(actions, schema)
            for a in actions:
                ci = a.get("commitInfo")
                if not ci:
                    continue
                for src in predicate_strings(ci.get("operation"), ci.get("operationParameters")):
                    p = parse_predicate(src.text, schema)
                    seen += 1
                    assert p.sql is not None, (table.name, version, src.text, p.error)
    assert seen > 150


def test_corpus_removed_files_satisfy_their_commit_predicate(shared_dir):
    """A DELETE/UPDATE removed only files it read: each removed file must match the partition
    part of its predicate (conflict-rules §5.6 c) and survive stats skipping on its AddFile's stats (§9)."""
    checked_partition = checked_stats = 0
    for table in sorted((shared_dir / "corpus" / "tables").iterdir()):
        schema, live = None, {}
        for version, actions in _commits(table):
            schema = _schema(actions, schema)
            ci = next((a["commitInfo"] for a in actions if "commitInfo" in a), None)
            if ci and ci.get("operation") in ("DELETE", "UPDATE") and schema is not None:
                conds = [parse_predicate(s.text, schema) for s in predicate_strings(ci["operation"], ci.get("operationParameters"))]
                if conds:
                    part, _ = split_partition_and_data(conds, schema)
                    for a in actions:
                        if "remove" not in a:
                            continue
                        pv = a["remove"].get("partitionValues") or {}
                        assert matches_partition(part, pv, schema), (table.name, version, part.sql, pv)
                        checked_partition += 1
                        add = live.get(a["remove"]["path"])
                        if add is not None and add.get("stats"):
                            for c in conds:
                                assert may_match_stats(c, add["stats"], pv, schema), (table.name, version, c.sql, add["stats"])
                            checked_stats += 1
            for a in actions:
                if "add" in a:
                    live[a["add"]["path"]] = a["add"]
                elif "remove" in a:
                    live.pop(a["remove"]["path"], None)
    assert checked_partition > 50 and checked_stats > 20


def test_corpus_cdc_ict_delete_selects_exactly_the_removed_files(shared_dir):
    """rs-cdc_ict_table v2: DELETE WHERE birthyear = 1995 AND age < 30 (Spark 4.1 / Delta 4.3)."""
    table = shared_dir / "corpus" / "tables" / "rs-cdc_ict_table"
    commits = dict(_commits(table))
    schema = _schema(commits[0], None)
    params = next(a["commitInfo"] for a in commits[2] if "commitInfo" in a)["operationParameters"]
    (src,) = predicate_strings("DELETE", params)
    p = parse_predicate(src.text, schema)
    part, data = split_partition_and_data([p], schema)
    assert (part.sql, [d.sql for d in data]) == ("birthyear = 1995", ["age < 30"])
    adds = [a["add"] for a in commits[1] if "add" in a]
    removed = {a["remove"]["path"] for a in commits[2] if "remove" in a}
    in_partition = {a["path"] for a in adds if matches_partition(part, a["partitionValues"], schema)}
    skipped_in = {a["path"] for a in adds if may_match_stats(p, a["stats"], a["partitionValues"], schema)}
    assert removed <= in_partition and len(in_partition) == 3
    assert skipped_in == removed


def test_corpus_partition_only_delete_on_long_partition(shared_dir):
    """krs-cdf-table-partitioned v2: DELETE WHERE part = 0 on a BIGINT partition column."""
    table = shared_dir / "corpus" / "tables" / "krs-cdf-table-partitioned"
    commits = dict(_commits(table))
    schema = _schema(commits[0], None)
    ci = next(a["commitInfo"] for a in commits[2] if "commitInfo" in a)
    (src,) = predicate_strings(ci["operation"], ci["operationParameters"])
    part, data = split_partition_and_data([parse_predicate(src.text, schema)], schema)
    assert part.sql == "part = 0" and data == []
    live: dict[str, dict] = {}
    for v in (0, 1):
        for a in commits[v]:
            if "add" in a:
                live[a["add"]["path"]] = a["add"]["partitionValues"]
            elif "remove" in a:
                live.pop(a["remove"]["path"], None)
    matching = {path for path, pv in live.items() if matches_partition(part, pv, schema)}
    removed = {a["remove"]["path"] for a in commits[2] if "remove" in a}
    assert matching == removed and len(live) > len(removed)
