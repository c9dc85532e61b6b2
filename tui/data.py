"""The version list's data: one table opened once, columns as Python lists for O(1) row access.

Kept free of Textual so filters, search and jumps are plain functions over a few lists. The
commit index is columnar; the list renders only the rows on screen, so building a row costs a
handful of list lookups even at 100k+ versions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from forensics import Table, safe
from forensics.model import operation_class


@dataclass
class VerdictInfo:
    """What the views need of a replay verdict (a `ReplayReport.verdicts` value)."""

    verdict: str
    winning_version: int | None = None
    exception: str | None = None
    rule: str | None = None
    certainty: str | None = None
    reordered_before: list[int] = field(default_factory=list)  # blind appends it was serialized before
    raw: Any = None  # the verdict itself (to_dict for export)

    @classmethod
    def of(cls, v: Any) -> "VerdictInfo":
        return cls(
            verdict=str(getattr(v, "verdict", "skipped")),
            winning_version=getattr(v, "winning_version", None),
            exception=getattr(v, "exception", None),
            rule=getattr(v, "rule", None),
            certainty=getattr(v, "certainty", None),
            reordered_before=list(getattr(v, "reordered_before", None) or []),
            raw=v,
        )

    def to_dict(self) -> dict[str, Any]:
        if self.raw is not None:
            return self.raw.to_dict()
        return {"verdict": self.verdict, "winningVersion": self.winning_version, "exception": self.exception, "rule": self.rule}


@dataclass
class Rows:
    """Columns of the commit index as lists, plus the current filter/search state."""

    version: list[int]
    timestamp: list[int | None]
    operation: list[str | None]
    read_version: list[int | None]
    isolation: list[str | None]
    blind: list[bool | None]
    adds: list[int]
    removes: list[int]
    txn_id: list[str | None]
    user: list[str | None]
    engine: list[str | None]
    params: list[str | None]
    verdicts: dict[int, VerdictInfo] = field(default_factory=dict)
    visible: list[int] = field(default_factory=list)  # indices into the columns, in display order
    op_filter: str | None = None
    verdict_filter: str | None = None
    provisional: bool = False  # from the listing only: the parse has not filled in what each commit did
    _pos: dict[int, int] = field(default_factory=dict, repr=False)  # version -> column index
    _hay: list[str] | None = field(default=None, repr=False)

    @classmethod
    def from_table(cls, table: Table) -> "Rows":
        """The columns the list shows, straight from the commit index: `Table.history()` decodes
        every row into a dict, seconds at 100k versions; these are a dozen `to_list()` calls."""
        c = table.commit_index().sort("version")
        rows = cls(
            version=c["version"].to_list(),
            timestamp=c["timestamp"].to_list(),
            operation=c["operation"].to_list(),
            read_version=c["read_version"].to_list(),
            isolation=c["isolation_level"].to_list(),
            blind=c["is_blind_append"].to_list(),
            adds=c["num_add"].to_list(),
            removes=c["num_remove"].to_list(),
            txn_id=c["txn_id"].to_list(),
            user=c["user_name"].to_list(),
            engine=c["engine_info"].to_list(),
            params=c["operation_parameters"].to_list(),
        )
        rows._pos = {v: i for i, v in enumerate(rows.version)}
        rows.visible = list(range(len(rows.version)))
        return rows

    @classmethod
    def from_listing(cls, listed: list[tuple[int, int | None]]) -> "Rows":
        """The versions the commit files' names give, at their files' times (None: not read yet),
        before the parse: the list paints at once on a table the cache does not cover, then fills in."""
        vs = [v for v, _ in listed]
        n = len(vs)
        none: list = [None] * n  # one list for every empty column: columns are never written to
        zero: list = [0] * n
        rows = cls(version=vs, timestamp=[t for _, t in listed], operation=none, read_version=none, isolation=none,
                   blind=none, adds=zero, removes=zero, txn_id=none, user=none, engine=none, params=none,
                   provisional=True)
        rows._pos = {v: i for i, v in enumerate(vs)}
        rows.visible = list(range(n))
        return rows

    def __len__(self) -> int:
        return len(self.visible)

    # ---- per-row facts ------------------------------------------------------------------

    def window(self, i: int) -> list[int]:
        """Versions that landed between readVersion and this commit (spec §3)."""
        r, v = self.read_version[i], self.version[i]
        if r is None or r >= v - 1:
            return []
        return list(range(r + 1, v))

    def window_size(self, i: int) -> int:
        r, v = self.read_version[i], self.version[i]
        return 0 if r is None or r >= v - 1 else v - 1 - r

    def op_class(self, i: int) -> str:
        try:
            params = json.loads(self.params[i]) if self.params[i] else {}
        except ValueError:
            params = {}
        return operation_class(self.operation[i], params if isinstance(params, dict) else {})

    def verdict_of(self, i: int) -> VerdictInfo | None:
        return self.verdicts.get(self.version[i])

    def index_of(self, version: int) -> int | None:
        return self._pos.get(version)

    def row_of_version(self, version: int) -> int | None:
        """The display row of a version under the current filter (None when filtered out)."""
        i = self._pos.get(version)
        if i is None:
            return None
        try:
            return self.visible.index(i) if len(self.visible) != len(self.version) else i
        except ValueError:
            return None

    # ---- filters ---------------------------------------------------------------------------

    def operations(self) -> list[str]:
        return sorted({o for o in self.operation if o})

    def set_filter(self, operation: str | None = ..., verdict: str | None = ...) -> None:  # type: ignore[assignment]
        """Filter by operation (exact, case-insensitive) and/or verdict (`clean`, `reordered`,
        `anomaly`, `skipped`, or `window` for every commit with a stale readVersion)."""
        if operation is not ...:
            self.op_filter = operation or None
        if verdict is not ...:
            self.verdict_filter = verdict or None
        op = self.op_filter.upper() if self.op_filter else None
        vf = self.verdict_filter
        out = []
        for i in range(len(self.version)):
            if op is not None and (self.operation[i] or "").upper() != op:
                continue
            if vf is not None:
                if vf == "window":
                    if not self.window_size(i):
                        continue
                else:
                    vi = self.verdicts.get(self.version[i])
                    if vi is None or vi.verdict != vf:
                        continue
            out.append(i)
        self.visible = out

    def filter_label(self) -> str:
        parts = []
        if self.op_filter:
            parts.append(f"op={safe.inert(self.op_filter, 40)}")
        if self.verdict_filter:
            parts.append(f"verdict={self.verdict_filter}")
        return " ".join(parts)

    # ---- search / jump ----------------------------------------------------------------------

    def _haystack(self) -> list[str]:
        if self._hay is None:
            self._hay = [
                " ".join(
                    str(x)
                    for x in (self.version[i], self.operation[i], self.txn_id[i], self.user[i], self.engine[i], self.params[i], self.isolation[i])
                    if x is not None
                ).lower()
                for i in range(len(self.version))
            ]
        return self._hay

    def search(self, needle: str, start_row: int, forward: bool = True) -> int | None:
        """The next display row (wrapping) whose text contains `needle` (case-insensitive)."""
        n = len(self.visible)
        if not needle or not n:
            return None
        hay = self._haystack()
        needle = needle.lower()
        step = 1 if forward else -1
        for k in range(1, n + 1):
            row = (start_row + step * k) % n
            if needle in hay[self.visible[row]]:
                return row
        return None

    def resolve(self, target: str) -> int | None:
        """A column index for `:` jumps: a version number, `v123`, or a txnId (prefix ok)."""
        t = target.strip()
        if t.lower().startswith("v") and t[1:].isdigit():
            t = t[1:]
        if t.isdigit():
            return self._pos.get(int(t))
        tl = t.lower()
        if not tl:
            return None
        for i, tx in enumerate(self.txn_id):
            if tx and tx.lower().startswith(tl):
                return i
        return None
