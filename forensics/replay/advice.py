"""What to change, grounded in the evidence of one conflict (or one reorder): the one place advice is made.

`advise` speaks of a commit in the log and its verdict; `advice_for_error` of a transaction that
failed (an error text, its winner and the replayed loser). Each piece of advice names the fact it
rests on (a predicate without a partition literal, a winner that was a blind append, a shared
appId, ...). No advice is given without such a fact; `general_advice` is labelled as general.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from forensics.errortext import ErrorReport
from forensics.log.delta_log import DeltaLog
from forensics.model import WinningCommit
from forensics.safe import inert
from forensics.sets.commit_sets import CommitSets, StateIndex

if TYPE_CHECKING:
    from forensics.replay.whatif import WhatIfResult


@dataclass(frozen=True)
class Advice:
    title: str
    detail: str
    evidence: str
    example: str | None = None  # what to write, in the user's own SQL (aliases and column names as written)

    def to_dict(self) -> dict[str, str | None]:
        return {"title": self.title, "detail": self.detail, "evidence": self.evidence, "example": self.example}


def pinned_condition(conditions: list[tuple[str | None, str]], column: str, values: list[str], schema: Any,
                     *, merge: bool = True) -> tuple[str, str]:
    """(condition to write, where its names come from): the first condition that shows how the user
    wrote it, with a literal predicate on the partition column added (conflict-rules §8.2).

    `conditions` are (SQL text, where it comes from), most the user's own first (the condition they
    gave, their re-run's, the winner's). A MERGE condition is used only when it names its tables'
    aliases: Catalyst text (`id#873L = id#1829L`) has none, and `id = id AND target.date = ...`
    reads as a tautology, so then only the predicate to add is shown. A DELETE/UPDATE condition
    names columns alone and is kept as written.
    """
    from forensics.predicates import parse_predicate, rewrite_with_partition_literal

    for text, source in conditions:
        if not text or not text.strip():
            continue
        try:
            qualified = bool(parse_predicate(text, schema).qualifiers)
        except Exception:  # noqa: BLE001 - advice must not fail the explanation
            continue
        if qualified or not merge:
            rewritten = rewrite_with_partition_literal(text, column, values, schema)
            return (rewritten if qualified else _unqualified(rewritten)), source
    added = rewrite_with_partition_literal("TRUE", column, values, schema).removeprefix("TRUE AND ")
    if not merge:
        return f"<your condition> AND {_unqualified(added)}", "the condition is not in the log"
    return (f"<your ON condition> AND {added}",
            "the log records the MERGE condition without its aliases: write your target table's alias for `target`")


def _unqualified(sql: str) -> str:
    """`target.date = '…'` -> `date = '…'`: a DELETE/UPDATE condition names columns alone."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except sqlglot.errors.ParseError:
        return sql
    for c in tree.find_all(exp.Column):
        c.set("table", None)
    return tree.sql(dialect="spark")


def _values(files, col: str) -> list[str]:
    vals = sorted({str(f.partition_values.get(col)) for f in files if f.partition_values.get(col) is not None})
    return vals


