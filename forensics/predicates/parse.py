"""Parse commitInfo predicate strings with sqlglot (Spark dialect) into ParsedPredicate (conflict-rules §8.1).

Handles Catalyst simpleString (`(id#480L = 5)`, unquoted literals), `.sql` strings
(``(`id` = 1)``), Databricks fully qualified names (``spark_catalog.delta.`/p`.value``), user
replaceWhere text and delta-rs SQL (conflict-rules §9). Never raises: anything we cannot read comes back
with `sql=None` and a one-line `error`.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import threading
from contextlib import contextmanager

from functools import lru_cache
from typing import Any

import sqlglot
from sqlglot import exp

import forensics.predicates.lexer as lexer
from forensics.predicates.parsed import TRUNCATION_MARK, ParsedPredicate
from forensics.log.schema import TableSchema

DIALECT = "spark"
MAX_PREDICATE_CHARS = 64 * 1024
MAX_DEPTH = lexer.MAX_DEPTH
_SALVAGE_ATTEMPTS = 12

SchemaKey = tuple[str, ...] | None

# conflict-rules §5.6 d: what delta-spark widens. Typed sqlglot classes (lower-cased class names) and
# function names sqlglot does not model.
_NONDETERMINISTIC = {
    "rand", "randn", "random", "uuid", "shuffle", "uniform", "randstr",
    "monotonically_increasing_id", "spark_partition_id", "input_file_name",
    "input_file_block_start", "input_file_block_length", "reflect", "java_method", "try_reflect",
}
# Spark built-ins sqlglot parses as Anonymous; anything else Anonymous looks like a UDF.
_KNOWN_BUILTINS = {
    "isnull", "isnotnull", "isnan", "nanvl", "startswith", "endswith", "contains", "ifnull",
    "nvl", "nvl2", "nullif", "equal_null", "named_struct", "element_at", "size", "cardinality",
    "array_contains", "map_keys", "map_values", "get", "try_cast", "to_date", "to_timestamp",
    "date_format", "hash", "xxhash64", "md5", "sha1", "sha2", "crc32", "pmod", "positive",
    "negative", "instr", "locate", "lpad", "rpad", "btrim", "ltrim", "rtrim", "split_part",
    "regexp_extract", "regexp_replace", "make_date", "timestamp_millis", "timestamp_seconds",
    "unix_timestamp", "from_unixtime", "decimal", "int", "bigint", "string", "date", "timestamp",
    "boolean", "double", "float", "smallint", "tinyint", "ascii", "char", "base64", "unbase64",
    "hex", "unhex", "bin", "octet_length", "bit_length", "char_length", "character_length",
    "greatest", "least", "typeof", "if", "try_add", "try_subtract", "try_multiply", "try_divide",
    "array", "map", "struct", "in", "not", "like", "ilike", "rlike", "dayofmonth", "dayofweek",
    "weekofyear", "quarter", "hour", "minute", "second", "date_trunc", "trunc", "current_date",
    "current_timestamp", "now", "substring", "substr", "left", "right", "concat_ws", "coalesce",
}


def schema_key(schema: TableSchema | None) -> SchemaKey:
    if schema is None or not schema.columns:
        return None
    return tuple(c.name for c in schema.columns)


def _one_line(msg: str) -> str:
    """First line, printable characters only (sqlglot messages may quote the input)."""
    line = msg.splitlines()[0] if msg else "unparsed"
    return "".join(ch if ch.isprintable() else "?" for ch in line)[:300]


def _unparsed(text: str, error: str, truncated: bool = False) -> ParsedPredicate:
    return ParsedPredicate(text=text, sql=None, truncated=truncated, error=_one_line(error))


def parse_predicate(text: str, schema: TableSchema | None = None) -> ParsedPredicate:
    """Parse one predicate string; never raises; cached per (text, schema columns)."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    try:
        key = schema_key(schema)
    except Exception:  # a malformed schema object must not break parsing
        key = None
    return _parse_cached(text, key)


