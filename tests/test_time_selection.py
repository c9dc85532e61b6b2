"""--since / --until / --from / --to / --last on every command that reads history, one resolution
(forensics/log/select.py) judged on the commit time DESCRIBE HISTORY shows; a range outside the
retained log is one line and exit 13; the time parser's properties (hypothesis)."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import time
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from deltalake import write_deltalake
from hypothesis import given
from hypothesis import strategies as st

from forensics import RangeOutsideLog, Table
from forensics.errors import ExitCode
from forensics.log.select import Selection, VersionRange
from forensics.times import fmt_time, iso_utc, parse_duration, parse_moment
from helpers import run_cli

NOW = 1_782_000_000_000  # a fixed "now" (2026-06-21) for the properties
UNITS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


# ---- the parser's properties ----------------------------------------------------------------


@given(st.integers(min_value=0, max_value=4_102_444_800_000))
def test_iso_8601_in_utc_reads_back_exactly(ms):
    assert parse_moment(iso_utc(ms)) == ms
    naive = iso_utc(ms)[:-1]  # without Z: local time, or UTC under --utc
    assert parse_moment(naive, utc=True) == ms


@given(st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(sorted(UNITS))), min_size=1, max_size=3), st.booleans())
def test_relative_times_count_back_from_now(parts, ago):
    text = "".join(f"{n}{u}" for n, u in parts) + (" ago" if ago else "")
    back = sum(n * UNITS[u] for n, u in parts)
    assert parse_duration(text) == back
    assert parse_moment(text, now_ms=NOW) == NOW - back
    assert parse_moment(text.upper(), now_ms=NOW) == NOW - back


@given(st.integers(0, 23), st.integers(0, 59), st.integers(0, 59), st.integers(0, 4_000_000_000_000))
def test_a_time_of_day_is_today_in_utc_under_utc(h, m, s, now):
    got = parse_moment(f"{h:02d}:{m:02d}:{s:02d}", utc=True, now_ms=now)
    midnight = now - now % 86_400_000
    assert got == midnight + ((h * 60 + m) * 60 + s) * 1000
    assert parse_moment(f"{h:02d}:{m:02d}", utc=True, now_ms=now) == midnight + (h * 60 + m) * 60_000
    assert parse_moment(f"{h:02d}:{m:02d}:{s:02d}Z", now_ms=now) == got  # an explicit offset needs no --utc


@given(st.integers(0, 4_000_000_000_000))
def test_today_and_yesterday_are_day_starts(now):
    today = parse_moment("today", utc=True, now_ms=now)
    assert today == now - now % 86_400_000 and parse_moment("yesterday", utc=True, now_ms=now) == today - 86_400_000
    assert parse_moment("now", now_ms=now) == now


@given(st.text(max_size=40))
def test_anything_else_is_a_value_error_never_a_crash(text):
    try:
        parse_moment(text, now_ms=NOW)
    except ValueError:
        pass


@contextlib.contextmanager
def _zone(name: str):
    """The machine's local time zone set to `name` inside the block."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = name
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()


@given(st.integers(4, 23), st.integers(0, 59), st.integers(1_700_000_000_000, 1_900_000_000_000))
def test_a_time_of_day_is_local_time_without_utc(h, m, now):
    with _zone("Europe/Berlin"):
        got = parse_moment(f"{h:02d}:{m:02d}", now_ms=now)
        local_today = dt.datetime.fromtimestamp(now / 1000).date()  # the machine's clock, in Berlin
        assert fmt_time(got, False, offset=False) == f"{local_today} {h:02d}:{m:02d}:00"
        assert parse_moment(f"{local_today}T{h:02d}:{m:02d}", now_ms=now) == got
        assert parse_moment(f"{local_today}T{h:02d}:{m:02d}", utc=True, now_ms=now) != got  # Berlin is never UTC


def test_unreadable_times_are_usage_errors_in_one_line(tmp_path):
    for bad in ("soon", "25:00", "2024-13-01", "-2h"):
        with pytest.raises(ValueError):
            parse_moment(bad)
    rc, out, err = run_cli(["history", str(Path(__file__).parents[1] / "sample_logs" / "quickstart" / "table"), "--since", "soon"])
    assert rc == int(ExitCode.USAGE) and out == "" and len(err.strip().splitlines()) == 1 and "--since" in err
    assert "soon" not in err  # what was typed is never repeated (it may be a pasted credential)


# ---- the selection on a commit index ----------------------------------------------------------


def _index(times: list[int], ict: list[int | None] | None = None) -> pl.DataFrame:
    n = len(times)
    return pl.DataFrame({"version": list(range(10, 10 + n)), "timestamp": times, "in_commit_timestamp": ict or [None] * n},
                        schema={"version": pl.Int64, "timestamp": pl.Int64, "in_commit_timestamp": pl.Int64})


def test_in_commit_timestamps_decide_where_the_table_has_them():
    # commitInfo.timestamp says v11 is late (a skewed clock); its inCommitTimestamp puts it in order
    idx = _index([1000, 9000, 3000], ict=[1000, 2000, 3000])
    assert Selection(until=2500).resolve(idx) == VersionRange(10, 11)
    assert Selection(until=2500).resolve(idx.with_columns(pl.lit(None, pl.Int64).alias("in_commit_timestamp"))) == VersionRange(10, 10)


def test_like_change_data_feed_a_time_range_is_a_run_of_versions():
    idx = _index([1000, 2000, 3000, 4000])
    assert Selection(since=1500, until=3500).resolve(idx) == VersionRange(11, 12)
    assert Selection(since=2000, until=2000).resolve(idx) == VersionRange(11, 11)  # both ends inclusive
    assert Selection(last=3, until=3500).resolve(idx) == VersionRange(10, 12)
    assert Selection(from_version=5, to_version=11).resolve(idx) == VersionRange(10, 11)  # partly retained: the part
    assert Selection().resolve(idx) is None