def advise(
    sets: CommitSets,
    *,
    exception: str | None,
    winners: list[WinningCommit],
    winning_version: int | None,
    reordered_before: list[int],
    isolation_level: str | None,
    table_config: dict[str, str] | None = None,
    writer: str = "delta-spark",
    operation_parameters: dict[str, Any] | None = None,
) -> list[Advice]:
    out: list[Advice] = []
    op = (sets.operation or "").upper()
    pcols = list(sets.schema.partition_columns)
    cfg = table_config or {}
    r, w = sets.read, sets.write
    winner = next((x for x in winners if x.version == winning_version), None)
    params = operation_parameters or {}

    if exception == "ConcurrentAppendException":
        if op == "MERGE" and pcols and r.partition_predicates in (["TRUE"], []):
            col = pcols[0]
            mine = _values(w.adds + w.removes, col)
            theirs = _values(winner.adds, col) if winner else []
            cond = logged_condition(params)
            if mine and cond:
                example, names = pinned_condition([(cond, "its MERGE condition as logged")], col, mine, sets.schema)
                out.append(
                    Advice(
                        "Add a literal partition predicate to the MERGE condition",
                        f"The MERGE condition names no `{col}` literal, so Delta records a read of every partition "
                        f"and any concurrent write conflicts. Rewritten: {example} ({names})",
                        f"this MERGE wrote {col} in {mine}; the winner v{winning_version} added files in {col} in {theirs or '?'}",
                        example,
                    )
                )
        if op in ("DELETE", "UPDATE") and pcols and r.partition_predicates == ["TRUE"] and r.data_predicates:
            cols = _predicate_columns(r.data_predicates, sets)
            mine = _values(w.adds + w.removes, pcols[0])
            example = None
            if mine:
                example, _ = pinned_condition([(logged_condition(params), "its condition as logged")], pcols[0], mine,
                                              sets.schema, merge=False)
            out.append(
                Advice(
                    "Add a partition predicate to the condition",
                    f"The condition only filters data columns ({', '.join(cols) or 'see data predicates'}); Delta counts that as a "
                    f"read of the whole table. Add a literal condition on {', '.join(pcols)} for the partitions you change"
                    + (f": WHERE {example}" if example else "."),
                    f"data predicates: {'; '.join(r.data_predicates)}",
                    example,
                )
            )
        if not pcols and r.data_predicates:
            cols = _predicate_columns(r.data_predicates, sets)
            if cols:
                out.append(
                    Advice(
                        f"Partition (or cluster) the table by {cols[0]}",
                        "On an unpartitioned table every non-blind transaction conflicts with every concurrent add (delta-spark ≥3.1). "
                        f"Your predicates filter on {', '.join(cols)}.",
                        f"table is unpartitioned; data predicates: {'; '.join(r.data_predicates)}",
                    )
                )
        if op in ("WRITE", "STREAMING UPDATE") and not w.removes and not w.is_blind_append:
            out.append(
                Advice(
                    "Make the INSERT a blind append",
                    "This append read the table it writes to (isBlindAppend=false), so concurrent writes conflict with it. "
                    "Compute the rows without reading the target in the same transaction, or use MERGE with a partition literal.",
                    "commitInfo.isBlindAppend=false with only add actions",
                )
            )
        if winner is not None and winner.is_blind_append is None:
            out.append(
                Advice(
                    "Upgrade the concurrent writer (or have it record isBlindAppend)",
                    "The winner did not record isBlindAppend, so Delta treats its appends as data changes even under WriteSerializable.",
                    f"v{winner.version} commitInfo has no isBlindAppend (writer: {winner.commit.engine_info if winner.commit else 'unknown'})",
                )
            )
        if isolation_level == "Serializable" and winner is not None and winner.is_blind_append:
            out.append(
                Advice(
                    "Consider WriteSerializable (Databricks) if appends may be reordered",
                    "Under WriteSerializable a concurrent blind append is forgiven and the transactions are serialized in the "
                    "other order; OSS delta-spark only accepts Serializable.",
                    f"the winner v{winner.version} is a blind append; this transaction ran at Serializable",
                )
            )
    if exception in ("ConcurrentDeleteReadException", "ConcurrentDeleteDeleteException"):
        involved = [x for x in winners if x.version == winning_version]
        wop = (involved[0].operation or "").upper() if involved else ""
        if "OPTIMIZE" in (op, wop):
            out.append(
                Advice(
                    "Keep OPTIMIZE away from partitions being written, or enable deletion vectors",
                    "OPTIMIZE rewrites files other writers read or delete; schedule it on cold partitions (WHERE on the partition "
                    "column) or when writers are idle. On Databricks, deletion vectors let OPTIMIZE and DML avoid conflicts.",
                    f"the conflict involves OPTIMIZE (this: {op or '?'}, winner v{winning_version}: {wop or '?'})",
                )
            )
        if cfg.get("delta.enableDeletionVectors") != "true" and writer == "databricks" and not pcols:
            out.append(
                Advice(
                    "Enable deletion vectors for row-level concurrency",
                    "Databricks resolves concurrent DML at row level on unpartitioned tables with deletion vectors (DBR 14.2+).",
                    "writer is Databricks; table is unpartitioned; delta.enableDeletionVectors is not true",
                )
            )
    if exception == "ConcurrentTransactionException":
        out.append(
            Advice(
                "Give each streaming query its own checkpoint",
                "Two writers committed with the same txn appId (the streaming query id): two instances of one query share a checkpoint.",
                f"shared appId(s): {', '.join(sorted(set(w.app_txns) & set(winner.app_txns))) if winner else '?'}",
            )
        )
    if exception == "MetadataChangedException":
        out.append(
            Advice(
                "Run ALTER TABLE / property changes when writers are idle",
                "Every metadata change fails every concurrent writer (delta-spark ≥4.1 tolerates a few property changes).",
                f"the winner v{winning_version} changed the table metadata",
            )
        )
    if exception == "ProtocolChangedException":
        out.append(
            Advice(
                "Create the table (and upgrade its protocol) before concurrent writers start",
                "A protocol change, or two writers creating the table at once, fails concurrent writers.",
                f"the winner v{winning_version} carries a protocol action",
            )
        )
    if reordered_before and isolation_level in ("WriteSerializable", "SnapshotIsolation"):
        out.append(
            Advice(
                "Check that the reorder is acceptable; else use Serializable",
                f"This {op or 'transaction'} is serialized before {', '.join('v' + str(v) for v in reordered_before)}: rows those "
                "commits added survive although the log lists them first. Set delta.isolationLevel = 'Serializable' to abort instead.",
                f"isolation level {isolation_level}; forgiven winners {', '.join(f'v{v}' for v in reordered_before)}",
            )
        )
    return out


