"""Times for people: one formatter, `--utc` on every command that shows times, no raw epoch
milliseconds in human output (JSON keeps them)."""

from __future__ import annotations

import datetime as dt
import io
import os
import re
from contextlib import redirect_stderr, redirect_stdout

import pytest
from hypothesis import given
from hypothesis import strategies as st

from forensics.cli.main import main
from forensics.times import fmt_duration, fmt_time, iso_utc, parse_time

EPOCH_MS = re.compile(r"(?<!\d)1[5-9]\d{11}(?!\d)")  # 2017..2033 in epoch milliseconds


@given(st.integers(min_value=10**11, max_value=4_102_444_800_000))  # digits below 10^11 read as seconds
def test_iso_and_parse_round_trip(ms):
    assert parse_time(iso_utc(ms)) == ms
    assert parse_time(str(ms)) == ms
    assert fmt_time(ms, True).endswith("Z")


def test_parse_time_reads_offsets_and_local_time():
    assert parse_time("2024-06-20T10:00:00+02:00") == parse_time("2024-06-20T08:00:00Z")
    local = dt.datetime(2024, 6, 20, 10, 0).astimezone()
    assert parse_time("2024-06-20 10:00:00") == round(local.timestamp() * 1000)
    with pytest.raises(ValueError):
        parse_time("yesterday")


def test_durations_read_as_durations():
    assert [fmt_duration(x) for x in (850, 2_400, 185_000, 7_800_000)] == ["850 ms", "2.4 s", "3 min 5 s", "2 h 10 min"]


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main(list(argv))
    return code, out.getvalue()


def test_utc_flag_and_no_raw_epoch_in_human_output(sample_logs, spark, monkeypatch):
    monkeypatch.delenv("DELTA_FORENSICS_UTC", raising=False)
    a = str(sample_logs / "a-merge-partitions" / "table")
    err = str(sample_logs / "a-merge-partitions" / "error.txt")
    for argv in (["history", a], ["replay", a], ["explain", a, "3"], ["evidence", a], ["stats", a],
                 ["explain-error", a, "--error-file", err]):
        code, out = _cli(*argv, "--utc")
        assert code == 0, argv
        ours = "\n".join(ln for ln in out.splitlines() if "Conflicting commit:" not in ln)  # the engine's own words, quoted
        assert not EPOCH_MS.search(ours), (argv, EPOCH_MS.search(ours))
    _, utc = _cli("history", a, "--utc")
    assert re.search(r"\d\d:\d\d:\d\dZ", utc)
    assert "DELTA_FORENSICS_UTC" not in os.environ  # --utc holds for its own run: the next call is local again
    _, local = _cli("history", a)
    assert re.search(r"\d\d:\d\d:\d\d[+-]\d{4}", local)
    code, js = _cli("history", a, "--json", "--utc")
    assert code == 0 and EPOCH_MS.search(js)  # JSON keeps epoch milliseconds
    monkeypatch.setenv("DELTA_FORENSICS_UTC", "yes")  # a caller's own setting survives a --utc run
    _cli("history", a, "--utc")
    assert os.environ["DELTA_FORENSICS_UTC"] == "yes"


def test_every_command_takes_utc():
    """`--utc` on every command, so a script can pass it to all of them (those that print no times say so)."""
    from forensics.cli.main import build_parser, command_modules

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")  # noqa: SLF001
    names = set(sub.choices)
    assert len(names) == len(command_modules()) >= 14
    missing = [n for n, p in sub.choices.items() if not any("--utc" in a.option_strings for a in p._actions)]  # noqa: SLF001
    assert not missing, missing
