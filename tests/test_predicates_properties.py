"""Property tests for forensics.predicates (hypothesis).

Generated predicates over a small schema are rendered twice, as Spark SQL and as Catalyst
simpleString (expression ids, unquoted literals, every binary operator parenthesised), and
checked against an independent three-valued-logic oracle written here.
"""

from __future__ import annotations

import json
from datetime import date

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics.predicates import matches_partition, may_match_stats, parse_predicate, to_sql
from forensics.log.schema import TableSchema

SCHEMA = TableSchema.from_simple(
    {"a": "int", "b": "string", "d": "date", "x": "long", "s": "string"}, ["a", "b", "d"]
)
# x evaluated exactly: the same table, with x as a partition column
SCHEMA_X_EXACT = TableSchema.from_simple({"a": "int", "b": "string", "d": "date", "x": "long", "s": "string"}, ["a", "b", "d", "x"])
IDS = {"a": "a#11", "b": "b#12", "d": "d#13", "x": "x#14L", "s": "s#15"}
KEYWORDS = {"and", "or", "not", "in", "is", "null", "true", "false", "like", "rlike", "ilike", "inset", "between",
            "as", "case", "when", "then", "else", "end", "interval", "array", "map", "struct", "exists", "select", "regexp"}

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---- predicate ASTs -----------------------------------------------------------------------------------

words = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC", min_size=1, max_size=5).filter(lambda w: w.lower() not in KEYWORDS)
str_lits = st.lists(words, min_size=1, max_size=3).map(" ".join)
int_lits = st.integers(-3, 8)
date_lits = st.dates(min_value=date(2023, 12, 25), max_value=date(2024, 1, 5))
OPS = ["=", "<>", "<", "<=", ">", ">="]


def _leaf():
    int_cmp = st.tuples(st.just("cmp"), st.sampled_from(["a", "x"]), st.sampled_from(OPS), int_lits)
    str_cmp = st.tuples(st.just("cmp"), st.sampled_from(["b", "s"]), st.sampled_from(["=", "<>"]), str_lits)
    date_cmp = st.tuples(st.just("cmp"), st.just("d"), st.sampled_from(OPS), date_lits)
    int_in = st.tuples(st.just("in"), st.sampled_from(["a", "x"]), st.lists(int_lits, min_size=1, max_size=4))
    nulls = st.tuples(st.sampled_from(["isnull", "isnotnull"]), st.sampled_from(["a", "b", "d", "x"]))
    between = st.tuples(st.just("between"), st.sampled_from(["a", "x"]), int_lits, int_lits)
    const = st.tuples(st.just("const"), st.booleans())
    return st.one_of(int_cmp, str_cmp, date_cmp, int_in, nulls, between, const)


preds = st.recursive(
    _leaf(),
    lambda kids: st.one_of(
        st.tuples(st.just("and"), kids, kids),
        st.tuples(st.just("or"), kids, kids),
        st.tuples(st.just("not"), kids),
    ),
    max_leaves=8,
)


def _sql_lit(v) -> str:
    if isinstance(v, (int,)) and not isinstance(v, bool):
        return str(v)
    return "'" + str(v) + "'"


def render_sql(n) -> str:
    k = n[0]
    if k == "cmp":
        return f"{n[1]} {n[2]} {_sql_lit(n[3])}"
    if k == "in":
        return f"{n[1]} IN ({', '.join(map(str, n[2]))})"
    if k in ("isnull", "isnotnull"):
        return f"{k.upper()}({n[1]})"
    if k == "between":
        return f"({n[1]} >= {n[2]}) AND ({n[1]} <= {n[3]})"
    if k == "const":
        return "TRUE" if n[1] else "FALSE"
    if k == "not":
        return f"NOT ({render_sql(n[1])})"
    return f"({render_sql(n[1])}) {k.upper()} ({render_sql(n[2])})"


def render_catalyst(n) -> str:
    """Catalyst simpleString: ids, unquoted literals, parenthesised binary operators."""
    k = n[0]
    if k == "cmp":
        op = "!=" if n[2] == "<>" else n[2]
        if op == "!=":  # Catalyst prints NOT (a = b)
            return f"NOT ({IDS[n[1]]} = {n[3]})"
        return f"({IDS[n[1]]} {op} {n[3]})"
    if k == "in":
        return f"{IDS[n[1]]} IN ({','.join(map(str, n[2]))})"
    if k in ("isnull", "isnotnull"):
        return f"{k}({IDS[n[1]]})"
    if k == "between":
        return f"(({IDS[n[1]]} >= {n[2]}) AND ({IDS[n[1]]} <= {n[3]}))"
    if k == "const":
        return "true" if n[1] else "false"
    if k == "not":
        return f"NOT {render_catalyst(n[1])}"
    return f"({render_catalyst(n[1])} {k.upper()} {render_catalyst(n[2])})"


