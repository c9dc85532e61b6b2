"""Which versions a question covers: `--from`/`--to` (versions), `--since`/`--until` (commit times), `--last N`.

One resolution for every command and `Table` method that reads history, so `history`, `replay`,
`stats`, `export`, `evidence` and `find` agree on what "since 09:00" means. A commit's time is the
one DESCRIBE HISTORY shows: its inCommitTimestamp where the table writes one, else commitInfo's
timestamp (the commit file's modification time when it has none), as the commit index holds them.
Like Delta's change data feed, a time range runs from the first commit at or after `--since` to the
last at or before `--until`, so a selection is always a run of versions `first..last`. A selection
that holds no retained version is `RangeOutsideLog` (exit 13), naming what the log retains.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Iterable

import polars as pl

from forensics.errors import ExitCode, ForensicsError
from forensics.times import epoch_ms, fmt_time, parse_moment

COMMIT_TIME = pl.coalesce(pl.col("in_commit_timestamp"), pl.col("timestamp"))
"""A commit's time as DESCRIBE HISTORY shows it, as a polars expression over the commit index."""


@dataclass(frozen=True)
class VersionRange:
    """The versions a selection resolved to: `first..last`, both retained (inclusive)."""

    first: int
    last: int

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.first <= version <= self.last

    def touches(self, versions: "Iterable[int | None]") -> bool:
        """Whether something tied to `versions` (an aborted attempt: the commits it raced, the winners
        the evidence names) belongs to the range."""
        return any(v in self for v in versions if v is not None)


@dataclass(frozen=True)
class Selection:
    """What the user asked for; `since`/`until` in epoch ms. `Selection()` is the whole log."""

    from_version: int | None = None
    to_version: int | None = None
    since: int | None = None
    until: int | None = None
    last: int | None = None
    utc: bool = False  # how the times are shown in messages

    @classmethod
    def of(cls, *, from_version: int | None = None, to_version: int | None = None, since: object = None,
           until: object = None, last: int | None = None, utc: bool = False, now_ms: int | None = None) -> "Selection":
        """A selection from what a caller has: times as text (`forensics.times.parse_moment`: ISO 8601,
        `09:00`, `2h`, `yesterday`), `datetime`, or epoch ms. Bad input is a usage error (exit 2)."""
        sel = cls(from_version, to_version, _moment(since, "--since", utc, now_ms), _moment(until, "--until", utc, now_ms), last, utc)
        sel.check()
        return sel

    @property
    def everything(self) -> bool:
        return all(x is None for x in (self.from_version, self.to_version, self.since, self.until, self.last))

    def check(self) -> None:
        if self.from_version is not None and self.to_version is not None and self.from_version > self.to_version:
            raise ForensicsError(ExitCode.USAGE, f"--from {self.from_version} is after --to {self.to_version}")
        if self.since is not None and self.until is not None and self.since > self.until:
            raise ForensicsError(ExitCode.USAGE, f"--since {self._t(self.since)} is after --until {self._t(self.until)}")
        if self.last is not None and self.last < 1:
            raise ForensicsError(ExitCode.USAGE, f"--last takes a number of versions, 1 or more (got {self.last})")
        for flag, v in (("--from", self.from_version), ("--to", self.to_version)):
            if v is not None and v < 0:
                raise ForensicsError(ExitCode.USAGE, f"{flag} takes a version, 0 or more (got {v})")

    def describe(self) -> str:
        """`since 2024-06-20 09:00:00Z until ... (last 5)`, for titles and messages."""
        parts = []
        if self.from_version is not None or self.to_version is not None:
            parts.append(f"versions {_span(self.from_version, self.to_version)}")
        if self.since is not None:
            parts.append(f"since {self._t(self.since)}")
        if self.until is not None:
            parts.append(f"until {self._t(self.until)}")
        if self.last is not None:
            parts.append(f"the last {self.last}")
        return ", ".join(parts) or "every version"

    def starts_before(self, commits: pl.DataFrame, version: int) -> bool:
        """Whether the selection's lower bound reaches below `version` (what the log may no longer
        retain): no lower bound, a --from below it, or a --since before that commit's time."""
        if self.last is not None:
            return False
        if self.from_version is not None:
            return self.from_version < version
        if self.since is not None:
            t = commits.filter(pl.col("version") == version).select(COMMIT_TIME).to_series()
            return t.is_empty() or t[0] is None or self.since <= t[0]
        return True

    def resolve(self, commits: pl.DataFrame) -> VersionRange | None:
        """The versions the selection holds in `commits` (the commit index); None for the whole log.
        RangeOutsideLog when it holds no retained version."""
        self.check()
        if self.everything or commits.height == 0:
            return None
        index = commits.select("version", COMMIT_TIME.alias("t")).sort("version")
        versions = index["version"].to_list()
        lo_r, hi_r = versions[0], versions[-1]
        f, t = self.from_version, self.to_version
        if (f is not None and f > hi_r) or (t is not None and t < lo_r):
            raise ForensicsError(ExitCode.RANGE_OUTSIDE_LOG, f"versions {_span(f, t)} are not in the log: {self._retained(index)}")
        rows = index.filter((pl.col("version") >= (f if f is not None else lo_r)) & (pl.col("version") <= (t if t is not None else hi_r)))
        if self.since is not None:
            after = rows.filter(pl.col("t") >= self.since)["version"]
            rows = rows.filter(pl.col("version") >= after.min()) if after.len() else rows.clear()
        if self.until is not None:
            before = rows.filter(pl.col("t") <= self.until)["version"]
            rows = rows.filter(pl.col("version") <= before.max()) if before.len() else rows.clear()
        if self.last is not None:
            rows = rows.tail(self.last)
        if rows.height == 0:
            raise ForensicsError(ExitCode.RANGE_OUTSIDE_LOG, f"no commit {self.describe()}: {self._retained(index)}")
        return VersionRange(rows["version"][0], rows["version"][-1])

    def _retained(self, index: pl.DataFrame) -> str:
        vs, ts = index["version"], index["t"]
        when = f", committed {self._t(ts[0])} .. {self._t(ts[-1])}" if ts[0] is not None and ts[-1] is not None else ""
        return f"it retains v{vs[0]}..v{vs[-1]}{when}"

    def _t(self, ms: int | None) -> str:
        return fmt_time(ms, self.utc)


def _span(first: int | None, last: int | None) -> str:
    return f"{'' if first is None else first}..{'' if last is None else last}"


def _moment(value: object, flag: str, utc: bool, now_ms: int | None) -> int | None:
    if value is None:
        return None
    try:
        if isinstance(value, str):
            return parse_moment(value, utc=utc, now_ms=now_ms)
        if isinstance(value, _dt.datetime) and value.tzinfo is None and utc:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return epoch_ms(value)  # type: ignore[arg-type]
    except ValueError as e:
        raise ForensicsError(ExitCode.USAGE, f"{flag}: {e}") from e
