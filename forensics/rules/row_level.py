"""Databricks: row-level concurrency and the OPTIMIZE exemption, as its documentation states them.

Databricks Runtime is closed source; the conflict matrices of its pages "Row-level concurrency"
and "Isolation levels and write conflicts on Databricks" are the model (conflict-rules §11). The
file checks (forensics.rules.file_checks) ask here whether a conflict delta-spark would raise is
one Databricks resolves; every answer from here is labelled inferred.

"Can conflict when modifying the same row" is decided from what the log states (conflict-rules
§11.5): a loser whose remove of a file names the winner's deletion vector was reconciled; two
DELETE/UPDATE conditions whose equality terms exclude each other modify different rows; rows a
winner added can be rows this transaction modifies when its condition can match their statistics.
"""

from __future__ import annotations

import re
from typing import Any

from forensics.log.schema import TableSchema
from forensics.model import FileAction, WinningCommit, operation_class
from forensics.predicates import TRUE_PREDICATE, ParsedPredicate, conjuncts, may_match_stats, parse_predicate, predicate_strings
from forensics.rules.metadata import supports
from forensics.rules.results import CheckOutcome
from forensics.rules.state import CheckState

UDM = "UPDATE/DELETE/MERGE"
EXCEPTIONS = {"appends": "ConcurrentAppendException", "deleteRead": "ConcurrentDeleteReadException",
              "deleteDelete": "ConcurrentDeleteDeleteException"}


# ---- when it applies (conflict-rules §11.2) -------------------------------------------------------


def dvs_enabled(st: CheckState) -> bool:
    """Deletion vectors on: the table property, or a liquid-clustered table that did not turn them off."""
    cfg = st.metadata.configuration if st.metadata is not None else {}
    setting = str(cfg.get("delta.enableDeletionVectors", "")).lower()
    if supports(st.protocol, "clustering"):
        return setting != "false"
    return setting == "true"


def rlc_eligible(st: CheckState) -> bool:
    """conflict-rules §11.2 [doc]: Runtime 14.2+ (a MERGE on 14.2 needs Photon), and an unpartitioned
    table with deletion vectors enabled, or a liquid-clustered one whose deletion vectors were not
    turned off."""
    prof = st.profile
    if not prof.row_level_concurrency or not prof.runtime_at_least(14, 2):
        return False
    if prof.runtime == (14, 2) and (st.txn.operation or "").upper() == "MERGE" and "photon" not in (st.txn.engine_info or "").lower():
        return False
    return not st.txn.partition_columns and dvs_enabled(st)


def _zorder(operation: str | None, params: dict[str, Any] | None) -> bool:
    z = params.get("zOrderBy") if isinstance(params, dict) else None
    return operation_class(operation, params) == "OPTIMIZE" and bool(z) and z not in ("[]", [])


def _params(w: WinningCommit) -> dict[str, Any]:
    return w.commit.operation_parameters if w.commit is not None else {}


def zorder_on_either_side(st: CheckState, w: WinningCommit) -> bool:
    """conflict-rules §11.3: an OPTIMIZE with ZORDER BY can conflict whatever the table."""
    return _zorder(st.txn.operation, st.txn.operation_parameters) or _zorder(w.operation, _params(w))


# ---- OPTIMIZE without ZORDER BY (conflict-rules §11.3) -----------------------------------------------


def optimize_exempt(st: CheckState, w: WinningCommit) -> bool:
    """[doc] On a table with deletion vectors, OPTIMIZE without ZORDER BY conflicts neither with
    UPDATE/DELETE/MERGE nor with another OPTIMIZE, partitioned tables included."""
    if st.profile.engine != "databricks" or not dvs_enabled(st):
        return False
    pair = {operation_class(st.txn.operation, st.txn.operation_parameters), operation_class(w.operation, _params(w))}
    return "OPTIMIZE" in pair and pair <= {"OPTIMIZE", UDM} and not zorder_on_either_side(st, w)