def render_sql_like_catalyst(n) -> str:
    """The SQL rendering of exactly the tree render_catalyst describes (<> as NOT (=))."""
    if n[0] == "cmp" and n[2] == "<>":
        return f"NOT ({n[1]} = {_sql_lit(n[3])})"
    if n[0] == "not":
        return f"NOT ({render_sql_like_catalyst(n[1])})"
    if n[0] in ("and", "or"):
        return f"({render_sql_like_catalyst(n[1])}) {n[0].upper()} ({render_sql_like_catalyst(n[2])})"
    return render_sql(n)


# ---- the oracle: Spark three-valued logic on typed values -------------------------------------------------


def _cmp(op, a, b):
    if a is None or b is None:
        return None
    return {"=": a == b, "<>": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _and(p, q):
    if p is False or q is False:
        return False
    if p is None or q is None:
        return None
    return True


def _or(p, q):
    if p is True or q is True:
        return True
    if p is None or q is None:
        return None
    return False


def oracle(n, row):
    k = n[0]
    if k == "cmp":
        return _cmp(n[2], row[n[1]], n[3])
    if k == "in":
        v = row[n[1]]
        if v is None:
            return None
        return v in n[2]
    if k == "isnull":
        return row[n[1]] is None
    if k == "isnotnull":
        return row[n[1]] is not None
    if k == "between":
        return _and(_cmp(">=", row[n[1]], n[2]), _cmp("<=", row[n[1]], n[3]))
    if k == "const":
        return n[1]
    if k == "not":
        v = oracle(n[1], row)
        return None if v is None else not v
    l, r = oracle(n[1], row), oracle(n[2], row)
    return _and(l, r) if k == "and" else _or(l, r)


rows = st.fixed_dictionaries(
    {
        "a": st.one_of(st.none(), st.integers(-3, 8)),
        "b": st.one_of(st.none(), str_lits),
        "d": st.one_of(st.none(), date_lits),
        "x": st.one_of(st.none(), st.integers(-3, 8)),
        "s": st.one_of(st.none(), str_lits),
    }
)


def partition_values(row, cols=("a", "b", "d")):
    """How a writer stores them: strings, NULL as null or __HIVE_DEFAULT_PARTITION__."""
    out = {}
    for c in cols:
        v = row[c]
        out[c] = None if v is None else (v.isoformat() if isinstance(v, date) else str(v))
    return out


# ---- properties ----------------------------------------------------------------------------------------------


@PROPS
@given(st.text(max_size=200))
def test_parse_never_raises_on_arbitrary_text(text):
    p = parse_predicate(text, SCHEMA)
    assert (p.sql is None) == (p.error is not None)
    assert isinstance(to_sql(p), str)


sqlish = st.lists(
    st.sampled_from(["(", ")", "a#1", "b#2L", "x", "'", "`", '"', " AND ", " OR ", "NOT ", " = ", " IN ", ",", "...",
                     " 5 more fields", "cast(", " as bigint", "1", "2024-01-01", "\\", "#", "--", "/*", "rand()", " ", "."]),
    max_size=40,
).map("".join)


@PROPS
@given(sqlish)
def test_parse_never_raises_on_predicate_shaped_noise(text):
    p = parse_predicate(text, SCHEMA)
    assert (p.sql is None) == (p.error is not None)


@PROPS
@given(preds)
def test_print_then_parse_is_stable(tree):
    p = parse_predicate(render_sql(tree), SCHEMA)
    assert p.sql is not None, (render_sql(tree), p.error)
    again = parse_predicate(to_sql(p), SCHEMA)
    assert again.sql == to_sql(p)
    assert again.columns == p.columns


@PROPS
@given(preds)
def test_catalyst_and_sql_renderings_parse_to_the_same_predicate(tree):
    cat = parse_predicate(render_catalyst(tree), SCHEMA)
    plain = parse_predicate(render_sql_like_catalyst(tree), SCHEMA)
    assert cat.error is None, (render_catalyst(tree), cat.error)
    assert cat.sql == plain.sql, render_catalyst(tree)


@settings(PROPS, max_examples=500)
@given(preds, rows)
def test_matches_partition_agrees_with_oracle_on_partition_columns(tree, row):
    # only predicates over partition columns are decided exactly; others must stay conservative
    p = parse_predicate(render_sql(tree), SCHEMA)
    got = matches_partition(p, partition_values(row), SCHEMA)
    if p.columns <= {"a", "b", "d"}:
        assert got is (oracle(tree, row) is True), render_sql(tree)
    elif oracle(tree, row) is True:
        assert got is True, render_sql(tree)


@PROPS
@given(preds, rows)
def test_hive_default_partition_is_null(tree, row):
    pv = {k: ("__HIVE_DEFAULT_PARTITION__" if v is None else v) for k, v in partition_values(row).items()}
    assert matches_partition(render_sql(tree), pv, SCHEMA) is matches_partition(render_sql(tree), partition_values(row), SCHEMA)


@PROPS
@given(st.text(max_size=80), st.dictionaries(st.sampled_from(["a", "b", "d", "A", "zz"]), st.one_of(st.none(), st.text(max_size=12))))
def test_matches_partition_never_raises(text, pv):
    assert matches_partition(text, pv, SCHEMA) in (True, False)
    assert may_match_stats(text, json.dumps({"numRecords": 1}), pv, SCHEMA) in (True, False)


@PROPS
@given(preds, st.lists(st.one_of(st.none(), st.integers(-3, 8)), min_size=1, max_size=6), rows)
def test_stats_skipping_is_sound(tree, xs, base):
    """If any row of a file satisfies the predicate, min/max/nullCount skipping keeps the file."""
    text = render_sql(tree)
    non_null = [v for v in xs if v is not None]
    stats = {"numRecords": len(xs), "nullCount": {"x": len(xs) - len(non_null)}}
    if non_null:
        stats["minValues"] = {"x": min(non_null)}
        stats["maxValues"] = {"x": max(non_null)}
    pv = partition_values(base)
    any_row = any(
        matches_partition(text, {**pv, "x": None if v is None else str(v)}, SCHEMA_X_EXACT) for v in xs
    )
    if any_row:
        assert may_match_stats(text, json.dumps(stats), pv, SCHEMA), (text, stats)


def _ids_and_meta(p):
    from sqlglot import exp

    if p._expr is None:
        return None
    return [(c.name, c.meta.get("expr_id"), c.meta.get("long"), c.meta.get("qualifier")) for c in p._expr.find_all(exp.Column)]


def _as_parsed_directly(text):
    """The parse of `text` itself, past every cache (parse.py renumbers Catalyst ids to share one
    parse between texts that differ only in them)."""
    from forensics.predicates.parse import _parse_guarded, schema_key

    return _parse_guarded(text, schema_key(SCHEMA))


fresh_ids = st.fixed_dictionaries({c: st.integers(0, 10**7) for c in IDS})


@PROPS
@given(preds, fresh_ids, fresh_ids)
def test_a_catalyst_predicate_parses_the_same_whatever_its_attribute_ids(tree, ids_one, ids_two):
    """Two runs of one query print other ids: each parse is the text's own (its ids, its text),
    and the two differ in nothing else."""
    global IDS
    saved = IDS
    texts = []
    try:
        for ids in (ids_one, ids_two):
            IDS = {c: f"{c}#{ids[c]}{'L' if saved[c].endswith('L') else ''}" for c in saved}
            texts.append(render_catalyst(tree))
    finally:
        IDS = saved
    got = [parse_predicate(t, SCHEMA) for t in texts]
    for t, p in zip(texts, got):
        direct = _as_parsed_directly(t)
        assert p == direct and p.text == t
        assert p._expr == direct._expr and _ids_and_meta(p) == _ids_and_meta(direct), t
    assert got[0].sql == got[1].sql and got[0].columns == got[1].columns


@PROPS
@given(sqlish)
def test_noise_parses_as_itself_through_the_renumbering(text):
    p = parse_predicate(text, SCHEMA)
    direct = _as_parsed_directly(text)
    assert p == direct and p.text == text and _ids_and_meta(p) == _ids_and_meta(direct)
