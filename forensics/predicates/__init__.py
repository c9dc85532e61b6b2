"""Predicates recorded in commitInfo: parse (sqlglot, Spark dialect), classify, evaluate.

Modules: params (find predicate strings in operationParameters, conflict-rules §8.1), lexer + parse
(Catalyst / SQL text -> ParsedPredicate), casts (Spark CAST rules), evaluate (partition values
and stats, conflict-rules §5.6 c/d, §9), classify (partition vs data, MERGE target-only, conflict-rules §4.1 §8.2),
advice (suggested MERGE conditions).
"""

from forensics.predicates.advice import rewrite_with_partition_literal
from forensics.predicates.classify import infer_target_alias, merge_read_filters, split_partition_and_data, target_only_conjuncts
from forensics.predicates.evaluate import matches_partition, matches_partition_as_written, may_match_stats
from forensics.predicates.params import decode_param, predicate_strings
from forensics.predicates.parse import MAX_DEPTH, MAX_PREDICATE_CHARS, conjuncts, parse_predicate, to_sql
from forensics.predicates.parsed import TRUE_PREDICATE, TRUNCATION_MARK, ParsedPredicate, PredicateSource

__all__ = [
    "ParsedPredicate",
    "PredicateSource",
    "TRUE_PREDICATE",
    "TRUNCATION_MARK",
    "MAX_DEPTH",
    "MAX_PREDICATE_CHARS",
    "decode_param",
    "predicate_strings",
    "parse_predicate",
    "conjuncts",
    "split_partition_and_data",
    "target_only_conjuncts",
    "merge_read_filters",
    "infer_target_alias",
    "matches_partition",
    "matches_partition_as_written",
    "may_match_stats",
    "to_sql",
    "rewrite_with_partition_literal",
]