def logged_condition(params: dict[str, Any]) -> str | None:
    """The condition a DML commit logged (a MERGE's ON condition, a DELETE/UPDATE's WHERE), as written."""
    p = params.get("mergePredicate") or params.get("predicate")
    if isinstance(p, list):
        p = p[0] if p else None
    return p if isinstance(p, str) and p.strip() else None


def _predicate_columns(preds: list[str], sets: CommitSets) -> list[str]:
    from forensics.predicates import parse_predicate

    c: Counter[str] = Counter()
    for p in preds:
        for col in parse_predicate(p, sets.schema).columns:
            if not sets.schema.is_partition_column(col):
                c[col] += 1
    return [k for k, _ in c.most_common()]


# ---- advice for a failed transaction (explain-error) ----------------------------------------

GENERAL = {
    "append": "Files were added where this transaction read: give its condition a literal partition predicate "
              "(so it reads only the partitions it writes), or make the write a blind append.",
    "delete-read": "A concurrent commit removed a file this transaction read: keep OPTIMIZE/DELETE/UPDATE away from "
                   "partitions other jobs are writing, or run them at different times.",
    "delete-delete": "Two transactions removed the same file: run the competing DML/OPTIMIZE at different times "
                     "or on different partitions.",
    "metadata": "The table's metadata changed under the writer: run ALTER TABLE / property changes in a maintenance window.",
    "protocol": "The protocol changed (or two writers created the table at once): create/upgrade the table before writers start.",
    "txn": "Two writers committed with the same streaming appId: give each streaming query its own checkpoint.",
    "write": "A concurrent transaction wrote data this one read: retry, or narrow what it reads.",
    "max-retries": "The writer gave up retrying: reduce contention (fewer concurrent writers on the same partitions) or raise the retry limit.",
}


def general_advice(report: ErrorReport) -> list[str]:
    g = GENERAL.get(report.rule or "")
    return [f"{g} (general advice for the {report.rule} rule; give the table for advice grounded in its log)"] if g else []


def general_fixes(rule: str | None) -> list[Advice]:
    """The rule's general advice as Advice: said to be general, resting on no fact of the log."""
    g = GENERAL.get(rule or "")
    return [Advice(g.rstrip("."), f"general advice for the {rule} rule; give the table for advice grounded in its log", "")] if g else []


def advice_for_error(log: DeltaLog, state: StateIndex, report: ErrorReport, winner: int | None, replay: "WhatIfResult | None",
                     parts: list[dict[str, Any]], conditions: list[tuple[str | None, str]] = ()) -> list[Advice]:
    """What to change for the transaction an error text reports; `conditions` are its own (as the user gave them)."""
    if winner is None:
        return general_fixes(report.rule)
    return fixes_for_loser(log, state, winner, rule=report.rule, parts=parts,
                           loser_operation=replay.request.operation if replay else None, family=report.family,
                           file=report.file, partition_text=report.partition_text, conditions=conditions) or general_fixes(report.rule)


