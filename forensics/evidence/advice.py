"""Advice for one explained error text, each item naming the evidence it rests on."""

from __future__ import annotations

from typing import Any

from forensics.errortext import ErrorReport
from forensics.log.delta_log import DeltaLog
from forensics.safe import inert
from forensics.sets.commit_sets import StateIndex
from forensics.replay.whatif import WhatIfResult

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


def _merge_condition(params: dict[str, Any]) -> str | None:
    p = params.get("mergePredicate") or params.get("predicate")
    if isinstance(p, list):
        p = p[0] if p else None
    return p if isinstance(p, str) and p.strip() else None


def advice_for(log: DeltaLog, state: StateIndex, report: ErrorReport, winner: int | None, replay: WhatIfResult | None,
               parts: list[dict[str, Any]]) -> list[str]:
    if winner is None:
        return general_advice(report)
    rec = log.record(winner)
    wop = (rec.operation or "").upper()
    md = state.metadata_at(winner)
    pcols = list(md.partition_columns) if md else []
    out: list[str] = []
    rule = report.rule
    hyp_op = (replay.request.operation.upper() if replay else "")
    if rule == "append":
        wparts = sorted({str(p.get(pcols[0])) for p in rec.partitions_touched if pcols and p.get(pcols[0]) is not None}) if pcols else []
        if pcols:
            col = pcols[0]
            mine = sorted({str(p.get(col)) for p in parts if p.get(col) is not None})
            cond = _merge_condition(rec.operation_parameters) if wop == "MERGE" else None
            if mine and set(mine) & set(wparts):
                out.append(
                    f"The loser and v{winner} both wrote {col} in {sorted(set(mine) & set(wparts))}: no partition predicate separates them; "
                    "run these jobs one after the other on that partition, or retry on conflict (evidence: the aborted attempt's orphan files "
                    f"and v{winner}'s adds are in the same partition)"
                )
            elif mine:
                from forensics.predicates import rewrite_with_partition_literal
                from forensics.log.schema import TableSchema

                base = cond or "t.id = s.id"
                rewritten = rewrite_with_partition_literal(base, col, mine, TableSchema.from_metadata(md))
                out.append(
                    f"Add a literal partition predicate to the loser's condition so it reads only {col} in {mine}, not the "
                    f"winner's {col} in {wparts}: e.g. {inert(rewritten, 400)} "
                    f"(evidence: the orphan files of the aborted attempt are in {col}={', '.join(mine)}; v{winner} added files in {wparts}"
                    + ("; the condition shown is the winner's MERGE condition, as an example" if cond else "; `t.id = s.id` stands for your join condition")
                    + ")"
                )
            else:
                out.append(
                    f"Give the loser's MERGE/UPDATE/DELETE condition a literal predicate on {col} for the partitions it writes "
                    f"(e.g. `... AND t.{col} = '<its partition>'`): v{winner} added files in {col} in {wparts}, which a read limited "
                    f"to other partitions would not conflict with (evidence: the text's partition hint {report.partition_text or '?'})"
                )
        if rec.is_blind_append and hyp_op in ("WRITE", "INSERT"):
            out.append(f"Make the loser's INSERT a blind append (do not read the target in the same transaction): v{winner} was itself a blind append")
        if rec.is_blind_append:
            out.append(f"On Databricks, WriteSerializable forgives concurrent blind appends such as v{winner} (isBlindAppend=true); "
                       "OSS delta-spark only offers Serializable")
    if rule in ("delete-read", "delete-delete"):
        if "OPTIMIZE" in (wop, hyp_op):
            out.append(f"Run OPTIMIZE at a different time from the DML on the same partitions (or restrict it with WHERE to cold partitions); "
                       f"on Databricks, deletion vectors let DML and OPTIMIZE avoid this conflict (evidence: v{winner} is {wop or '?'}"
                       + (", and the loser replays as an OPTIMIZE" if hyp_op == "OPTIMIZE" else "") + ")")
        else:
            out.append(f"Keep concurrent {wop or 'DML'} and this job on different partitions or at different times "
                       f"(evidence: v{winner} removed {report.file or 'a file'} this transaction {'read' if rule == 'delete-read' else 'removed'})")
    if rule == "txn":
        ids = ", ".join(sorted(rec.txn_app_ids)) or "?"
        out.append(f"Give each streaming query its own checkpoint location: v{winner} committed txn appId {ids}, the same query id as the loser "
                   "(two instances of one query share a checkpoint)")
    if rule == "metadata":
        out.append(f"Run ALTER TABLE / SET TBLPROPERTIES in a maintenance window when no writer is active: v{winner} ({wop or '?'}) changed the metadata")
    if rule == "protocol":
        out.append(f"Create the table and upgrade its protocol before concurrent writers start: v{winner} carries a protocol action")
    if report.family == "delta-rs" and rule in ("append", "delete-read"):
        out.append("delta-rs: a write with no predicate counts every file of its snapshot as read (spec §9); pass a partition predicate, "
                   "or accept SnapshotIsolation where the job tolerates it")
    return out or general_advice(report)