def exempt(name: str, st: CheckState, w: WinningCommit) -> CheckOutcome:
    mine = operation_class(st.txn.operation, st.txn.operation_parameters)
    theirs = operation_class(w.operation, _params(w))
    st.inferred.append("Databricks: OPTIMIZE without ZORDER BY conflicts with no DML or OPTIMIZE on a table with "
                       "deletion vectors [doc]")
    return CheckOutcome(name, "passed", f"v{w.version} ({theirs}) and this transaction ({mine}): on a table with "
                        "deletion vectors an OPTIMIZE without ZORDER BY does not conflict with them, as Databricks "
                        "documents", winner_version=w.version, inferred=True)


# ---- the same rows? (conflict-rules §11.5) ---------------------------------------------------------


def dv_update(w: WinningCommit, path: str) -> bool:
    """The winner re-added `path` (with a new deletion vector): it changed rows of the file in place."""
    return any(a.path == path for a in w.adds)


def reconciled(mine: FileAction, w: WinningCommit) -> bool:
    """conflict-rules §11.4: a reconciled loser's remove(P) carries the winner's DV for P."""
    if mine.deletion_vector is None:
        return False
    return any(a.path == mine.path and a.deletion_vector is not None
               and a.deletion_vector.unique_id == mine.deletion_vector.unique_id for a in w.adds)


def dml_condition(operation: str | None, params: dict[str, Any] | None, schema: TableSchema) -> list[ParsedPredicate] | None:
    """The rows a DELETE or UPDATE modifies: its recorded condition (`predicate`; an empty one is TRUE).
    None when no `predicate` was recorded, and for every other operation, whose modified rows the log
    does not state (a MERGE's ON condition names the source)."""
    op = (operation or "").strip().upper()
    if op not in ("DELETE", "UPDATE") or "predicate" not in (params or {}):
        return None
    texts = [s.text for s in predicate_strings(op, params or {}) if s.role == "condition"]
    return [parse_predicate(t, schema) for t in texts] or [TRUE_PREDICATE]


_EQ = re.compile(r"^`?([^`=<>!\s()]+)`?\s*=\s*(.+)$")
_IN = re.compile(r"^`?([^`<>!=\s()]+)`?\s+IN\s+\((.*)\)$", re.IGNORECASE)
_NUM = re.compile(r"^-?\d+(?:\.\d+)?$")


def _literal(text: str) -> str | int | float | None:
    """A plain literal of the canonical SQL; None for anything else (escapes included: not pinned)."""
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] == "'" and "'" not in t[1:-1] and "\\" not in t:
        return t[1:-1]
    if _NUM.match(t):
        return float(t) if "." in t else int(t)
    return None


def _pinned_rows(preds: list[ParsedPredicate], schema: TableSchema) -> dict[str, Any] | None:
    """Statistics of the rows a condition's equality terms pin (`c = v`, `c IN (...)`): min and max per
    pinned column. None when no column is pinned (then nothing can be excluded)."""
    values: dict[str, list] = {}
    for p in preds:
        for c in (conjuncts(p) if p.parsed else []):
            sql = c.sql or ""
            m_in, m_eq = _IN.match(sql), _EQ.match(sql)
            if m_in:
                col, lits = m_in.group(1), m_in.group(2).split(",")
            elif m_eq:
                col, lits = m_eq.group(1), [m_eq.group(2)]
            else:
                continue
            vals = [_literal(x) for x in lits]
            if vals and all(v is not None for v in vals):
                values.setdefault(col, []).extend(vals)
    pinned = {c: vs for c, vs in values.items() if len({isinstance(v, str) for v in vs}) == 1}
    if not pinned:
        return None
    names = {c: schema.physical_name(c) for c in pinned}
    return {"numRecords": 1, "minValues": {names[c]: min(vs) for c, vs in pinned.items()},
            "maxValues": {names[c]: max(vs) for c, vs in pinned.items()}, "nullCount": {names[c]: 0 for c in pinned}}


def _excludes(a: list[ParsedPredicate], b: list[ParsedPredicate], schema: TableSchema) -> bool:
    rows = _pinned_rows(a, schema)
    return rows is not None and not all(may_match_stats(p, rows, {}, schema) for p in b)


def _text(preds: list[ParsedPredicate]) -> str:
    return " AND ".join(str(p) for p in preds)