@lru_cache(maxsize=8192)
def _parse_cached(text: str, key: SchemaKey) -> ParsedPredicate:
    canonical = _canonical_ids(text)
    if canonical is not None:
        renumbered, ids, attributes = canonical
        p = _parse_canonical(renumbered, key)
        # Shared only when every attribute became a column of the tree (its id in the column's
        # meta, nowhere else): an attribute parsed as a function name keeps its id in the SQL.
        if p._expr is not None and _columns_with_ids(p._expr) == attributes:
            return _with_ids(p, text, ids)
    return _parse_guarded(text, key)


# Catalyst numbers every attribute afresh in each query (`id#1071L`, next run `id#805106L`), so a
# long log's conditions rarely repeat as text. Parsed once with the ids renumbered in order of
# appearance and given their own ids back (a copy of the tree, the ids in its columns' meta):
# the same result as parsing the text, several times cheaper.
@lru_cache(maxsize=8192)
def _parse_canonical(text: str, key: SchemaKey) -> ParsedPredicate:
    return _parse_guarded(text, key)


def _columns_with_ids(tree: exp.Expression) -> int:
    return sum(1 for c in tree.find_all(exp.Column) if c.meta.get("expr_id") is not None)


def _canonical_ids(text: str) -> tuple[str, tuple[int, ...], int] | None:
    """`text` with its attribute ids renumbered 0, 1, ... by first appearance, the real id of
    each number, and how many attributes it names; None when there is nothing to renumber or
    the text is not plain enough to be sure every `#` is an attribute's (a string, a UDF's
    result id, a cut)."""
    if "#" not in text or len(text) > MAX_PREDICATE_CHARS:
        return None
    toks = lexer.tokenize(text)
    attributes = sum(1 for t in toks if t.kind == "attr")
    if not attributes or text.count("#") != attributes or any(t.unterminated for t in toks):
        return None
    number: dict[int, int] = {}  # real id -> its number
    parts = []
    for t in toks:
        if t.kind == "attr":
            base, _, suffix = t.text.rpartition("#")
            long = suffix.endswith("L")
            k = number.setdefault(int(suffix[:-1] if long else suffix), len(number))
            parts.append(f"{base}#{k}{'L' if long else ''}")
        else:
            parts.append(t.text)
    renumbered = "".join(parts)
    if renumbered == text or "".join(t.text for t in toks) != text:
        return None
    return renumbered, tuple(number), attributes


def _with_ids(p: ParsedPredicate, text: str, ids: tuple[int, ...]) -> ParsedPredicate:
    """The parse of the renumbered text as the parse of `text`: its own ids (`ids[k]` for
    number k) and its own text."""
    tree = p._expr.copy()
    for col in tree.find_all(exp.Column):
        k = col.meta.get("expr_id")
        if k is not None:
            col.meta["expr_id"] = ids[k]
    return dataclasses.replace(p, text=text, _expr=tree)


def _parse_guarded(text: str, key: SchemaKey) -> ParsedPredicate:
    try:
        return _parse(text, key)
    except lexer.TooDeep as e:
        return _unparsed(text, str(e))
    except RecursionError:
        return _unparsed(text, f"nesting deeper than {MAX_DEPTH}")
    except Exception as e:  # never raise on log content
        return _unparsed(text, f"{type(e).__name__}: {e}")


