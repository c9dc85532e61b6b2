"""The message templates of conflict-rules §7 as regular expressions, and the name/class/rule tables.

Each pattern models one engine and release range, named in its comment. Patterns match the
base sentences, not whole templates, so truncated and wrapped texts still match.
"""

from __future__ import annotations

import re

# ------------------------------------------------------------------ names and classes

# Exception simple name -> conflict rule (conflict-rules §5.1-§5.8).
EXCEPTION_RULE: dict[str, str] = {
    "ConcurrentAppendException": "append",
    "ConcurrentDeleteReadException": "delete-read",
    "ConcurrentDeleteDeleteException": "delete-delete",
    "MetadataChangedException": "metadata",
    "ProtocolChangedException": "protocol",
    "ConcurrentTransactionException": "txn",
    "ConcurrentWriteException": "write",
}

# Error class (delta-spark 3.2+, conflict-rules §7.2/§7.3) -> exception simple name.
ERROR_CLASS_EXCEPTION: dict[str, str | None] = {
    "DELTA_CONCURRENT_APPEND": "ConcurrentAppendException",
    "DELTA_CONCURRENT_DELETE_READ": "ConcurrentDeleteReadException",
    "DELTA_CONCURRENT_DELETE_DELETE": "ConcurrentDeleteDeleteException",
    "DELTA_METADATA_CHANGED": "MetadataChangedException",
    "DELTA_PROTOCOL_CHANGED": "ProtocolChangedException",
    "DELTA_CONCURRENT_TRANSACTION": "ConcurrentTransactionException",
    "DELTA_CONCURRENT_WRITE": "ConcurrentWriteException",
    "DELTA_MAX_COMMIT_RETRIES_EXCEEDED": None,  # sqlState 40000; a DeltaIllegalStateException
}

_NAMES = "|".join(EXCEPTION_RULE)

# `io.delta.exceptions.X`, `org.apache.spark.sql.delta.X` (<= 0.x/1.x), Databricks
# `com.databricks.sql.transaction.tahoe.X`, Python `delta.exceptions.X`, Standalone
# `io.delta.standalone.exceptions.X`, Kernel `io.delta.kernel.exceptions.X`; or the bare name.
EXCEPTION_NAME = re.compile(r"\b(?P<name>" + _NAMES + r")\b")
# a Java/Python package in front of a name (read backwards from the name, see parser._package_before)
PACKAGE = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*")

# 4.1+ (conflict-rules §7.3): `[DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT]`.
SUBCLASS = re.compile(
    r"\[(?P<cls>DELTA_CONCURRENT_(?:APPEND|DELETE_READ|DELETE_DELETE))\.(?P<sub>WITH_PARTITION_HINT|WITHOUT_HINT)\]"
)
# 3.2+ (conflict-rules §7.2): `[DELTA_CONCURRENT_APPEND]` (also printed by 4.1+ for the unchanged classes).
ERROR_CLASS = re.compile(r"\[(?P<cls>" + "|".join(ERROR_CLASS_EXCEPTION) + r")\]")

# ------------------------------------------------------------------ delta-spark sentences

# v1.x-v4.0 ConcurrentAppend (conflict-rules §7.1/§7.2); the partition may be cut off by truncation.
APPEND = re.compile(
    r"Files were added to (?:(?P<root>the root of the table)|partition (?P<part>\[[^\n]{0,4096}?\])(?= by a concurrent)"
    r"|partition (?P<partcut>\[[^\n]{0,4096}))"
)
# v1.x-v4.0 ConcurrentDeleteRead / ConcurrentDeleteDelete (conflict-rules §7.1/§7.2).
DELETE_READ = re.compile(r"This transaction attempted to read one or more files that were deleted")
DELETE_DELETE = re.compile(r"This transaction attempted to delete one or more files that were deleted")
EXAMPLE_FILE = re.compile(r"\(for example (?P<file>[^\n]{0,4096}?)\) by a concurrent update|\(for example (?P<cut>[^\n]{0,4096})")
METADATA = re.compile(r"The metadata of the Delta table (?:(?P<table>[^\n]{1,1000}?) )?has been changed by a concurrent update")
PROTOCOL = re.compile(r"The protocol version of the Delta table has been changed by a concurrent update")
# additionalInfo when the winner is version 0 (conflict-rules §5.1 "Version 0 race"); also Kernel's text.
EMPTY_DIR = re.compile(r"This happens when multiple\s+writers(?P<rest>\s+are\s+writing\s+to\s+an\s+empty\s+directory)?")
TXN = re.compile(r"This error occurs when multiple streaming queries are using the same checkpoint")
# conflict-rules §5.3: plain message, not error-class formatted
DOMAIN = re.compile(r"A conflicting metadata domain (?P<domain>[^\n]{1,512}?) is added")
WRITE = re.compile(r"A concurrent transaction has written new data since the current transaction read the table")
RETRY_UPGRADE = re.compile(r"Upgrading all your concurrent writers to use the latest Delta Lake may avoid this error")
CONFLICTING_COMMIT = re.compile(r"Conflicting commit:\s*")
REFER_TO = re.compile(r"Refer to (?P<link>\S+?) for more (?:details|information)\.?")

# v4.1+ main sentences (conflict-rules §7.3). `a concurrent <op> added data to table <t> committed at version <v>.`
V41_MAIN = re.compile(
    r"a concurrent (?P<op>[^\n]{1,200}?) (?P<verb>added data to|deleted data from) table (?P<table>[^\n]{1,2000}?)"
    r" \(?committed at version (?P<v>\d+)\)?"
)
V41_PART = re.compile(
    r"in the partition (?P<part>\[[^\n]{0,4096}?\])(?= that (?:should have been|was) read)"
    r"|in the partition (?P<cut>\[[^\n]{0,4096})"
)
V41_TRANSACTION_OP = "TRANSACTION"  # printed when the winner has no commitInfo.operation