def same_rows(st: CheckState, w: WinningCommit) -> tuple[bool | None, str]:
    """Can this transaction and the winner modify the same rows? None when the log does not say."""
    mine = dml_condition(st.txn.operation, st.txn.operation_parameters, st.schema)
    theirs = dml_condition(w.operation, _params(w), st.schema)
    if mine is None or theirs is None:
        return None, "which rows each side modified is not recorded (only DELETE and UPDATE record a condition)"
    if _excludes(mine, theirs, st.schema) or _excludes(theirs, mine, st.schema):
        return False, f"their conditions `{_text(mine)}` and `{_text(theirs)}` cannot select the same row"
    return True, f"their conditions `{_text(mine)}` and `{_text(theirs)}` can select the same rows"


def _condition(st: CheckState) -> list[ParsedPredicate]:
    """The rows this transaction modifies or depends on: its DML condition, else what it recorded reading."""
    dml = dml_condition(st.txn.operation, st.txn.operation_parameters, st.schema)
    if dml is not None:
        return dml
    r = st.txn.read
    texts = [p for p in (*r.partition_predicates, *r.data_predicates) if p.strip().upper() != "TRUE"]
    if r.whole_table or len(r.partition_predicates) > 1 or not texts:
        return [TRUE_PREDICATE]
    return [parse_predicate(t, st.schema) for t in texts]


# ---- the checks' row-level answers -----------------------------------------------------------------


def appends_outcome(st: CheckState, w: WinningCommit, candidates: list[FileAction], level: str) -> CheckOutcome:
    """conflict-rules §11.5: under row-level concurrency a counted add conflicts only when its rows can be
    rows this transaction modifies. A re-add of a file the winner also removed is a deletion-vector
    update of existing rows: the delete checks judge it."""
    v, removed = w.version, {r.path for r in w.removes}
    cond = _condition(st)
    for f in candidates:
        if f.path not in removed and all(may_match_stats(p, f.stats, f.partition_values, st.schema) for p in cond):
            st.inferred.append("Databricks row-level concurrency: rows a winner added can be rows this transaction modifies")
            return CheckOutcome("appends", "failed", f"winner v{v} added {f.path}, whose rows this transaction's "
                                f"condition `{_text(cond)}` can select: row-level concurrency (Databricks) still "
                                f"conflicts on the same rows [{level}]", exception=EXCEPTIONS["appends"], file=f.path,
                                partition=f.partition_values, winner_version=v, inferred=True)
    st.inferred.append("Databricks row-level concurrency assumed to reconcile added rows")
    return CheckOutcome("appends", "passed", f"winner v{v} added rows this transaction's condition `{_text(cond)}` "
                        "cannot select (file statistics), or updated rows in place: row-level concurrency (Databricks) "
                        "reconciles them", winner_version=v, inferred=True)


def file_outcome(name: str, st: CheckState, w: WinningCommit, path: str,
                 partition: dict[str, str | None] | None) -> CheckOutcome | None:
    """conflict-rules §11.5: the answer to the winner's remove of `path` under row-level concurrency;
    None when it does not apply (the delta-spark rule stands): not eligible, the winner did not
    update `path` in place, or an OPTIMIZE with ZORDER BY on either side."""
    if not rlc_eligible(st) or not dv_update(w, path) or zorder_on_either_side(st, w):
        return None
    v = w.version
    mine = next((r for r in st.removes if r.path == path), None)
    if mine is None:
        why, same = "this transaction read it but modified none of its rows", False
    elif reconciled(mine, w):
        why, same = "this transaction's remove names the deletion vector the winner gave it (reconciled)", False
    else:
        same, why = same_rows(st, w)
    kw = {"file": path, "partition": partition, "winner_version": v, "inferred": True}
    if same:
        st.inferred.append("Databricks row-level concurrency: both sides can modify the same rows")
        return CheckOutcome(name, "failed", f"winner v{v} changed rows of {path} in place and {why}: row-level "
                            "concurrency (Databricks) conflicts on the same rows", exception=EXCEPTIONS[name], **kw)
    st.inferred.append("Databricks row-level concurrency assumed to reconcile a deletion-vector update")
    return CheckOutcome(name, "passed", f"winner v{v} changed rows of {path} in place; {why}: row-level concurrency "
                        "(Databricks) reconciles them" + ("" if same is False else " unless the same rows were modified"),
                        **kw)