def _parse(text: str, key: SchemaKey) -> ParsedPredicate:
    if len(text) > MAX_PREDICATE_CHARS:
        return _unparsed(text, f"predicate longer than {MAX_PREDICATE_CHARS} characters; not parsed")
    if not text.strip():
        return ParsedPredicate(text=text, sql="TRUE", _expr=exp.true(), _schema_key=key)
    toks = lexer.tokenize(text)
    catalyst = any(t.kind == "attr" for t in toks)
    if catalyst and any(t.unterminated and t.kind == "str" for t in toks):
        # Catalyst prints string literals raw: an apostrophe in `O'Brien` opens nothing
        toks = lexer.tokenize(text, quotes=False)
    toks, elided = lexer.replace_elisions(toks)
    _, unclosed, _ = lexer.group(toks)  # raises TooDeep before sqlglot could recurse
    cut = unclosed or any(t.unterminated for t in toks)
    truncated = elided or cut
    last_error = ""
    for attempt in range(_SALVAGE_ATTEMPTS if cut else 1):
        work = lexer.repair_cut(toks, attempt) if cut else toks
        root, _, _ = lexer.group(work)
        if catalyst:
            lexer.quote_catalyst_literals(root, text)
        sql_text = lexer.emit(root)
        try:
            with _headroom():
                tree = sqlglot.parse_one(sql_text, read=DIALECT)
        except RecursionError:
            return _unparsed(text, f"nesting deeper than {MAX_DEPTH}", truncated)
        except Exception as e:  # sqlglot ParseError / TokenError
            last_error = str(e).splitlines()[0] if str(e) else type(e).__name__
            continue
        if tree is None:
            last_error = "empty expression"
            continue
        if not isinstance(tree, exp.Condition):
            last_error = f"not a predicate expression ({type(tree).__name__})"
            continue
        if _depth(tree) > MAX_DEPTH:
            return _unparsed(text, f"nesting deeper than {MAX_DEPTH}", truncated)
        tree = _normalise(tree, key, catalyst)
        return make(text, tree, truncated, key)
    return _unparsed(text, f"cannot parse predicate: {last_error}", truncated)


# sqlglot's parser recurses ~22 Python frames per tree level (a function call in a function
# call is the costliest form measured); the margin covers the frames around the recursion.
_FRAMES_PER_LEVEL = 26
_HEADROOM = MAX_DEPTH * _FRAMES_PER_LEVEL + 200
_limit_lock = threading.Lock()


@contextmanager
def _headroom():
    """Let sqlglot recurse through MAX_DEPTH levels however deep the caller's stack already is,
    so the limit in the "nesting deeper than" message is the one the parser really has: the
    recursion limit is raised (never lowered) for the parse, under a lock, and put back."""
    depth, f = 0, sys._getframe()
    while f is not None:
        depth, f = depth + 1, f.f_back
    with _limit_lock:
        saved = sys.getrecursionlimit()
        if depth + _HEADROOM > saved:
            sys.setrecursionlimit(depth + _HEADROOM)
        try:
            yield
        finally:
            sys.setrecursionlimit(saved)


def _depth(tree: exp.Expression) -> int:
    """Nesting depth, counting a chain of the same connective (a AND b AND c) as one level."""
    best = 0
    stack: list[tuple[exp.Expression, int]] = [(tree, 1)]
    while stack:
        node, d = stack.pop()
        best = max(best, d)
        for child in node.iter_expressions():
            same_chain = isinstance(node, exp.Connector) and type(child) is type(node)
            stack.append((child, d if same_chain else d + 1))
    return best


# ---- normalisation ---------------------------------------------------------------------------


@lru_cache(maxsize=4096)
@functools.lru_cache(maxsize=4096)
def _safe_bare_identifier(name: str) -> bool:
    """A name prints without backticks when sqlglot reads it back, bare, as that same column
    in a comparison (so `date = '2024-01-01'` stays readable while `select` is quoted)."""
    if not name or not (name[0].isalpha() or name[0] == "_") or not all(c.isalnum() or c == "_" for c in name):
        return False
    try:
        toks = sqlglot.tokenize(name, read=DIALECT)
        if len(toks) == 1 and toks[0].token_type.name == "VAR":
            return True
        tree = sqlglot.parse_one(f"{name} = 1 AND {name} IN (1) AND {name} IS NULL", read=DIALECT)
    except Exception:
        return False
    cols = list(tree.find_all(exp.Column))
    return len(cols) == 3 and all(c.name == name and not c.table for c in cols)


def identifier(name: str) -> exp.Identifier:
    return exp.Identifier(this=name, quoted=not _safe_bare_identifier(name))


def _resolve(name: str, key: SchemaKey) -> str | None:
    if key is None:
        return None
    low = name.lower()
    for c in key:
        if c.lower() == low:
            return c
    return None


