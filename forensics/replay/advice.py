"""What to change, grounded in the evidence of one conflict (or one reorder): the one place advice is made.

`advise` speaks of a commit in the log and its verdict; `advice_for_error` of a transaction that
failed (an error text, its winner and the replayed loser). Each piece of advice names the fact it
rests on (a predicate without a partition literal, a winner that was a blind append, a shared
appId, ...). No advice is given without such a fact; `general_advice` is labelled as general.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from forensics.errortext import ErrorReport
from forensics.log.delta_log import DeltaLog
from forensics.model import WinningCommit
from forensics.safe import inert
from forensics.sets.commit_sets import CommitSets, StateIndex

if TYPE_CHECKING:
    from forensics.replay.whatif import WhatIfRequest, WhatIfResult


@dataclass(frozen=True)
class Advice:
    """One thing to change. A concrete change (a predicate, an operation, an isolation level, a
    schedule, a layout) is replayed against the same winners before it is given: `replayed` says
    what that replay gave ("commits"; "aborts" only where aborting is the point) and `replayed_as`
    what was replayed. None: advice that is no concrete change (general advice, said so)."""

    title: str
    detail: str
    evidence: str
    example: str | None = None  # what to write, in the user's own SQL (aliases and column names as written)
    replayed: str | None = None  # commits | aborts | not replayable; None: no concrete change
    replayed_as: str | None = None  # the replayed transaction, in words
    request: Any = dataclasses.field(default=None, compare=False, repr=False)  # the WhatIfRequest replayed (not in JSON)

    def to_dict(self) -> dict[str, str | None]:
        return {"title": self.title, "detail": self.detail, "evidence": self.evidence, "example": self.example,
                "replayed": self.replayed, "replayedAs": self.replayed_as}


def _request_words(req: "WhatIfRequest", winners: list[int]) -> str:
    op = req.operation.upper()
    kw = "ON" if op == "MERGE" else "WHERE"
    against = (f"against v{winners[0]}" + (f"..v{winners[-1]}" if len(winners) > 1 else "") if winners
               else f"run after v{req.read_version}: no concurrent commit left")
    return (f"{op}{f' {kw} {req.predicate}' if req.predicate else ''}"
            + (f" at {req.isolation_level}" if req.isolation_level else "")
            + (f" (streaming query id {req.app_id})" if req.app_id else "")
            + f", reading v{req.read_version}, {against}" + (f"; {req.rules} rules" if req.rules else ""))


def replayed(log: DeltaLog, state: StateIndex, base: "WhatIfRequest | None", advice: Advice, *, want: str = "commit",
             **change: Any) -> Advice | None:
    """`advice` once `base` (the transaction as replayed) changed as it says (`change`: predicate,
    operation, isolation level, read version...) is replayed against the same winners; None (the
    advice is dropped) when there is nothing to replay or the replay does not give `want`."""
    from forensics.errors import ForensicsError
    from forensics.replay.whatif import whatif

    if base is None:
        return None
    req = dataclasses.replace(base, **change)
    if contradiction(req.predicate):
        return None
    try:
        res = whatif(log, req, state)
    except ForensicsError:
        return None
    if res.result.verdict != want:
        return None
    got = "commits" if want == "commit" else "aborts"
    return dataclasses.replace(checked(advice, got, _request_words(req, res.winners)), request=req)


def checked(advice: Advice, got: str, words: str) -> Advice:
    """The advice saying how it was checked, in its record and beside it on the terminal (its detail)."""
    note = f"replayed: {got} ({words})"
    return dataclasses.replace(advice, detail=f"{advice.detail.rstrip('.')}; {note}" if advice.detail else note,
                               replayed=got, replayed_as=words)


def contradiction(predicate: str | None) -> str | None:
    from forensics.predicates.advice import contradiction as why

    return why(predicate)


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


def _commit_request(log: DeltaLog, state: StateIndex, version: int, sets: CommitSets, params: dict[str, Any],
                    rules: str | None, reordered: bool) -> "WhatIfRequest | None":
    """Version `version` as a what-if transaction (its operation, logged condition, partitions, read
    version), kept only when its replay gives the verdict being advised on: an abort, or a reorder."""
    from forensics.errors import ForensicsError
    from forensics.replay.whatif import OPERATIONS, WhatIfRequest, whatif

    rec = log.record(version)
    op = (sets.operation or "").upper()
    if rec.read_version is None or op not in OPERATIONS:
        return None
    cond = logged_condition(params)
    parts = [{k: ("" if v is None else str(v)) for k, v in p.items()} for p in rec.partitions_touched if p]
    req = WhatIfRequest(read_version=rec.read_version, operation=op, predicate=cond if cond and "#" not in cond else None,
                        partitions=parts, rules=rules, until=version - 1, app_id=next(iter(sorted(rec.txn_app_ids)), None))
    try:
        r = whatif(log, req, state).result
    except ForensicsError:
        return None
    ok = (r.verdict == "commit" and bool(r.reordered_before)) if reordered else r.verdict == "abort"
    return req if ok else None


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
    log: DeltaLog | None = None,
    state: StateIndex | None = None,
    version: int | None = None,
    rules: str | None = None,
    layout: Callable[[str], str | None] | None = None,
) -> list[Advice]:
    """What version `version` should change. Each concrete change is replayed (whatif from the
    commit's own read version, operation and condition; `layout(col)` for a partitioning: the
    partition counterfactual's "commits" / "aborts") and given only when it commits; without the
    log to replay on, none is given."""
    out: list[Advice | None] = []
    op = (sets.operation or "").upper()
    pcols = list(sets.schema.partition_columns)
    r, w = sets.read, sets.write
    winner = next((x for x in winners if x.version == winning_version), None)
    params = operation_parameters or {}
    base = None
    if log is not None and version is not None and (exception or reordered_before):
        base = _commit_request(log, state or StateIndex(log), version, sets, params, rules, not exception)
    st = state if state is not None else (StateIndex(log) if log is not None else None)

    def check(a: Advice, **change: Any) -> Advice | None:
        return replayed(log, st, base, a, **change) if log is not None and st is not None else None

    if exception == "ConcurrentAppendException":
        if op == "MERGE" and pcols and r.partition_predicates in (["TRUE"], []):
            col = pcols[0]
            mine = _values(w.adds + w.removes, col)
            theirs = _values(winner.adds, col) if winner else []
            cond = logged_condition(params)
            if mine and cond:
                example, names = pinned_condition([(cond, "its MERGE condition as logged")], col, mine, sets.schema)
                out.append(check(
                    Advice(
                        "Add a literal partition predicate to the MERGE condition",
                        f"The MERGE condition names no `{col}` literal, so Delta records a read of every partition "
                        f"and any concurrent write conflicts. Rewritten: {example} ({names})",
                        f"this MERGE wrote {col} in {mine}; the winner v{winning_version} added files in {col} in {theirs or '?'}",
                        example,
                    ), predicate=rewrite_literal(col, mine, sets.schema, merge=True) if "<your " in example else example))
        if op in ("DELETE", "UPDATE") and pcols and r.partition_predicates == ["TRUE"] and r.data_predicates:
            cols = _predicate_columns(r.data_predicates, sets)
            mine = _values(w.adds + w.removes, pcols[0])
            if mine:
                example, _ = pinned_condition([(logged_condition(params), "its condition as logged")], pcols[0], mine,
                                              sets.schema, merge=False)
                out.append(check(
                    Advice(
                        "Add a partition predicate to the condition",
                        f"The condition only filters data columns ({', '.join(cols) or 'see data predicates'}); Delta counts that as a "
                        f"read of the whole table. Add a literal condition on {', '.join(pcols)} for the partitions you change: "
                        f"WHERE {example}",
                        f"data predicates: {'; '.join(r.data_predicates)}",
                        example,
                    ), predicate=rewrite_literal(pcols[0], mine, sets.schema, merge=False) if "<your " in example else example))
        if not pcols and r.data_predicates and layout is not None:
            cols = _predicate_columns(r.data_predicates, sets)
            got = layout(cols[0]) if cols else None
            if got == "commits":
                out.append(checked(
                    Advice(
                        f"Partition (or cluster) the table by {cols[0]}",
                        "On an unpartitioned table every non-blind transaction conflicts with every concurrent add (delta-spark ≥3.1). "
                        f"Your predicates filter on {', '.join(cols)}.",
                        f"table is unpartitioned; data predicates: {'; '.join(r.data_predicates)}",
                    ), "commits", f"v{version} with the table partitioned by {cols[0]} (simulated from file statistics)"))
        if op in ("WRITE", "STREAMING UPDATE") and not w.removes and not w.is_blind_append:
            out.append(check(
                Advice(
                    "Make the INSERT a blind append",
                    "This append read the table it writes to (isBlindAppend=false), so concurrent writes conflict with it. "
                    "Compute the rows without reading the target in the same transaction, or use MERGE with a partition literal.",
                    "commitInfo.isBlindAppend=false with only add actions",
                ), operation="INSERT", predicate=None))
        if isolation_level == "Serializable" and winner is not None and winner.is_blind_append:
            out.append(check(
                Advice(
                    "Consider WriteSerializable (Databricks) if appends may be reordered",
                    "Under WriteSerializable a concurrent blind append is forgiven and the transactions are serialized in the "
                    "other order; OSS delta-spark only accepts Serializable.",
                    f"the winner v{winner.version} is a blind append; this transaction ran at Serializable",
                ), rules="databricks", isolation_level="WriteSerializable"))
    if exception in ("ConcurrentDeleteReadException", "ConcurrentDeleteDeleteException") and winning_version is not None:
        involved = [x for x in winners if x.version == winning_version]
        wop = (involved[0].operation or "").upper() if involved else ""
        if "OPTIMIZE" in (op, wop):
            out.append(check(
                Advice(
                    "Keep OPTIMIZE away from partitions being written, or enable deletion vectors",
                    "OPTIMIZE rewrites files other writers read or delete; schedule it on cold partitions (WHERE on the partition "
                    "column) or when writers are idle. On Databricks, deletion vectors let OPTIMIZE and DML avoid conflicts.",
                    f"the conflict involves OPTIMIZE (this: {op or '?'}, winner v{winning_version}: {wop or '?'})",
                ), read_version=winning_version))
    if exception == "ConcurrentTransactionException":
        out.append(check(
            Advice(
                "Give each streaming query its own checkpoint",
                "Two writers committed with the same txn appId (the streaming query id): two instances of one query share a checkpoint.",
                f"shared appId(s): {', '.join(sorted(set(w.app_txns) & set(winner.app_txns))) if winner else '?'}",
            ), app_id="its-own-query-id"))
    if exception in ("MetadataChangedException", "ProtocolChangedException") and winning_version is not None:
        meta = exception == "MetadataChangedException"
        out.append(check(
            Advice(
                "Run ALTER TABLE / property changes when writers are idle" if meta else
                "Create the table (and upgrade its protocol) before concurrent writers start",
                "Every metadata change fails every concurrent writer (delta-spark ≥4.1 tolerates a few property changes)." if meta else
                "A protocol change, or two writers creating the table at once, fails concurrent writers.",
                f"the winner v{winning_version} " + ("changed the table metadata" if meta else "carries a protocol action"),
            ), read_version=winning_version))
    if reordered_before and isolation_level in ("WriteSerializable", "SnapshotIsolation"):
        # the change advised here is to abort instead of being reordered: its replay must abort
        out.append(check(
            Advice(
                "Check that the reorder is acceptable; else use Serializable",
                f"This {op or 'transaction'} is serialized before {', '.join('v' + str(v) for v in reordered_before)}: rows those "
                "commits added survive although the log lists them first. Set delta.isolationLevel = 'Serializable' to abort instead.",
                f"isolation level {isolation_level}; forgiven winners {', '.join(f'v{v}' for v in reordered_before)}",
            ), want="abort", isolation_level="Serializable"))
    return [a for a in out if a is not None]


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
    """What to change for the transaction an error text reports; `conditions` are its own (as the user gave them).
    Each change is replayed from `replay`'s request (the loser as rebuilt) against the same winners."""
    if winner is None:
        return general_fixes(report.rule)
    base = replay.request if replay is not None and replay.result.verdict == "abort" else None
    return fixes_for_loser(log, state, winner, rule=report.rule, parts=parts,
                           loser_operation=replay.request.operation if replay else None, family=report.family,
                           file=report.file, partition_text=report.partition_text, conditions=conditions,
                           base=base) or general_fixes(report.rule)


def _loser_request(log: DeltaLog, state: StateIndex, winner: int, operation: str | None, rule: str | None,
                   parts: list[dict[str, Any]], conditions: list[tuple[str | None, str]], read_version: int | None,
                   family: str | None) -> "WhatIfRequest | None":
    """The loser as a what-if transaction from its own facts (operation, condition, partitions, read
    version), kept only when its replay aborts against `winner`: advice replayed from anything else proves nothing."""
    from forensics.errors import ForensicsError
    from forensics.replay.whatif import WhatIfRequest, whatif

    R = read_version if read_version is not None else winner - 1
    if R < 0:
        return None
    op = (operation or ("MERGE" if rule in ("append", "delete-read", "delete-delete") else "INSERT")).upper()
    if rule == "txn":
        op = "STREAMING UPDATE"
    cond = next((c for c, _ in conditions if c and c.strip() and "#" not in c), None)  # `id#873L`: Catalyst text, no condition
    app = sorted(log.record(winner).txn_app_ids)[0] if rule == "txn" and log.record(winner).txn_app_ids else None
    req = WhatIfRequest(read_version=R, operation=op, predicate=cond,
                        partitions=[{k: ("" if v is None else str(v)) for k, v in p.items()} for p in parts if p],
                        rules="delta-rs" if family == "delta-rs" else None, until=winner, app_id=app)
    try:
        r = whatif(log, req, state).result
    except ForensicsError:
        return None
    return req if r.verdict == "abort" and r.winning_version == winner else None


def _schedule(log: DeltaLog, state: StateIndex, base: "WhatIfRequest | None", winner: int, advice: Advice) -> Advice | None:
    """A different schedule: the same transaction reading the winner's version (run after it)."""
    return replayed(log, state, base, advice, read_version=winner)


def fixes_for_loser(log: DeltaLog, state: StateIndex, winner: int, *, rule: str | None, parts: list[dict[str, Any]],
                    loser_operation: str | None = None, family: str | None = None, file: str | None = None,
                    partition_text: str | None = None, conditions: list[tuple[str | None, str]] = (),
                    base: "WhatIfRequest | None" = None, read_version: int | None = None) -> list[Advice]:
    """What the transaction that lost to `winner` by `rule` should change; `parts` are the partitions it
    wrote (its orphan files), `conditions` its own condition(s) when known, the user's first. `base` is
    the loser as replayed (else rebuilt from these facts, reading `read_version` or winner - 1); each
    change is replayed from it against the same winners and given only when that replay commits."""
    from forensics.predicates.advice import pinned_values

    rec = log.record(winner)
    wop = (rec.operation or "").upper()
    md = state.metadata_at(winner)
    pcols = list(md.partition_columns) if md else []
    hyp_op = (loser_operation or "").upper()
    conditions = [c for c in conditions if c[0] and c[0].strip()]
    if base is None:
        base = _loser_request(log, state, winner, loser_operation, rule, parts, conditions, read_version, family)
    out: list[Advice | None] = []
    if rule == "append":
        if pcols:
            from forensics.log.schema import TableSchema

            col = pcols[0]
            wparts = sorted({str(p.get(col)) for p in rec.partitions_touched if p.get(col) is not None})
            # The loser's own partitions: those its own condition names, else its orphan files'. Files of
            # another attempt in another partition are not this transaction's (its condition says so).
            stated = pinned_values(conditions[0][0], col) if conditions else None
            mine = sorted(stated) if stated else sorted({str(p.get(col)) for p in parts if p.get(col) is not None})
            schema = TableSchema.from_metadata(md)
            merge = hyp_op in ("", "MERGE")
            both = sorted(set(mine) & set(wparts))
            if both:
                out.append(_schedule(log, state, base, winner, Advice(
                    f"Run the two jobs one after the other on {col} {', '.join(both)}, or retry on conflict",
                    f"the failed transaction and v{winner} both wrote {col} {', '.join(both)}: no partition predicate separates them",
                    f"{'its condition names' if stated else 'the aborted attempt’s orphan files are in'} {col} "
                    f"{', '.join(mine)}; v{winner} added files in {col} {', '.join(wparts)}")))
            elif mine and not stated:
                example, names = pinned_condition(conditions, col, mine, schema, merge=merge)
                added = rewrite_literal(col, mine, schema, merge=merge)
                # what is replayed: the example itself, or (a placeholder for the user's own condition in
                # it) the literal alone, which reads at least as much as the user's condition with it
                out.append(replayed(log, state, base, Advice(
                    "Add a literal partition predicate to the failed transaction's condition",
                    f"so it reads only {col} {', '.join(mine)}, not v{winner}'s {col} {', '.join(wparts)}: "
                    f"{inert(example, 400)} ({names})",
                    f"the orphan files of the aborted attempt are in {col}={', '.join(mine)}; v{winner} added files in "
                    f"{col} {', '.join(wparts)}", example), predicate=added if "<your " in example else example))
        if rec.is_blind_append and hyp_op in ("WRITE", "INSERT"):
            out.append(replayed(log, state, base, Advice(
                "Make the failed INSERT a blind append", "do not read the target in the same transaction",
                f"v{winner} was itself a blind append"), operation="INSERT", predicate=None))
        if rec.is_blind_append:
            out.append(replayed(log, state, base, Advice(
                "On Databricks, use WriteSerializable",
                f"it forgives concurrent blind appends such as v{winner}; OSS delta-spark only offers Serializable",
                f"v{winner} has isBlindAppend=true"), rules="databricks", isolation_level="WriteSerializable"))
    if rule in ("delete-read", "delete-delete"):
        if "OPTIMIZE" in (wop, hyp_op):
            out.append(_schedule(log, state, base, winner, Advice(
                "Run OPTIMIZE at a different time from the DML on the same partitions",
                "or restrict it with WHERE to cold partitions; on Databricks, deletion vectors let DML and OPTIMIZE avoid this conflict",
                f"v{winner} is {wop or '?'}" + (", and the failed transaction replays as an OPTIMIZE" if hyp_op == "OPTIMIZE" else ""))))
        else:
            out.append(_schedule(log, state, base, winner, Advice(
                f"Keep the concurrent {wop or 'DML'} and this job on different partitions or at different times", "",
                f"v{winner} removed {file or 'a file'} this transaction {'read' if rule == 'delete-read' else 'removed'}")))
    if rule == "txn":
        ids = ", ".join(sorted(rec.txn_app_ids)) or "?"
        out.append(replayed(log, state, base, Advice(
            "Give each streaming query its own checkpoint location", "two instances of one query share a checkpoint",
            f"v{winner} committed txn appId {ids}, the same query id as the failed batch"), app_id="its-own-query-id"))
    if rule == "metadata":
        out.append(_schedule(log, state, base, winner, Advice(
            "Run ALTER TABLE / SET TBLPROPERTIES in a maintenance window when no writer is active", "",
            f"v{winner} ({wop or '?'}) changed the metadata")))
    if rule == "protocol":
        out.append(_schedule(log, state, base, winner, Advice(
            "Create the table and upgrade its protocol before concurrent writers start", "",
            f"v{winner} carries a protocol action")))
    if family == "delta-rs" and rule in ("append", "delete-read"):
        # conflict-rules §9: delta-rs checks no concurrent adds at SnapshotIsolation
        out.append(replayed(log, state, base, Advice(
            "delta-rs: accept SnapshotIsolation where the job tolerates it",
            "it does not check what concurrent commits added", f"the failed transaction ran at the table's level against v{winner}"),
            isolation_level="SnapshotIsolation"))
    return [a for a in out if a is not None]


def rewrite_literal(column: str, values: list[str], schema: Any, *, merge: bool) -> str:
    """The literal predicate on the partition column alone (`target.date = 'x'` for a MERGE, `date = 'x'` else)."""
    from forensics.predicates import rewrite_with_partition_literal

    added = rewrite_with_partition_literal("TRUE", column, values, schema).removeprefix("TRUE AND ")
    return added if merge else _unqualified(added)
