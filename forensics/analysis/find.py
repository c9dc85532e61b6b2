"""Did my write land? A commit found by what its writer knows of it: its commitInfo txnId, its app
transaction (`txn` appId and version, as Structured Streaming and idempotent writers record them), its
userMetadata, or its operation and time.

Four answers, each with its exit code (docs/exit-codes.md):
- `committed` (0): a retained commit matches; `version` is that commit.
- `at-or-before` (14): no retained commit carries the app transaction, but the checkpoint the log now
  starts from records the app at that version or later: the write landed at or before the checkpoint's
  version (before the oldest retained commit, when every retained one up to the checkpoint was
  searched), in a commit log cleanup has removed.
- `absent` (15): nothing matches, and everything searched is still in the log.
- `unknown` (16): nothing matches in the retained commits, and what was searched reaches back past them
  (cleaned-up commits, or txn actions the table lets expire).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from forensics.errors import ExitCode, ForensicsError
from forensics.log.delta_log import DeltaLog
from forensics.log.select import COMMIT_TIME, Selection
from forensics.times import with_iso

ANSWERS = ("committed", "at-or-before", "absent", "unknown")
_EXIT = {"committed": ExitCode.OK, "at-or-before": ExitCode.FIND_AT_OR_BEFORE, "absent": ExitCode.FIND_ABSENT,
         "unknown": ExitCode.FIND_UNKNOWN}
TXN_RETENTION = "delta.setTransactionRetentionDuration"  # txn actions older than this leave the checkpoints


@dataclass(frozen=True)
class FindQuery:
    """What the writer knows of its commit; every given field must match (AND)."""

    txn_id: str | None = None  # commitInfo.txnId
    app_id: str | None = None  # txn.appId
    txn_version: int | None = None  # txn.version for app_id
    user_metadata: str | None = None  # text commitInfo.userMetadata contains
    operation: str | None = None  # commitInfo.operation (case-insensitive)

    def check(self) -> None:
        if self.txn_version is not None and self.app_id is None:
            raise ForensicsError(ExitCode.USAGE, "--txn-version needs --app-id (the app whose version it is)")
        if not any(x is not None for x in (self.txn_id, self.app_id, self.user_metadata, self.operation)):
            raise ForensicsError(ExitCode.USAGE, "find needs --txn-id, --app-id, --user-metadata or --operation")

    @property
    def identity(self) -> bool:
        """One write (a txnId, an app's version): its first commit is the answer; otherwise the latest match."""
        return self.txn_id is not None or (self.app_id is not None and self.txn_version is not None)

    def to_dict(self) -> dict[str, Any]:
        return {"txnId": self.txn_id, "appId": self.app_id, "txnVersion": self.txn_version,
                "userMetadata": self.user_metadata, "operation": self.operation}


@dataclass
class FindResult:
    """The answer to a FindQuery; `exit_code` is what `find` exits with."""

    answer: str  # one of ANSWERS
    version: int | None  # committed: the commit; at-or-before: the checkpoint's version
    query: FindQuery
    why: str
    certainty: str  # exact | inferred
    matches: list[int] = field(default_factory=list)  # every retained version that matches, oldest first
    commit: dict[str, Any] | None = None  # the `history --json` row of `version` (committed)
    txn_version: int | None = None  # the app's txn version at `version`
    checkpoint: int | None = None  # the checkpoint whose txn actions were read
    searched: tuple[int, int] | None = None  # the retained versions searched
    retained: tuple[int, int] | None = None  # the versions the log retains
    commit_time: int | None = None  # epoch ms of `commit`

    @property
    def exit_code(self) -> ExitCode:
        """The documented exit code of this answer (0 only when the write was found committed)."""
        return _EXIT[self.answer]

    @property
    def found(self) -> bool:
        """Whether the write is committed at a retained version."""
        return self.answer == "committed"

    def to_dict(self) -> dict[str, Any]:
        """The `find --json` document (camelCase keys, each time with its ISO 8601 twin)."""
        return with_iso({
            "answer": self.answer, "version": self.version, "certainty": self.certainty, "why": self.why,
            "query": self.query.to_dict(), "matches": list(self.matches), "txnVersion": self.txn_version,
            "checkpoint": self.checkpoint, "commitTime": self.commit_time,
            "searched": list(self.searched) if self.searched else None,
            "retained": list(self.retained) if self.retained else None, "commit": self.commit,
        }, "commitTime")

    def line(self) -> str:
        """The answer in one line, as `find` prints it."""
        head = {"committed": f"committed at version {self.version}",
                "at-or-before": f"committed at or before version {self.version}",
                "absent": "not in the log", "unknown": "unknown"}[self.answer]
        return f"{head}: {self.why}"


def find(log: DeltaLog, query: FindQuery, selection: Selection | None = None) -> FindResult:
    """Search the retained commits (within `selection`) and, for an app transaction the commits no
    longer hold, the checkpoint the log starts from."""
    from forensics.log.history import history_rows

    query.check()
    selection = selection or Selection()
    commits = log.commits.sort("version")
    if commits.height == 0:
        raise ForensicsError(ExitCode.NOT_A_TABLE, "the log has no versions")
    retained = (commits["version"][0], commits["version"][-1])
    chosen = selection.resolve(commits)  # RangeOutsideLog (13) when it holds no retained version
    searched = (chosen.first, chosen.last) if chosen is not None else retained
    rows = commits.filter(pl.col("version").is_between(*searched))
    matched = _matches(rows, query)
    base = {"query": query, "searched": searched, "retained": retained}
    if matched:
        v = matched[0] if query.identity else matched[-1]
        row = history_rows(commits, v, v)[0]
        t = commits.filter(pl.col("version") == v).select(COMMIT_TIME).item()
        n = len(matched)
        why = (f"the commit {_what(query)}" + (f"; {n} retained versions match ({_short(matched)}), the "
               f"{'first' if query.identity else 'latest'} is shown" if n > 1 else ""))
        return FindResult("committed", v, why=why, certainty="exact", matches=matched, commit=row,
                          txn_version=_txns(row.get("txnAppIds")).get(query.app_id) if query.app_id else None,
                          commit_time=t, **base)
    span = f"v{searched[0]}..v{searched[1]}"
    reaches_back = retained[0] > 0 and selection.starts_before(commits, retained[0])
    if not reaches_back:
        return FindResult("absent", None, why=f"no commit in {span} {_what(query)}, and all of {span} is retained",
                          certainty="exact", **base)
    if query.app_id is not None and _only_app(query):
        return _from_checkpoint(log, query, base, span)
    return FindResult("unknown", None, certainty="exact", **base,
                      why=f"no retained commit {_what(query)} ({span}), but commits before v{retained[0]} are no longer "
                          f"in the log, and the answer may be among them")


def _matches(rows: pl.DataFrame, q: FindQuery) -> list[int]:
    cond = pl.lit(True)
    if q.txn_id is not None:
        cond &= pl.col("txn_id") == q.txn_id
    if q.user_metadata is not None:
        cond &= pl.col("user_metadata").str.contains(q.user_metadata, literal=True)
    if q.operation is not None:
        cond &= pl.col("operation").str.to_uppercase() == q.operation.strip().upper()
    if q.app_id is not None:
        cond &= pl.col("has_txn")
    out = []
    for v, txns in rows.filter(cond.fill_null(False)).select("version", "txn_app_ids").iter_rows():
        if q.app_id is not None:
            have = _txns(txns).get(q.app_id)
            if have is None or (q.txn_version is not None and have != q.txn_version):
                continue
        out.append(v)
    return sorted(out)


def _only_app(q: FindQuery) -> bool:
    """A checkpoint keeps txn actions, never commitInfo: only an app-transaction question can be answered from it."""
    return q.txn_id is None and q.user_metadata is None and q.operation is None


def _from_checkpoint(log: DeltaLog, q: FindQuery, base: dict[str, Any], span: str) -> FindResult:
    """The app's txn version in the oldest checkpoint the retained commits follow on from."""
    from forensics.log.snapshot import checkpoint_tables

    have = set(log.versions)
    last = max(have)
    usable = sorted((c for c in log.listing.checkpoints
                     if c.complete and all(v in have for v in range(c.version + 1, last + 1))), key=lambda c: c.version)
    gone = f"commits before v{base['retained'][0]} are no longer in the log"
    if not usable:
        return FindResult("unknown", None, certainty="exact", **base,
                          why=f"no retained commit {_what(q)} ({span}); {gone} and no checkpoint records the app's transactions")
    cp = usable[0]
    _acts, others, _f = checkpoint_tables(log, cp, stats=False)
    txns = others.filter((pl.col("kind") == "txn") & (pl.col("app_id") == q.app_id))
    reached = int(txns["txn_version"].max()) if txns.height and txns["txn_version"].max() is not None else None
    expires = _txn_retention(others)
    at = f"checkpoint {cp.version}"
    if reached is not None and (q.txn_version is None or reached >= q.txn_version):
        exact = q.txn_version is None or reached == q.txn_version
        # Landed at or before the checkpoint; and before the oldest retained commit when every retained
        # commit up to the checkpoint was searched without finding it.
        v = base["retained"][0] - 1 if base["searched"][1] >= cp.version else cp.version
        why = (f"{at} records app {q.app_id} at txn version {reached}" +
               ("" if exact else f" (past {q.txn_version}: an app's txn versions only grow, so {q.txn_version} came "
                                 f"before it, or was never written)") +
               f"; no retained commit carries it, so it landed at or before v{v}, in a commit no longer in the log ({gone})")
        return FindResult("at-or-before", v, certainty="exact" if exact else "inferred", why=why,
                          txn_version=reached, checkpoint=cp.version, **base)
    if reached is None and expires:
        return FindResult("unknown", None, certainty="exact", checkpoint=cp.version, **base,
                          why=f"no retained commit {_what(q)} ({span}) and {at} holds no txn for the app, but the table "
                              f"lets txn actions expire ({TXN_RETENTION} = {expires}); {gone}")
    had = f"holds the app at txn version {reached}" if reached is not None else "holds no txn for the app"
    return FindResult("absent", None, certainty="exact", checkpoint=cp.version, txn_version=reached, **base,
                      why=f"{at} {had} and no retained commit after it {_what(q)} ({span})")


def _txn_retention(others: pl.DataFrame) -> str | None:
    for payload in others.filter(pl.col("kind") == "metaData")["payload"].to_list()[::-1]:
        try:
            conf = (json.loads(payload or "{}").get("metaData") or json.loads(payload or "{}")).get("configuration") or {}
        except (ValueError, AttributeError):
            continue
        if TXN_RETENTION in conf:
            return str(conf[TXN_RETENTION])
    return None


def _txns(value: Any) -> dict[str, int]:
    if isinstance(value, dict):
        return value
    try:
        d = json.loads(value or "{}")
    except (TypeError, ValueError):
        return {}
    return d if isinstance(d, dict) else {}


def _what(q: FindQuery) -> str:
    parts = []
    if q.txn_id is not None:
        parts.append(f"txnId {q.txn_id}")
    if q.app_id is not None:
        parts.append(f"app {q.app_id}" + (f" txn version {q.txn_version}" if q.txn_version is not None else ""))
    if q.user_metadata is not None:
        parts.append(f"userMetadata containing {q.user_metadata!r}")
    if q.operation is not None:
        parts.append(f"operation {q.operation.strip().upper()}")
    return "with " + ", ".join(parts)


def _short(vs: list[int]) -> str:
    return ", ".join(f"v{v}" for v in vs[:5]) + (f" … ({len(vs)} in all)" if len(vs) > 5 else "")