def _split_attr(name: str) -> tuple[str, int | None, bool]:
    base, sep, suffix = name.rpartition("#")
    if not sep or not base:
        return name, None, False
    long = suffix.endswith("L")
    digits = suffix[:-1] if long else suffix
    if not digits.isdigit():
        return name, None, False
    return base, int(digits), long


def _normalise(tree: exp.Expression, key: SchemaKey, catalyst: bool) -> exp.Expression:
    for node in tree.walk():
        if node.comments:
            node.comments = None
    for col in list(tree.find_all(exp.Column)):
        ident = col.this
        if not isinstance(ident, exp.Identifier):
            continue
        name = ident.name
        expr_id, is_long = None, False
        if catalyst and ident.quoted and "#" in name:
            name, expr_id, is_long = _split_attr(name)
        table, db, catalog = col.table, col.db, col.catalog
        if catalyst and "#" in table and not db:
            # Catalyst struct field access `s#12.field`: a reference to top-level column `s`
            base, base_id, base_long = _split_attr(table)
            top = exp.Column(this=identifier(_resolve(base, key) or base))
            top.meta.update(expr_id=base_id, long=base_long, qualifier=None, full_qualifier=None)
            dot = exp.Dot(this=top, expression=exp.Identifier(this=name, quoted=not _safe_bare_identifier(name)))
            if col is tree:
                tree = dot
            else:
                col.replace(dot)
            continue
        qualifier = table or None
        resolved = _resolve(name, key)
        unqualified = not qualifier
        if name != TRUNCATION_MARK and unqualified and expr_id is None and not ident.quoted:
            # conflict-rules §8.1: in Catalyst text every attribute carries `#id`, so a bare word is an
            # unquoted literal. In plain SQL an unknown name stays a column (evaluates as
            # unknown, i.e. conservatively) rather than becoming a constant.
            if catalyst:
                lit = exp.Literal.string(name)
                if col is tree:
                    tree = lit
                else:
                    col.replace(lit)
                continue
        keep_table = bool(table) and all(ch not in table for ch in "/:\\.")
        new = exp.Column(
            this=identifier(resolved or name),
            table=identifier(table) if keep_table else None,
        )
        new.meta["expr_id"] = expr_id
        new.meta["long"] = is_long
        new.meta["qualifier"] = qualifier.lower() if qualifier else None
        new.meta["full_qualifier"] = ".".join(p for p in (catalog, db, table) if p) or None
        if col is tree:
            tree = new
        else:
            col.replace(new)
    return strip_parens(tree)


def strip_parens(tree: exp.Expression) -> exp.Expression:
    """Drop parentheses that carry no meaning, so Catalyst's `((a = 1) AND (b = 2))` prints
    as `a = 1 AND b = 2`; parentheses that change precedence are kept."""
    while isinstance(tree, exp.Paren):
        inner = tree.this
        inner.parent = None
        inner.arg_key = None
        tree = inner
    for p in list(tree.find_all(exp.Paren)):
        child, parent = p.this, p.parent
        if child is None or parent is None:
            continue
        simple = isinstance(child, (exp.Paren, exp.Column, exp.Literal, exp.Boolean, exp.Null)) or (
            isinstance(child, exp.Func) and not isinstance(child, (exp.Binary, exp.Unary, exp.Predicate))
        )
        pred_under_logic = isinstance(parent, (exp.Connector, exp.Not)) and isinstance(child, (exp.Predicate, exp.Not))
        same_chain = isinstance(parent, (exp.And, exp.Or)) and type(parent) is type(child)
        arith_in_cmp = isinstance(parent, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ)) and isinstance(
            child, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv)
        )
        if simple or pred_under_logic or same_chain or arith_in_cmp:
            p.replace(child)
    while isinstance(tree, exp.Paren):
        inner = tree.this
        inner.parent = None
        inner.arg_key = None
        tree = inner
    return tree


# ---- building ParsedPredicate ----------------------------------------------------------------


def _func_name(node: exp.Expression) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    return type(node).__name__.lower()