@pytest.mark.parametrize(("sel", "says"), [
    (Selection(from_version=20), "versions 20.. are not in the log: it retains v10..v13"),
    (Selection(to_version=3), "versions ..3 are not in the log: it retains v10..v13"),
    (Selection(from_version=1, to_version=5), "versions 1..5 are not in the log: it retains v10..v13"),
    (Selection(since=5000), "no commit since"),
    (Selection(until=999), "no commit until"),
    (Selection(since=1500, until=1900), "no commit since"),
])
def test_a_range_outside_the_log_names_what_it_retains(sel, says):
    with pytest.raises(RangeOutsideLog) as e:
        sel.resolve(_index([1000, 2000, 3000, 4000]))
    assert e.value.code == ExitCode.RANGE_OUTSIDE_LOG == 13
    assert says in e.value.one_line() and "v10..v13" in e.value.one_line() and "\n" not in e.value.one_line()


# ---- every command, on a table deltalake wrote just now -------------------------------------------


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[str, str]:
    """v0..v2, then a cut-off time, then v3..v4 (real commits, real clocks): (table, cut-off ISO 8601 UTC)."""
    p = str(tmp_path_factory.mktemp("since") / "t")
    part = lambda i: pa.table({"id": pa.array([i], pa.int64()), "date": ["2024-06-20"]})  # noqa: E731
    write_deltalake(p, part(0), partition_by=["date"])
    for i in (1, 2):
        write_deltalake(p, part(i), mode="append")
    time.sleep(1.1)
    cut = iso_utc(int(time.time() * 1000))
    time.sleep(1.1)
    for i in (3, 4):
        write_deltalake(p, part(i), mode="append")
    return p, cut


def _versions(table: str, *args: str) -> list[int]:
    rc, out, err = run_cli(["history", table, *args, "--json", "-q"])
    assert rc == 0, err
    return [r["version"] for r in json.loads(out)]


def test_history_by_commit_time(written):
    t, cut = written
    assert _versions(t, "--since", cut) == [3, 4]
    assert _versions(t, "--until", cut) == [0, 1, 2]
    assert _versions(t, "--since", "2h") == [0, 1, 2, 3, 4]
    assert _versions(t, "--since", "2h", "--last", "2") == [3, 4]
    assert _versions(t, "--until", cut[:-1], "--utc") == [0, 1, 2]  # no offset, read as UTC under --utc
    assert _versions(t, "--from", "1", "--to", "3") == [1, 2, 3]
    cut_local = dt.datetime.fromisoformat(cut.replace("Z", "+00:00")).astimezone().strftime("%H:%M:%S.%f")
    if dt.datetime.now().astimezone().date() == dt.datetime.fromisoformat(cut.replace("Z", "+00:00")).astimezone().date():
        assert _versions(t, "--since", cut_local[:12]) == [3, 4]  # a time of day, today, local time


def test_range_outside_the_log_is_one_line_and_exit_13(written):
    t, _ = written
    for args in (["--from", "20"], ["--until", "1d"], ["--since", "2999-01-01"]):
        rc, out, err = run_cli(["history", t, *args, "-q"])
        assert rc == int(ExitCode.RANGE_OUTSIDE_LOG) == 13, (args, err)
        assert out == "" and len(err.strip().splitlines()) == 1 and "it retains v0..v4" in err, err
    rc, _, err = run_cli(["history", t, "--since", "1h", "--until", "2h", "-q"])
    assert rc == int(ExitCode.USAGE) and "after --until" in err


def test_every_history_reading_command_takes_the_selection(written, tmp_path):
    t, cut = written
    rc, out, err = run_cli(["stats", t, "--since", cut, "--json", "-q", "--no-evidence"])
    assert rc == 0, err
    doc = json.loads(out)
    assert (doc["fromVersion"], doc["toVersion"]) == (3, 4) and doc["totals"]["commits"] == 2
    rc, out, err = run_cli(["export", t, "--format", "json", "-o", str(tmp_path / "x.json"), "--last", "2", "--json", "-q"])
    assert rc == 0, err
    spans = json.loads((tmp_path / "x.json").read_text())["spans"]
    assert sorted(s["version"] for s in spans if s.get("version") is not None) == [3, 4]
    rc, out, err = run_cli(["replay", t, "--until", cut, "--json", "-q"])
    assert rc == 0, err
    rc, out, err = run_cli(["evidence", t, "--since", "2h", "--json", "-q"])
    assert rc == 0, err
    for cmd in (["replay", t], ["stats", t], ["evidence", t], ["export", t, "-f", "json", "-o", str(tmp_path / "y.json")]):
        rc, out, err = run_cli([*cmd, "--from", "20", "-q"])
        assert rc == 13 and "it retains v0..v4" in err, (cmd, err)
    assert not (tmp_path / "y.json").exists()


def test_the_python_api_takes_the_same_selection(written):
    t, cut = written
    table = Table(t)
    cut_dt = dt.datetime.fromisoformat(cut.replace("Z", "+00:00"))
    assert table.history(since=cut_dt)["version"].to_list() == [3, 4]
    assert table.history(until=cut)["version"].to_list() == [0, 1, 2]
    assert table.history(last=1)["version"].to_list() == [4]
    assert table.select(since="2h", last=2) == VersionRange(3, 4)
    assert table.select() is None
    with pytest.raises(RangeOutsideLog):
        table.history(20)
    assert table.stats_report(since=cut, with_evidence=False).to_dict()["fromVersion"] == 3
    assert os.environ.get("TZ") != "Europe/Berlin"  # _zone put the zone back
