"""The JSON Schemas of every `--json` document, from one set of definitions.

`python -m forensics.schemas.build` writes `forensics/schemas/<command>.schema.json` (draft
2020-12); tests/test_json_schema.py checks the shipped files equal what this module builds and
validates real output of every command against them. Objects we own are closed
(`additionalProperties: false`) and list every key they always carry in `required`; maps of data
from the log (partition values, operationParameters, configuration) stay open. A key renamed in
2.0 keeps its old name for one minor release: `renamed=` adds that name as a deprecated property
(`"deprecated": true`, `x-aliasOf`: the new key), which `forensics.schemas.json_document` fills in.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path
from typing import Any

from forensics.schemas import ALIAS_OF, SCHEMA_COMMANDS, SCHEMA_NAMES, SCHEMA_VERSION, schema_file
from forensics.times import iso_key

DRAFT = "https://json-schema.org/draft/2020-12/schema"
HERE = Path(__file__).resolve().parent

S = dict[str, Any]


def t(*types: str, **kw: Any) -> S:
    return {"type": types[0] if len(types) == 1 else list(types), **kw}


STR, INT, BOOL, NUM = t("string"), t("integer"), t("boolean"), t("number")
STR_N, INT_N, BOOL_N = t("string", "null"), t("integer", "null"), t("boolean", "null")
ISO = t("string", "null", format="date-time", pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$",
        description="the epoch-ms field before it, as ISO 8601 in UTC (null when that field is null)")


def arr(items: S, **kw: Any) -> S:
    return {"type": "array", "items": items, **kw}


def ref(name: str) -> S:
    return {"$ref": f"#/$defs/{name}"}


def null(s: S) -> S:
    return {"anyOf": [s, {"type": "null"}]}


def enum(*values: str) -> S:
    return {"type": "string", "enum": list(values)}


def mapping(values: S | None = None, description: str | None = None) -> S:
    """A map of data (keys are the log's or the user's): open."""
    out: S = {"type": "object"}
    if values is not None:
        out["additionalProperties"] = values
    if description:
        out["description"] = description
    return out


def epoch(key: str, nullable: bool = True) -> S:
    """An epoch-ms field and its ISO 8601 twin (forensics.times.with_iso)."""
    return {key: INT_N if nullable else INT, iso_key(key): ISO}


def snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def obj(props: S, *, optional: tuple[str, ...] = (), renamed: tuple[str, ...] | dict[str, str] = (),
        description: str | None = None) -> S:
    """A closed object of ours; `renamed` lists keys renamed in 2.0 (old name: snake_case, or given)."""
    olds = renamed if isinstance(renamed, dict) else {new: snake(new) for new in renamed}
    properties: S = {}
    for k, v in props.items():
        properties[k] = v
        if k in olds:
            properties[olds[k]] = {**copy.deepcopy(v), "deprecated": True, ALIAS_OF: k,
                                   "description": f"deprecated alias of {k} (pre-2.0 name), removed in the next minor release"}
    missing = set(olds) - set(props) | set(optional) - set(props)
    assert not missing, missing
    out: S = {"type": "object"}
    if description:
        out["description"] = description
    out.update({"properties": properties, "required": [k for k in props if k not in optional], "additionalProperties": False})
    return out


PARTITION = mapping(STR_N, "partition values, as the log writes them (column -> value; null for a null value)")
COUNTS = obj({"clean": INT, "reordered": INT, "anomaly": INT, "skipped": INT}, description="windows per verdict")
VERDICT: S = {
    "version": INT, "readVersion": INT_N, "operation": STR_N, "window": arr(INT, description="the winning commits R+1..V-1"),
    "verdict": enum("clean", "reordered", "anomaly", "skipped"), "exception": STR_N, "winningVersion": INT_N, "rule": STR_N,
    "partition": null(PARTITION), "file": STR_N, "reorderedBefore": arr(INT), "profile": STR, "isolationLevel": STR_N,
    "certainty": STR, "why": STR, "likelyReason": STR_N,
}
VERDICT_RENAMED = ("winningVersion", "reorderedBefore", "likelyReason")

DEFS: dict[str, S] = {
    "Finding": obj({"code": STR, "severity": enum("info", "warning", "error"), "message": STR, "file": STR_N, "version": INT_N},
                   description="something noticed while reading (README: Findings); also printed to stderr"),
    "Advice": obj({"title": STR, "detail": STR, "evidence": STR, "example": STR_N,
                   "replayed": null(enum("commits", "aborts", "not replayable")), "replayedAs": STR_N},
                  description="what to change, in words, and the fact of the log or the evidence it rests on; "
                              "`example`: the change written in the user's own SQL (aliases and column names as written), when known; "
                              "`replayed`: what the replay of the change against the same winners gave (null: no concrete change, "
                              "general advice), `replayedAs` what was replayed"),
    "Check": obj({"check": STR, "status": enum("passed", "failed", "skipped"), "reason": STR, "exception": STR_N, "file": STR_N,
                  "partition": null(PARTITION), "winnerVersion": INT_N, "reordered": BOOL, "errorClass": STR_N, "inferred": BOOL},
                 renamed=("winnerVersion", "errorClass"),
                 description="one conflict check of the rule profile against one winning commit"),
    "CommitVerdict": obj(VERDICT, renamed=VERDICT_RENAMED,
                         description="the replay's verdict on one commit whose readVersion is older than the version before it"),
    "CheckedVerdict": obj({**VERDICT, "checks": arr(ref("Check")), "message": STR_N}, optional=("checks", "message"),
                          renamed=VERDICT_RENAMED, description="the replay's verdict with each check and the engine's message "
                                                               "(when the commit had a window to check)"),
    "WhatIf": obj({
        "verdict": enum("commit", "abort"), "exception": STR_N, "winningVersion": INT_N, "rule": STR, "partition": null(PARTITION),
        "file": STR_N, "message": STR, "reorderedBefore": arr(INT), "profile": STR, "profileWhy": STR, "isolationLevel": STR,
        "certainty": STR, "why": STR, "readVersion": INT, "winningCommitsChecked": arr(INT), "read": STR, "write": STR,
        "notes": arr(STR), "checks": arr(ref("Check")),
    }, renamed=("winningVersion", "reorderedBefore", "profileWhy", "isolationLevel", "readVersion", "winningCommitsChecked"),
        description="a (hypothetical) transaction replayed against the commits after its read version"),
    "ReadSet": obj({
        "partitionPredicate": STR_N, "dataPredicates": arr(STR), "wholeTable": BOOL, "files": arr(STR),
        "filesBound": enum("exact", "superset", "subset", "unknown"), "predicateBound": enum("exact", "superset", "subset", "unknown"),
        "appIds": arr(STR), "why": STR_N,
    }, renamed=("partitionPredicate", "dataPredicates", "wholeTable", "filesBound", "predicateBound", "appIds"),
        description="what the commit read, as recorded for its conflict check, with how sure"),
    "WriteSet": obj({
        "adds": arr(STR), "removes": arr(STR), "cdc": arr(STR), "metadataChanged": BOOL, "protocolChanged": BOOL,
        "appIds": arr(STR), "appTxns": mapping(INT, "txn appId -> version"), "domains": arr(STR), "isBlindAppend": BOOL,
        "isBlindAppendRecorded": BOOL_N,
    }, renamed=("metadataChanged", "protocolChanged", "appIds", "appTxns", "isBlindAppend", "isBlindAppendRecorded"),
        description="what the commit wrote"),
    "CommitSets": obj({"version": INT, "operation": STR_N, "readVersion": INT_N, "writer": STR, "read": ref("ReadSet"),
                       "write": ref("WriteSet")}, description="read and write set of one commit"),
    "CommitHeader": obj({**epoch("timestamp"), "engine": STR_N, "who": STR_N, "isolationLevel": STR_N, "isBlindAppend": BOOL_N,
                         "txnId": STR_N, "certainty": STR}, description="who committed the explained version, when, how sure"),
    "WindowCommit": obj({"version": INT, "operation": STR_N, **epoch("timestamp"), "adds": INT, "removes": INT,
                         "isBlindAppend": BOOL_N, "metadata": BOOL, "protocol": BOOL, "txnAppIds": mapping(INT, "txn appId -> version"), "partitions": STR,
                         "txnId": STR_N}, description="a winning commit in the explained version's window"),
    "DefeatedAttempt": obj({"source": STR, "exception": STR_N, "partition": null(PARTITION), "file": STR_N, "loserOf": INT,
                            "why": STR_N, "advice": arr(ref("Advice"))}, optional=("advice",), renamed=("loserOf",),
                           description="a transaction this version beat that never reached the log"),
    "WinnerHint": obj({
        "version": INT_N, "txnId": STR_N, **epoch("timestamp"), "operation": STR_N, "readVersion": INT_N, "isolationLevel": STR_N,
        "isBlindAppend": BOOL_N, "engineInfo": STR_N, "operationParameters": null(mapping()),
        "commitInfo": mapping(description="everything salvaged from the text's `Conflicting commit` JSON, as written"),
        "jsonComplete": BOOL, "jsonPresent": BOOL, "redactedKeys": arr(STR), "jsonProblems": arr(STR),
    }, description="what the error text says of the winning commit"),
    "WinnerMatch": obj({"how": STR, "candidates": arr(INT), "ambiguous": BOOL, "why": STR},
                       description="how the winning commit was found in the log"),
    "Execution": obj({"id": INT_N, "description": STR_N, **epoch("startMs"), **epoch("endMs")},
                     renamed={"startMs": "start_ms", "endMs": "end_ms"}, description="the failed SQL execution of a Spark event log"),
    "ErrorExplanation": obj({
        "recognized": BOOL, "exception": STR_N, "errorClass": STR_N, "family": STR, "rule": STR_N, "partition": null(PARTITION),
        "file": STR_N, "winner": null(ref("WinnerHint")), "winningVersion": INT_N, "winnerMatch": null(ref("WinnerMatch")),
        "replay": null(ref("WhatIf")), "hypothesis": STR_N, "reproduced": BOOL, "certainty": STR_N,
        "advice": arr(ref("Advice")), "why": STR, "story": arr(STR, description="the incident in a few plain lines"),
        "execution": ref("Execution"),
        "candidates": arr(ref("Candidate"), description="every answer the text and the table allow, most likely first"),
        "ambiguous": BOOL,
    }, optional=("story", "execution", "candidates", "ambiguous"), renamed=("errorClass", "winningVersion", "winnerMatch"),
        description="a concurrency error text read, its winning commit found and the loser replayed"),
    "Tried": obj({"hypothesis": STR, "verdict": STR, "readVersion": INT}, optional=("readVersion",), renamed=("readVersion",),
                 description="a hypothesis replayed for an aborted attempt"),
    "Candidate": obj({
        "readVersions": arr(INT, description="[lo, hi]: the read versions that give this answer"), "winningVersion": INT,
        "exception": STR, "rule": STR, "hypothesis": STR, "operation": STR, "rank": INT, "why": STR,
        "partition": null(PARTITION), "file": STR_N,
    }, description="one answer an aborted attempt's evidence allows (rank 1: the most likely)"),
    "ContentReading": obj({
        "kind": enum("compaction", "delete", "update", "merge", "append", "weak", "unknown"), "operations": arr(STR),
        "sources": arr(STR), "readVersions": null(arr(INT)), "writer": STR_N, "why": STR, "predicate": STR_N,
    }, description="what an aborted attempt's files hold, compared row by row with the committed files they can come from"),
    "Attempt": obj({
        "files": arr(STR), "partitions": arr(PARTITION), **epoch("firstSeen", False), **epoch("lastSeen", False),
        "groupedBy": STR, "concurrentVersions": arr(INT), "landedAfter": arr(INT), "likelyException": STR_N,
        "winningVersion": INT_N, "rule": STR_N, "hypothesis": STR_N, "readVersion": INT_N, "partition": null(PARTITION),
        "file": STR_N, "certainty": STR, "retryVersion": INT_N, "strayCommit": STR_N, "why": STR, "tried": arr(ref("Tried")),
        "candidates": arr(ref("Candidate"), description="every answer the evidence allows, most likely first"),
        "ambiguous": BOOL, "basis": arr(STR, description="each bound the answer stands on, in words"),
        "content": null(ref("ContentReading")),
    }, renamed=("firstSeen", "lastSeen", "groupedBy", "concurrentVersions", "landedAfter", "likelyException", "winningVersion",
                "readVersion", "retryVersion", "strayCommit"),
        description="an aborted write attempt: orphan files grouped, replayed to its most likely exception (inferred)"),
    "StrayCommit": obj({
        "file": STR, "kind": STR, "version": INT_N, **epoch("mtime", False), "operation": STR_N, "readVersion": INT_N,
        **epoch("timestamp"), "txnId": STR_N, "engineInfo": STR_N, "isBlindAppend": BOOL_N, "adds": arr(STR), "removes": arr(STR),
        "partitions": arr(PARTITION), "metadata": BOOL, "appIds": arr(STR), "readable": BOOL, "why": STR,
    }, description="a temporary or unratified commit file in _delta_log, parsed as an attempted commit"),
    "Change": obj({"version": INT, "kind": enum("conflict", "reorder", "window"), "winningVersion": INT_N, "before": STR, "after": STR,
                   "exception": STR_N, "rule": STR_N, "partition": null(PARTITION), "file": STR_N, "why": STR},
                  renamed=("winningVersion",), description="a conflict or reorder that appears or vanishes under the scenario"),
    "Counterfactual": obj({
        "scenario": STR, "summary": STR, "isolationLevel": STR_N, "partitionBy": STR_N, "appear": arr(ref("Change")),
        "vanish": arr(ref("Change")), "unknown": arr(ref("Change")), "baselineCounts": COUNTS,
        "counts": obj({"clean": INT, "reordered": INT, "wouldAbort": INT, "skipped": INT}, renamed=("wouldAbort",)),
        "certainty": STR, "notes": arr(STR),
        "files": obj({"placed": INT_N, "unknown": INT_N, "unknownSample": arr(STR)}, renamed=("unknownSample",)),
    }, optional=("files",), renamed=("isolationLevel", "partitionBy", "baselineCounts"),
        description="the replay under another isolation level or partitioning, diffed against the log as recorded"),
    "NoReadVersion": obj({
        "commits": INT, "totalCommits": INT, "firstVersion": INT, "lastVersion": INT,
        "writers": arr(obj({"engineInfo": STR, "commits": INT})), "why": STR,
    }, description="commits whose windows replay skipped because they record no readVersion, and who wrote them"),
    "AttemptRow": obj({
        "id": STR, "partitions": arr(STR), "files": INT, **epoch("firstSeen", False), **epoch("lastSeen", False),
        "operation": STR_N, "operationFrom": enum("content", "hypothesis", "unknown"), "readVersions": null(arr(INT)),
        "winningVersion": INT_N, "exception": STR_N, "rule": STR_N, "ambiguous": BOOL,
        "answer": t("string", description="the winner and exception, or `one of ...` every answer the evidence leaves"),
        "winners": arr(INT), "certainty": STR, "why": STR,
    }, description="an aborted attempt (orphan files, never in the log) as a row of the conflict timeline, with its "
                   "attribution (inferred; `evidence` has every candidate and its basis)"),
    "PartitionCounter": obj({"partition": STR, "commits": INT, "staleWindows": INT, "overlaps": INT, "conflicts": INT,
                             "reorders": INT, "abortedAttempts": INT, "score": INT}, renamed=("staleWindows", "abortedAttempts")),
    "FileCounter": obj({"file": STR, "conflicts": INT, "reorders": INT, "abortedAttempts": INT}, renamed=("abortedAttempts",)),
    "Protocol": obj({"minReaderVersion": INT, "minWriterVersion": INT, "readerFeatures": arr(STR), "writerFeatures": arr(STR)},
                    optional=("readerFeatures", "writerFeatures")),
    "Metadata": obj({"id": STR_N, "name": STR_N, "description": STR_N, "format": obj({"provider": STR_N}), "schemaString": STR_N,
                     "partitionColumns": arr(STR), "configuration": mapping(STR), **epoch("createdTime")}),
    "DeletionVector": obj({"storageType": STR, "pathOrInlineDv": STR, "offset": INT_N, "sizeInBytes": INT_N, "cardinality": INT_N}),
    "ConformanceCounts": obj({"total": INT, "explainAgree": INT, "whatifAgree": INT, "documented": INT, "findings": INT},
                             renamed=("explainAgree", "whatifAgree")),
}

STATUS = enum("agree", "disagree", "not expressible", "known difference", "known difference no longer reproduces")
DEFS["ConformanceExplain"] = obj({
    "answer": STR, "status": STATUS, "reason": STR_N, "verdict": STR, "exception": STR_N, "winningVersion": INT_N, "errorClass": STR_N,
    "rule": STR_N, "profile": STR, "isolationLevel": STR_N, "why": STR, "read": ref("ReadSet"),
}, optional=("verdict", "exception", "winningVersion", "errorClass", "rule", "profile", "isolationLevel", "why", "read"),
    renamed=("winningVersion", "errorClass", "isolationLevel"), description="explain's answer to a scenario")
DEFS["ConformanceWhatif"] = obj({
    "answer": STR, "status": STATUS, "reason": STR_N,
    "request": null(obj({"readVersion": INT, "until": INT, "operation": STR, "predicate": STR, "mode": STR, "isolationLevel": STR,
                         "appId": STR, "partitions": arr(PARTITION)},
                        optional=("predicate", "mode", "isolationLevel", "appId", "partitions"),
                        renamed=("readVersion", "isolationLevel", "appId"))),
    "verdict": STR, "exception": STR_N, "winningVersion": INT_N, "errorClass": STR_N, "rule": STR, "profile": STR, "isolationLevel": STR,
    "why": STR, "read": STR, "write": STR,
}, optional=("verdict", "exception", "winningVersion", "errorClass", "rule", "profile", "isolationLevel", "why", "read", "write"),
    renamed=("winningVersion", "errorClass", "isolationLevel"), description="whatif's answer to a scenario")
DEFS["ConformanceCase"] = obj({
    "id": STR, "title": STR, "engine": STR, "source": mapping(description="the engine test it comes from, as the scenario file says"),
    "expected": STR, "expectedErrorClass": STR_N, "expectedWinner": INT_N, "version": INT,
    "explain": ref("ConformanceExplain"), "whatif": ref("ConformanceWhatif"), "agree": BOOL,
}, renamed=("expectedErrorClass", "expectedWinner"))

# ---- the documents -------------------------------------------------------------------------

HISTORY_ROW = obj({
    "version": INT, **epoch("timestamp"), **epoch("inCommitTimestamp"), "operation": STR_N,
    "operationParameters": null(mapping(description="commitInfo.operationParameters, decoded (conflict-rules §8.1)")),
    "readVersion": INT_N, "isolationLevel": STR_N, "isBlindAppend": BOOL_N, "txnId": STR_N, "engineInfo": STR_N,
    "userName": STR_N, "userId": STR_N, "job": null(mapping()), "notebook": null(mapping()), "clusterId": STR_N,
    "operationMetrics": null(mapping(description="commitInfo.operationMetrics with numbers as numbers whatever the writer (delta-spark and "
                                                 "Databricks write strings, delta-rs numbers); a value that is not a number is kept as written")),
    "userMetadata": STR_N, "tags": null(mapping(description="commitInfo.tags, as written")),
    "clientVersion": STR_N,
    "otherCommitInfo": null(mapping(description="every other key of the commitInfo, as written (delta-rs' custom metadata, "
                                                "an engine's own fields); null when the commit has no commitInfo")),
    "numAddFiles": INT, "numRemoveFiles": INT, "numCdcFiles": INT, "partitionsTouched": arr(PARTITION),
    "hasMetadata": BOOL, "hasProtocol": BOOL, "hasTxn": BOOL, "hasDomainMetadata": BOOL,
    "txnAppIds": mapping(INT, "txn appId -> version"), "source": enum("commit", "compacted", "staged", "checkpoint"),
}, description="one retained version, from its commitInfo and actions; a field the commit does not carry is null")

STATS = obj({
    "table": STR, "fromVersion": INT_N, "toVersion": INT_N, "window": STR, "windowMs": INT,
    "totals": obj({"commits": INT, "staleWindows": INT, "conflicts": INT, "reorders": INT, "abortedAttempts": INT, "skipped": INT,
                   "reorderedCommits": INT, "forgivenPairs": INT,
                   "abortedConflicts": t("integer", description="aborted attempts the evidence attributes to a winner (not in `conflicts`)"),
                   "abortedKnownWinner": t("integer", description="of abortedConflicts, those with one answer"),
                   "abortedAmbiguous": t("integer", description="of abortedConflicts, those with several answers left")},
                  renamed=("staleWindows", "abortedAttempts")),
    "windowLengths": obj({"windows": INT, "longestMs": INT_N, "longestVersion": INT_N, "medianMs": INT_N},
                         description="read->commit time of the stale windows whose read time is known (ms)"),
    "partitions": arr(ref("PartitionCounter")), "files": arr(ref("FileCounter")),
    "buckets": arr(obj({**epoch("startMs"), **epoch("endMs"), "partitions": arr(ref("PartitionCounter")),
                        "files": arr(ref("FileCounter"))},
                       renamed={"startMs": "start_ms", "endMs": "end_ms", "startIso": "start_utc"})),
    "operationMatrix": obj({"categories": arr(STR), "cells": arr(obj({
        "current": STR, "winner": STR, "pairs": INT, "clean": INT, "reordered": INT, "conflict": INT, "aborted": INT, "unchecked": INT}))}),
    "concurrency": arr(obj({**epoch("startMs"), **epoch("endMs"), "transactions": INT, "maxConcurrent": INT, "commits": INT,
                            "staleWindows": INT},
                           renamed={"startMs": "start_ms", "endMs": "end_ms", "startIso": "start_utc",
                                    "maxConcurrent": "max_concurrent", "staleWindows": "stale_windows"})),
    "retries": obj({
        "metrics": arr(obj({"version": INT, "writer": STR_N, "key": STR, "value": {}})),
        "metricTotals": mapping(description="operationMetrics retry counters summed, by their names in the log "
                                            "(a counter every commit recorded as 0 is here with 0)"),
        "metricCommits": t("integer", description="commits in the range whose commitInfo carries operationMetrics"),
        "repeats": arr(obj({"version": INT, "previousVersion": INT, "writer": STR_N, "operation": STR_N, "partitions": arr(STR),
                            "gapMs": INT, "medianGapMs": INT, "why": STR}, renamed=("previousVersion", "gapMs", "medianGapMs"))),
        "attempts": arr(obj({"spanId": STR, "partitions": arr(STR), "winningVersion": INT_N, "exception": STR_N,
                             "operation": STR_N, "operationFrom": enum("content", "hypothesis", "stray-commit", "unknown"),
                             "ambiguous": BOOL, "answer": STR_N, "retryVersion": INT_N, "overlappingCommits": arr(INT)},
                            renamed=("spanId", "winningVersion", "retryVersion", "overlappingCommits"))),
    }, renamed=("metricTotals",)),
    "notes": arr(STR),
}, renamed=("fromVersion", "toVersion", "windowMs", "operationMatrix"),
    description="contention statistics (forensics/analysis/stats.py has the definitions)")

def _without_aliases(o: S) -> S:
    """A copy of a closed object of ours without its deprecated aliases: for a new document (2.2+)."""
    out = copy.deepcopy(o)
    out["properties"] = {k: v for k, v in out["properties"].items() if ALIAS_OF not in v}
    return out


DOCUMENTS: dict[str, tuple[str, S]] = {
    "history": ("One object per retained version (a JSON array; each element carries schema_version).",
                arr(HISTORY_ROW)),
    "find": ("Did a write land: the commit a txnId, app transaction, userMetadata or operation names, or why it is not known.", obj({
        "answer": {**enum("committed", "at-or-before", "absent", "unknown"), "description": "exit 0, 14, 15, 16"},
        "version": t("integer", "null", description="committed: the commit; at-or-before: the checkpoint's version"),
        "certainty": enum("exact", "inferred"), "why": STR,
        "query": obj({"txnId": STR_N, "appId": STR_N, "txnVersion": INT_N, "userMetadata": STR_N, "operation": STR_N},
                     description="what was asked; every non-null field must match"),
        "matches": arr(INT, description="every retained version that matches, oldest first"),
        "txnVersion": t("integer", "null", description="the app's txn version at `version` (with --app-id)"),
        "checkpoint": t("integer", "null", description="the checkpoint whose txn actions were read, when the commits were not enough"),
        **epoch("commitTime"),
        "searched": null(arr(INT, description="[first, last] retained version searched")),
        "retained": null(arr(INT, description="[first, last] version the log retains")),
        "commit": null(HISTORY_ROW),
    })),
    "snapshot": ("The table state at a version: active files, protocol, metadata, app transactions, domain metadata.", obj({
        "version": INT,
        "files": arr(obj({"path": STR, "partitionValues": PARTITION, "size": INT_N, "deletionVector": null(ref("DeletionVector")),
                          "addedInVersion": INT_N})),
        "protocol": null(ref("Protocol")), "metadata": null(ref("Metadata")),
        "appTransactions": mapping(INT, "txn appId -> version"), "domainMetadata": mapping(STR, "domain -> configuration"),
        "baseCheckpoint": INT_N, "findings": arr(ref("Finding")),
    })),
    "sets": ("What each commit read and wrote (a JSON array; each element carries schema_version).", arr(ref("CommitSets"))),
    "replay": ("Every concurrency window through the rules of the engine that wrote it.", obj({
        "table": STR, "rules": STR_N, "isolationLevel": STR_N, "totalCommits": INT, "windows": INT, "notConcurrent": INT,
        "counts": COUNTS, "reorderedCommits": INT, "forgivenPairs": INT, "commits": arr(ref("CommitVerdict")),
        "noReadVersion": null(ref("NoReadVersion")), "attempts": arr(ref("AttemptRow")), "attemptsWhy": STR_N,
        "counterfactual": ref("Counterfactual"),
    }, optional=("counterfactual",), renamed=("isolationLevel", "totalCommits", "notConcurrent"))),
    "explain": ("The story of one version.", obj({
        "version": INT, "operation": STR_N, "readVersion": INT_N, "commit": ref("CommitHeader"), "verdict": ref("CheckedVerdict"),
        "exception": STR_N, "winningVersion": INT_N, "partition": null(PARTITION), "file": STR_N, "sets": ref("CommitSets"),
        "window": arr(ref("WindowCommit")), "logOrder": arr(INT), "serialOrder": arr(INT), "message": STR_N,
        "defeatedAttempts": arr(ref("DefeatedAttempt")), "advice": arr(ref("Advice")),
        "story": arr(STR, description="the incident in a few plain lines"),
    }, optional=("story",), renamed=("winningVersion", "logOrder", "serialOrder", "defeatedAttempts"))),
    "whatif": ("A hypothetical transaction replayed against the commits after its read version.", ref("WhatIf")),
    "explain-error": ("One error text explained; with --event-log, {\"failures\": [one per failed execution]}.", {"anyOf": [
        ref("ErrorExplanation"),
        obj({"failures": arr(ref("ErrorExplanation"))}),
    ]}),
    "evidence": ("Traces of transactions that never reached the log.", obj({
        "orphanFiles": arr(STR), "unknownFiles": arr(STR), "unknownWhy": STR_N, "attempts": arr(ref("Attempt")),
        "strayCommitFiles": arr(ref("StrayCommit")), "fileTimesTrusted": BOOL, "fileTimesWhy": STR, "findings": arr(ref("Finding")),
    }, renamed=("orphanFiles", "unknownFiles", "unknownWhy", "strayCommitFiles", "fileTimesTrusted", "fileTimesWhy"))),
    "stats": ("Contention statistics; given several tables, {\"tables\": [one document per table, in the order given], "
              "\"combined\": {\"tables\", \"totals\" summed}}.", {"anyOf": [ref("Stats"), obj({
                  "tables": arr(ref("Stats"), description="one stats document per table, in the order given"),
                  "combined": obj({"tables": INT, "totals": _without_aliases(STATS["properties"]["totals"])},
                                  description="every table's totals summed")})]}),
    "export": ("What `export` wrote (the files' own format: forensics/export/tables.py).", obj({
        "format": enum("json", "csv", "parquet", "chrome-trace", "mermaid", "html"), "files": arr(STR), "spans": INT, "edges": INT,
        "timelineSchemaVersion": t("integer", description="the version of the exported timeline's own format (not of this document)"),
        "notes": arr(STR),
    })),
    "conformance": ("Engine test-suite scenarios answered by explain and by whatif.", obj({
        "total": INT, "explainAgree": INT, "whatifAgree": INT, "documented": INT, "findings": INT,
        "byEngine": mapping(ref("ConformanceCounts"), "engine -> counts"), "summary": STR, "cases": arr(ref("ConformanceCase")),
    }, renamed=("explainAgree", "whatifAgree", "byEngine"))),
    "synth": ("What `synth` wrote.", obj({
        "out": STR, "versions": INT, "staleCommits": INT, "staleShare": NUM, "checkpoints": INT, "seconds": NUM,
        "operations": mapping(INT, "operation -> commits"), "activeFiles": INT, "isolationLevel": STR,
    }, renamed=("staleCommits", "staleShare", "activeFiles", "isolationLevel"))),
}
DEFS["Stats"] = STATS
# The verdict lines of `replay --jsonl` and `watch --jsonl` (forensics/analysis/gate.py): new in 2.2, so no
# deprecated aliases.
_LINE = {"table": t("string", description="the table's URI"),
         "kind": enum("window", "attempt")}
DEFS["WindowLine"] = obj({**_LINE, "kind": enum("window"), **{k: v for k, v in VERDICT.items()}, **epoch("timestamp")},
                         description="a replayed window: the verdict `replay` gives the commit, and its commit time "
                                     "(inCommitTimestamp where the table writes it, else commitInfo's timestamp)")
DEFS["AttemptLine"] = obj({**_LINE, "kind": enum("attempt"), "verdict": enum("aborted"),
                           **copy.deepcopy(DEFS["AttemptRow"]["properties"])},
                          description="an aborted attempt the evidence found (orphan files, inferred), as `replay` lists it")
DOCUMENTS["replay-jsonl"] = ("One line of `replay --jsonl` or `watch --jsonl`: a replayed window (kind `window`) or an "
                             "aborted attempt (kind `attempt`, verdict `aborted`).",
                             {"anyOf": [ref("WindowLine"), ref("AttemptLine")]})
assert set(DOCUMENTS) == set(SCHEMA_NAMES), set(DOCUMENTS) ^ set(SCHEMA_NAMES)

STAMP = {"type": "string", "const": SCHEMA_VERSION,
         "description": "the JSON contract's version (CHANGELOG.md): major for a removed, renamed or retyped field, minor for added ones"}


def _stamped(s: S, defs: dict[str, S]) -> S:
    """The document's root (or each array element's) object with schema_version first and required."""
    if "$ref" in s:
        name = s["$ref"].rsplit("/", 1)[-1]
        return _stamped(copy.deepcopy(defs[name]), defs)
    if "anyOf" in s:
        return {**s, "anyOf": [_stamped(b, defs) for b in s["anyOf"]]}
    if s.get("type") == "array":
        return {**s, "items": _stamped(s["items"], defs)}
    return {**s, "properties": {"schema_version": STAMP, **s["properties"]}, "required": ["schema_version", *s["required"]]}


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        out = {node["$ref"].rsplit("/", 1)[-1]} if isinstance(node.get("$ref"), str) else set()
        for v in node.values():
            out |= _refs(v)
        return out
    if isinstance(node, list):
        return set().union(*map(_refs, node)) if node else set()
    return set()


def build(command: str) -> S:
    """The JSON Schema of `command --json`."""
    description, root = DOCUMENTS[command]
    body = _stamped(copy.deepcopy(root), DEFS)
    used: set[str] = set()
    todo = _refs(body)
    while todo:
        name = todo.pop()
        if name not in used:
            used.add(name)
            todo |= _refs(DEFS[name])
    out: S = {"$schema": DRAFT, "$id": f"urn:delta-forensics:json:{command}:{SCHEMA_VERSION}",
              "title": (f"delta-forensics {command} --json" if command in SCHEMA_COMMANDS else
                        "each line of delta-forensics replay --jsonl and watch --jsonl") + f" (schema_version {SCHEMA_VERSION})",
              "description": description}
    out.update({k: v for k, v in body.items() if k != "description"})
    if used:
        out["$defs"] = {k: DEFS[k] for k in sorted(used)}
    return out


def render(command: str) -> str:
    """The schema file's text (what ships, byte for byte)."""
    return json.dumps(build(command), indent=1, ensure_ascii=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write every schema file next to this module; with --check, only say which differ (exit 1)."""
    check = "--check" in (argv if argv is not None else sys.argv[1:])
    stale = []
    for command in SCHEMA_NAMES:
        path = HERE / schema_file(command)
        text = render(command)
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path.name)
        if not check:
            path.write_text(text, encoding="utf-8")
    print(("stale: " if check else "written: ") + (", ".join(stale) or "none"))
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