def is_deterministic_node(node: exp.Expression) -> bool:
    """One node, not its children (conflict-rules §5.6 d: rand(), UDFs, subqueries are widened)."""
    if isinstance(node, (exp.Subquery, exp.Query, exp.Exists)):
        return False
    if isinstance(node, exp.Anonymous):
        name = _func_name(node)
        return name not in _NONDETERMINISTIC and name in _KNOWN_BUILTINS
    if isinstance(node, exp.Func):
        return _func_name(node) not in _NONDETERMINISTIC
    return True


def is_deterministic(tree: exp.Expression) -> bool:
    return all(is_deterministic_node(n) for n in tree.walk())


def column_refs(tree: exp.Expression) -> list[exp.Column]:
    return [c for c in tree.find_all(exp.Column) if c.name != TRUNCATION_MARK]


def make(text: str, tree: exp.Expression, truncated: bool, key: SchemaKey) -> ParsedPredicate:
    cols = column_refs(tree)
    return ParsedPredicate(
        text=text,
        sql=tree.sql(dialect=DIALECT),
        columns=frozenset(c.name for c in cols),
        qualifiers=frozenset(q for c in cols if (q := c.meta.get("qualifier"))),
        deterministic=is_deterministic(tree),
        truncated=truncated,
        error=None,
        _expr=tree,
        _schema_key=key,
    )


def from_expression(tree: exp.Expression, truncated: bool = False, key: SchemaKey = None) -> ParsedPredicate:
    """A ParsedPredicate for a tree we built (conjunct, AND of conjuncts); text = its SQL."""
    tree = strip_parens(tree)
    p = make("", tree, truncated, key)
    return ParsedPredicate(
        text=p.sql or "",
        sql=p.sql,
        columns=p.columns,
        qualifiers=p.qualifiers,
        deterministic=p.deterministic,
        truncated=truncated,
        error=None,
        _expr=tree,
        _schema_key=key,
    )


def _split(tree: exp.Expression, kind: type[exp.Expression]) -> list[exp.Expression]:
    """Operands of a chain of `kind` (AND / OR) left to right, iteratively (chains are left-deep)."""
    out: list[exp.Expression] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, kind):
            stack.append(node.expression)
            stack.append(node.this)
        else:
            out.append(node)
    return out


def split_and(tree: exp.Expression) -> list[exp.Expression]:
    """Conjuncts left to right."""
    return _split(tree, exp.And)


def split_or(tree: exp.Expression) -> list[exp.Expression]:
    """Disjuncts left to right."""
    return _split(tree, exp.Or)


def conjuncts(p: ParsedPredicate) -> list[ParsedPredicate]:
    """Split a parsed predicate at top-level AND (delta-spark splitConjunctivePredicates)."""
    if p._expr is None:
        return [p]
    parts = split_and(p._expr)
    if len(parts) == 1:
        return [p]
    return [from_expression(part.copy(), p.truncated, p._schema_key) for part in parts]


def and_all(preds: list[ParsedPredicate]) -> Any:
    """AND of parsed predicates' trees (copies); None for an empty list."""
    trees = [p._expr.copy() for p in preds if p._expr is not None]
    if not trees:
        return None
    out = trees[0]
    for t in trees[1:]:
        out = exp.And(this=_wrap(out), expression=_wrap(t))
    return out


def or_all(preds: list[ParsedPredicate], key: SchemaKey = None) -> ParsedPredicate | None:
    """OR of parsed predicates as one predicate (Catalyst `reduceOption(Or)`); None for an empty list."""
    trees = [p._expr.copy() for p in preds if p._expr is not None]
    if not trees or len(trees) != len(preds):
        return None
    out = trees[0]
    for t in trees[1:]:
        out = exp.Or(this=_wrap_and(out), expression=_wrap_and(t))
    return from_expression(out, any(p.truncated for p in preds), key)


def _wrap_and(t: exp.Expression) -> exp.Expression:
    return exp.Paren(this=t) if isinstance(t, (exp.And, exp.Or)) else t


def _wrap(t: exp.Expression) -> exp.Expression:
    return exp.Paren(this=t) if isinstance(t, exp.Or) else t


def to_sql(p: ParsedPredicate) -> str:
    """Canonical Spark SQL; the input text for a predicate we could not parse."""
    return p.sql if p.sql is not None else p.text
