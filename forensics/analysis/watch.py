"""Following a table as commits land (`delta-forensics watch`): each new commit's window verdict
and each new aborted attempt, said once.

Each tick refreshes the table (`Table.refresh`: `_delta_log` listed again, a remote one from its
tail; only new commits are parsed, the cache holds the rest) and replays only the new versions.
Orphan files are looked for afresh each tick; the files of a transaction still running look like
an orphan until it commits, so a group of them is called an aborted attempt only once its newest
file is `settle_ms` old and still referenced by no commit. What is already there when the watch
starts (commits, settled orphans) is history: `replay` and `evidence` tell it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from forensics.analysis.gate import attempt_line
from forensics.analysis.silent import attempt_rows

DEFAULT_SETTLE_S = 60.0


@dataclass
class Tick:
    """What one look at the table found new."""

    lines: list[dict[str, Any]] = field(default_factory=list)  # verdict lines (forensics.analysis.gate), windows first
    versions: list[int] = field(default_factory=list)  # the new versions
    quiet: list[int] = field(default_factory=list)  # new versions without a window: no concurrent winner
    latest: int | None = None


class Follower:
    """The table as last seen, and what has been said about it. `table` is a `forensics.Table`
    (anything with its refresh/verdict_lines/evidence/versions)."""

    def __init__(self, table: Any, *, isolation_level: str | None = None, with_evidence: bool = True,
                 settle_ms: int = int(DEFAULT_SETTLE_S * 1000), clock: Callable[[], float] = time.time):
        self.table = table
        self.isolation_level = isolation_level
        self.with_evidence = with_evidence
        self.settle_ms = settle_ms
        self._clock = clock
        self.last_version: int | None = table.latest_version
        self._said: set[str] = set()  # orphan files already part of a reported (or pre-existing) attempt
        if with_evidence:
            for attempt, _row in self._settled_attempts(table):
                self._said.update(f.path for f in attempt.files)

    def poll(self) -> Tick:
        """Look once: refresh, replay the new versions, find newly settled attempts."""
        t = self.table = self.table.refresh()
        new = [v for v in t.versions if self.last_version is None or v > self.last_version]
        tick = Tick(versions=new, latest=t.latest_version)
        if new:
            tick.lines = t.verdict_lines(isolation_level=self.isolation_level, versions=new)
            windows = {x["version"] for x in tick.lines}
            tick.quiet = [v for v in new if v not in windows]
            self.last_version = new[-1]
        if self.with_evidence:
            for attempt, row in self._settled_attempts(t):
                files = {f.path for f in attempt.files}
                if files - self._said:
                    self._said |= files
                    tick.lines.append(attempt_line(t.location, row))
        return tick

    def _settled_attempts(self, table: Any) -> list[tuple[Any, Any]]:
        attempts = table.evidence().attempts
        now_ms = int(self._clock() * 1000)
        return [(a, r) for a, r in zip(attempts, attempt_rows(attempts)) if a.last_seen <= now_ms - self.settle_ms]


def follow(follower: Follower, *, interval: float, stop: threading.Event, emit: Callable[[Tick], int | None]) -> int | None:
    """Poll every `interval` seconds until `stop` is set (None) or `emit` returns an exit code."""
    while not stop.is_set():
        code = emit(follower.poll())
        if code is not None:
            return code
        stop.wait(interval)
    return None
