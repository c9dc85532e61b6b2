"""Texts that look like a concurrency failure but are not a Delta conflict-checker verdict.

Each entry says, in one line, what the text is instead. Checked only after no Delta verdict
was found, so a Delta exception wrapped in, say, a StreamingQueryException is still read.

VersionAlreadyExists (corpus/errors 18, 19): the log store refused to create commit file N
because another writer created it first (put-if-absent / DynamoDB lock). That is the race
*before* conflict checking: delta-rs then reads the winner and runs its conflict checker
(conflict-rules §9); only that checker's verdict (`Failed to commit transaction: <CommitConflictError>`)
names a rule. A VersionAlreadyExists line alone, or a retry storm of them that ends in a
successful flush (corpus 19), is therefore not recognized; when a verdict follows it (corpus
18: `... Error occured: Failed to commit transaction: Metadata changed since last commit.`) the
verdict is what we read.
"""

from __future__ import annotations

import re

NEGATIVES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"org\.apache\.iceberg|\biceberg\.exceptions\b|Base metadata location '[^'\n]{0,2048}' is not same as the current"
                   r"|ValidationException: Found conflicting files", re.I),
        "Apache Iceberg commit failure (CommitFailedException/ValidationException), not Delta Lake",
    ),
    (
        re.compile(r"org\.apache\.hudi|HoodieWriteConflictException"),
        "Apache Hudi write conflict, not Delta Lake",
    ),
    (
        re.compile(r"Concurrent update to the commit log|Multiple streaming jobs detected"),
        "Structured Streaming checkpoint clash (two runs share one checkpoint's commit log), "
        "not a Delta conflict-checker verdict",
    ),
    (
        re.compile(r"\bio\.trino\b|Failed to write Delta Lake transaction log entry|Conflicting concurrent writes"
                   r"|DELTA_LAKE_BAD_WRITE|TransactionFailedException"),
        "Trino Delta Lake connector error: Trino's own commit path and conflict check, "
        "not delta-spark, delta-rs or Kernel rules",
    ),
    (
        re.compile(r"VersionAlreadyExists|Tried committing existing table version|version \d+ already exists", re.I),
        "log-store race (VersionAlreadyExists: the commit file was created first by another writer); "
        "the writer re-reads and retries, no conflict-checker verdict is named",
    ),
    (
        re.compile(r"\bVersion mismatch\b", re.I),
        "writer version mismatch (a table-version precondition failed), not a conflict-checker verdict",
    ),
    (
        re.compile(r"java\.util\.ConcurrentModificationException"),
        "java.util.ConcurrentModificationException (a collection changed while iterated), unrelated to Delta",
    ),
    (
        re.compile(r"\bCommitFailedException\b"),
        "a CommitFailedException that is not from Delta (Iceberg/Kernel commit-coordinator style), "
        "no Delta conflict message",
    ),
)


def why_not(text: str) -> str:
    """One line saying what an unrecognized text looks like instead."""
    for pat, reason in NEGATIVES:
        if pat.search(text):
            return reason
    if not text.strip():
        return "empty text"
    if re.search(r"\bdelta\b", text, re.I):
        return "mentions Delta but names no concurrency exception, error class or conflict sentence (conflict-rules §7)"
    return "no Delta concurrency exception name, error class or conflict sentence (conflict-rules §7) found"