def fixes_for_loser(log: DeltaLog, state: StateIndex, winner: int, *, rule: str | None, parts: list[dict[str, Any]],
                    loser_operation: str | None = None, family: str | None = None, file: str | None = None,
                    partition_text: str | None = None, conditions: list[tuple[str | None, str]] = ()) -> list[Advice]:
    """What the transaction that lost to `winner` by `rule` should change; `parts` are the partitions it
    wrote (its orphan files), `conditions` its own condition(s) when known, the user's first."""
    rec = log.record(winner)
    wop = (rec.operation or "").upper()
    md = state.metadata_at(winner)
    pcols = list(md.partition_columns) if md else []
    out: list[Advice] = []
    hyp_op = (loser_operation or "").upper()
    if rule == "append":
        if pcols:
            from forensics.log.schema import TableSchema

            col = pcols[0]
            wparts = sorted({str(p.get(col)) for p in rec.partitions_touched if p.get(col) is not None})
            mine = sorted({str(p.get(col)) for p in parts if p.get(col) is not None})
            schema = TableSchema.from_metadata(md)
            merge = hyp_op in ("", "MERGE")
            # the winner's MERGE condition shows how the user names things only to a MERGE loser: as an
            # example for a DELETE/UPDATE condition it reads `id = id AND ...`
            theirs = [(logged_condition(rec.operation_parameters), f"v{winner}'s MERGE condition, as an example")] if wop == "MERGE" and merge else []
            both = sorted(set(mine) & set(wparts))
            if both:
                out.append(Advice(
                    f"Run the two jobs one after the other on {col} {', '.join(both)}, or retry on conflict",
                    f"the failed transaction and v{winner} both wrote {col} {', '.join(both)}: no partition predicate separates them",
                    f"the aborted attempt's orphan files and v{winner}'s adds are in the same partition"))
            elif mine:
                example, names = pinned_condition([*conditions, *theirs], col, mine, schema, merge=merge)
                out.append(Advice(
                    "Add a literal partition predicate to the failed transaction's condition",
                    f"so it reads only {col} {', '.join(mine)}, not v{winner}'s {col} {', '.join(wparts)}: "
                    f"{inert(example, 400)} ({names})",
                    f"the orphan files of the aborted attempt are in {col}={', '.join(mine)}; v{winner} added files in "
                    f"{col} {', '.join(wparts)}", example))
            else:
                example, names = pinned_condition([*conditions, *theirs], col, ["<its partition>"], schema, merge=merge)
                out.append(Advice(
                    f"Give the failed transaction's condition a literal predicate on {col} for the partitions it writes",
                    f"v{winner} added files in {col} {', '.join(wparts)}, which a read limited to other partitions would "
                    f"not conflict with: {inert(example, 400)} ({names})",
                    f"the text's partition hint {partition_text or '?'}", example))
        if rec.is_blind_append and hyp_op in ("WRITE", "INSERT"):
            out.append(Advice("Make the failed INSERT a blind append", "do not read the target in the same transaction",
                              f"v{winner} was itself a blind append"))
        if rec.is_blind_append:
            out.append(Advice("On Databricks, use WriteSerializable",
                              f"it forgives concurrent blind appends such as v{winner}; OSS delta-spark only offers Serializable",
                              f"v{winner} has isBlindAppend=true"))
    if rule in ("delete-read", "delete-delete"):
        if "OPTIMIZE" in (wop, hyp_op):
            out.append(Advice(
                "Run OPTIMIZE at a different time from the DML on the same partitions",
                "or restrict it with WHERE to cold partitions; on Databricks, deletion vectors let DML and OPTIMIZE avoid this conflict",
                f"v{winner} is {wop or '?'}" + (", and the failed transaction replays as an OPTIMIZE" if hyp_op == "OPTIMIZE" else "")))
        else:
            out.append(Advice(
                f"Keep the concurrent {wop or 'DML'} and this job on different partitions or at different times", "",
                f"v{winner} removed {file or 'a file'} this transaction {'read' if rule == 'delete-read' else 'removed'}"))
    if rule == "txn":
        ids = ", ".join(sorted(rec.txn_app_ids)) or "?"
        out.append(Advice("Give each streaming query its own checkpoint location",
                          "two instances of one query share a checkpoint",
                          f"v{winner} committed txn appId {ids}, the same query id as the failed batch"))
    if rule == "metadata":
        out.append(Advice("Run ALTER TABLE / SET TBLPROPERTIES in a maintenance window when no writer is active", "",
                          f"v{winner} ({wop or '?'}) changed the metadata"))
    if rule == "protocol":
        out.append(Advice("Create the table and upgrade its protocol before concurrent writers start", "",
                          f"v{winner} carries a protocol action"))
    if family == "delta-rs" and rule in ("append", "delete-read"):
        # conflict-rules §9: a predicate-less delta-rs write reads every file of its snapshot
        out.append(Advice("delta-rs: pass a partition predicate, or accept SnapshotIsolation where the job tolerates it",
                          "a write with no predicate counts every file of its snapshot as read", ""))
    return out