# DELTA_MAX_COMMIT_RETRIES_EXCEEDED (conflict-rules §7.3 "Other"), delta-spark 3.x+.
MAX_RETRIES = re.compile(r"This commit has failed as it has been tried (?P<n>\d+) times but did not succeed")
MAX_RETRIES_START = re.compile(r"Commit started at version:\s*(?P<v>\d+)")
MAX_RETRIES_FAIL = re.compile(r"Commit failed at version:\s*(?P<v>\d+)")
MAX_RETRIES_ACTIONS = re.compile(r"Number of actions attempted to commit:\s*(?P<v>\d+)")
MAX_RETRIES_TIME = re.compile(r"Total time spent attempting this commit:\s*(?P<v>\d+)\s*ms")

# ------------------------------------------------------------------ delta-rs (conflict-rules §7.5)

RS_FAILED = re.compile(r"Failed to commit transaction:\s*")
RS_SENTENCES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Commit failed: a concurrent transactions? added new data"), "ConcurrentAppendException"),
    (re.compile(r"Commit failed: a concurrent transaction deleted data this operation read"), "ConcurrentDeleteReadException"),
    (re.compile(r"Commit failed: a concurrent transaction deleted the same data your transaction deletes"),
     "ConcurrentDeleteDeleteException"),
    (re.compile(r"\bMetadata changed since last commit"), "MetadataChangedException"),
    (re.compile(r"Protocol changed since last commit(?::\s*(?P<detail>[^\n]*))?"), "ProtocolChangedException"),
    (re.compile(r"\bConcurrent transaction failed\."), "ConcurrentTransactionException"),
)
# `reqired` is delta-rs's own spelling in the protocol-check message.
RS_PROTOCOL_NUMBERS = re.compile(
    r"requ?i?red read/write (?P<wr>\d+)/(?P<ww>\d+), current read/write (?P<cr>\d+)/(?P<cw>\d+)"
)
# MaxCommitAttempts prints only the number: `Failed to commit transaction: 15`.
RS_MAX_ATTEMPTS = re.compile(r"Failed to commit transaction:\s*(?P<n>\d+)\s*(?:$|\n|['\"])")
RS_VERSION_EXISTS = re.compile(r"VersionAlreadyExists|Tried committing existing table version")
RS_PYTHON = re.compile(r"\b(?:_internal|deltalake\.exceptions|deltalake)\.(?P<name>CommitFailedError|DeltaError)\b")

# ------------------------------------------------------------------ Delta Kernel Java (conflict-rules §7.6, §10)

KERNEL_DELETE_DELETE = re.compile(
    r"A concurrent transaction removed \(or updated the deletion vector of\) file (?P<file>[^\n]{1,4096}?) that this"
    r" transaction \(attempting version (?P<v>\d+)\) also removes"
)
KERNEL_CONFLICT = re.compile(r"Transaction has encountered a conflict and can not be committed")
KERNEL_TXN = re.compile(
    r"multiple updates are using the same transaction identifier to write into this table\.?\s*"
    r"(?:Application ID: (?P<app>[^,\n]+), Attempted version: (?P<av>\d+), Latest version in table: (?P<lv>\d+))?"
)

# ------------------------------------------------------------------ Databricks signals

DATABRICKS_SIGNALS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"com\.databricks\.sql\.transaction\.tahoe|\btahoe\.[A-Z]"), "Databricks package (tahoe)"),
    (re.compile(r"docs\.databricks\.com|microsoft\.com/[\w/-]*databricks|learn\.microsoft\.com/[\w/-]*databricks"),
     "Databricks docs link"),
    (re.compile(r"\[Simba\]\[(?:Hardy|SparkJDBCDriver|SparkODBC)\]|Databricks (?:ODBC|JDBC)"), "Databricks ODBC/JDBC driver"),
    (re.compile(r'"engineInfo"\s*:\s*"?Databricks-Runtime'), "winner engineInfo Databricks-Runtime"),
    (re.compile(r"\bat com\.databricks\."), "Databricks stack frames"),
)


# ------------------------------------------------------------------ bounded search

# Literal heads of the patterns whose middle is a bounded lazy group: search tries at most
# MAX_TRIES occurrences of the head, so a hostile 2 MiB paste stays linear.
MAX_TRIES = 64
HEADS: dict[re.Pattern[str], str] = {
    APPEND: "Files were added to ",
    METADATA: "The metadata of the Delta table ",
    DOMAIN: "A conflicting metadata domain ",
    KERNEL_DELETE_DELETE: "A concurrent transaction removed (or updated",
    V41_MAIN: "a concurrent ",
}


def search(pat: re.Pattern[str], text: str, pos: int = 0, endpos: int | None = None) -> re.Match[str] | None:
    """`pat.search`, but for patterns with a literal head only its first MAX_TRIES occurrences are tried."""
    end = len(text) if endpos is None else min(endpos, len(text))
    head = HEADS.get(pat)
    if head is None:
        return pat.search(text, pos, end)
    i = text.find(head, pos, end)
    tries = 0
    while i >= 0 and tries < MAX_TRIES:
        m = pat.match(text, i, end)
        if m:
            return m
        tries += 1
        i = text.find(head, i + 1, end)
    return None
