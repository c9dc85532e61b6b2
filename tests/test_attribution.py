"""One attribution per aborted attempt, on tables deltalake (delta-rs) wrote with real races, locally
and on the local S3 server: every answer the tool gives about the failed job names the engine's
winner among its candidates, never one wrong answer, and every command tells the same story.

The truth is what the engine did (tests/races.py records it as the race runs), never our reading.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from forensics import Table
from tests.helpers import as_cloned, run_cli
from tests.races import (Race, append_waits_then_loses, compaction_loses, reingested_batch_loses, two_partition_race,
                         update_broader_than_its_rows_loses)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import servers  # noqa: E402

pytestmark = pytest.mark.usefixtures("spark")
s3_server = servers.s3_server


def _attempt_of(ev, partition: str | None):
    for a in ev.attempts:
        if partition is None or any(p.get("date") == partition for p in a.partitions):
            return a
    raise AssertionError(f"no attempt in {partition}: {[a.partitions for a in ev.attempts]}")


def _check_attribution(t: Table, race: Race) -> None:
    ev = t.evidence()
    assert len(ev.attempts) == len(race.losers)
    for L in race.losers:
        a = _attempt_of(ev, L.partition)
        got = [(c.winning_version, c.exception) for c in a.candidates]
        assert (L.winner, L.exception) in got, (L, got, a.why)
        assert not (len(got) == 1 and got[0] != (L.winner, L.exception)), "one wrong answer"
        assert all(c.winning_version > 0 and c.winning_version > c.read_versions[0] for c in a.candidates)  # v0 never a winner
        # the single-valued fields are the first candidate's
        assert (a.winning_version, a.likely_exception) == got[0]
        assert a.ambiguous == (len(got) > 1)
        # nothing it could not have read: no streaming story on a table no streaming query wrote
        assert not any("streaming" in c.hypothesis for c in a.candidates), a.why
        # the same attribution in `explain` of every candidate winner (with the exception of the
        # best-ranked candidate naming that winner)
        best: dict[int, str] = {}
        for c in a.candidates:
            best.setdefault(c.winning_version, c.exception)
        for w, exc in best.items():
            d = [x for x in t.explain(w).defeated if x.source.startswith("orphan files")]
            assert any(x.exception == exc and x.wrote == tuple(a.partitions) for x in d), (w, exc, d)


@pytest.fixture(scope="module")
def race(tmp_path_factory) -> Race:
    return two_partition_race(str(tmp_path_factory.mktemp("race") / "t"))


def test_the_files_show_what_each_loser_did(race):
    t = Table(race.uri)
    ev = t.evidence()
    assert ev.clock.trusted
    kinds = {L.partition: _attempt_of(ev, L.partition).content.kind for L in race.losers}
    assert kinds == {"2024-06-19": "update", "2024-06-20": "delete"}
    upd = _attempt_of(ev, "2024-06-19")
    assert upd.content.read_versions == (3, 3)  # the four files it rewrote were live together only at v3
    assert upd.candidates[0].operation == "UPDATE" and upd.candidates[0].from_content


def test_every_attempt_is_attributed_to_its_real_winner(race):
    _check_attribution(Table(race.uri), race)


def test_explain_error_ties_the_text_to_its_attempt(race):
    t = Table(race.uri)
    for L in race.losers:
        e = t.explain_error(L.text)
        assert e.report.exception == L.exception
        cands = e.match.candidates if e.match.ambiguous else [e.winning_version]
        assert L.winner in cands, e.why
        assert 0 not in cands
        # told what the job knew, it is exactly right and its advice stays in the job's own partition
        told = t.explain_error(L.text, read_version=L.read_version, sql=L.sql)
        assert told.winning_version == L.winner and told.reproduced, told.why
        other = {x.partition for x in race.losers} - {L.partition}
        for adv in told.advice:
            assert not any(p and p in (adv.example or "") for p in other), adv
        # explain V --error-file gives the same answer as explain-error TABLE
        err = Path(race.uri).parent / f"err-{L.winner}.txt"
        err.write_text(L.text)
        for c in set(cands):
            d = [x for x in t.explain(c, error_file=str(err)).defeated if x.source.startswith("error text")]
            assert [x.loser_of for x in d] == ([c] if c == e.winning_version else []), (c, e.winning_version, d)


def test_evidence_in_80_columns_says_one_of(race, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(["evidence", race.uri, "-q"])
    assert code == 0
    assert all(len(line) <= 80 for line in out.splitlines()), max(out.splitlines(), key=len)
    assert "winner: v4, ConcurrentAppendException" in out and "winner: v8, ConcurrentAppendException" in out
    code, out, _ = run_cli(["evidence", race.uri, "--json", "-q"])
    j = json.loads(out)
    for a in j["attempts"]:
        assert a["candidates"] and a["candidates"][0]["rank"] == 1
        assert a["winningVersion"] == a["candidates"][0]["winningVersion"]
        assert a["ambiguous"] == (len(a["candidates"]) > 1)


def test_a_compaction_that_lost_is_read_from_its_rows(tmp_path):
    race = compaction_loses(str(tmp_path / "t"))
    t = Table(race.uri)
    (a,) = t.evidence().attempts
    assert a.content.kind == "compaction"
    assert a.content.read_versions == (3, 3)
    assert (a.winning_version, a.likely_exception) == (4, "ConcurrentDeleteReadException"), a.why
    assert a.candidates[0].operation == "OPTIMIZE"


def test_a_read_version_weighs_by_how_long_it_was_the_newest(tmp_path):
    """A job read v2 and lost to an UPDATE two seconds later (v3); v0-v2 landed milliseconds apart.
    Its files show new rows only, so every read version names its own winner: counted, reading v0
    or v1 (beaten by v2) outnumbers reading v2. Weighed by how long each version was the newest
    before the job's file, the engine's winner comes first, and the basis says why."""
    race = append_waits_then_loses(str(tmp_path / "t"))
    (L,) = race.losers
    (a,) = Table(race.uri).evidence().attempts
    first = a.candidates[0]
    assert (first.winning_version, first.read_versions) == (L.winner, (L.read_version, L.read_version)), a.why
    earlier = [c for c in a.candidates if c.winning_version == L.read_version]
    assert earlier and earlier[0].support > first.support  # a count of read versions would have put it first
    assert first.weight > earlier[0].weight
    assert any("newest before its first file" in b for b in a.attribution.basis), a.attribution.basis
    assert (L.winner, L.exception) in [(c.winning_version, c.exception) for c in a.candidates]


def test_the_rows_an_update_touched_bound_its_condition_per_partition(tmp_path):
    """An UPDATE of `date = '2024-06-20' OR id < 15` touched ids 0-14 and 20-29; the winner wrote id
    27 into 2024-06-18. One range over all touched ids (0..29) would match it and replay a
    ConcurrentAppend; a range per partition does not, and the engine's DeleteRead comes first."""
    from forensics.evidence.content import read_content

    race = update_broader_than_its_rows_loses(str(tmp_path / "t"))
    (L,) = race.losers
    t = Table(race.uri)
    ev = t.evidence()
    # The rows its files hold, read together (the attempt grouping may split files written more than
    # a few milliseconds apart on a loaded machine): their condition, replayed, is the engine's answer.
    reading = read_content(t.log, t.state.lifetimes, [f for a in ev.attempts for f in a.files], L.read_version, None, ("date",))
    assert reading.kind == "update" and " OR " in reading.predicate, reading
    r = t.whatif(read_version=L.read_version, operation="UPDATE", predicate=reading.predicate)
    assert (r.verdict, r.winning_version, r.exception) == ("abort", L.winner, L.exception), r
    if len(ev.attempts) == 1:  # the files formed one attempt: its first candidate is that answer
        first = ev.attempts[0].candidates[0]
        assert (first.winning_version, first.exception) == (L.winner, L.exception), ev.attempts[0].why
        assert t.explain_error(L.text).winning_version == L.winner


def test_rows_equal_to_old_ones_do_not_bound_what_it_read(tmp_path):
    """A stale append of rows the table already holds (a re-ingested batch) lost to a DELETE. Its
    rows match a committed file's, but a rewrite of that file would have dropped most of its rows:
    the rows are no rewrite, so they bound neither its operation nor its read version, and the
    engine's winner is among the candidates (the attempt is not placed after it)."""
    race = reingested_batch_loses(str(tmp_path / "t"))
    _check_attribution(Table(race.uri), race)
    (a,) = Table(race.uri).evidence().attempts
    assert a.content.kind == "weak" and a.content.read_versions is None, a.content.why
    assert "INSERT" in a.content.operations


def test_file_times_untrusted_the_rows_still_place_it(race, tmp_path):
    """A copy (git clone, restore) loses the file times: the rows still say what each loser did and
    the versions it can have read."""
    import time

    dst = as_cloned(Path(race.uri), tmp_path / "copy", at=time.time() + 3600)
    t = Table(str(dst))
    assert not t.evidence().clock.trusted
    _check_attribution(t, Race(str(dst), {}, race.losers))


def test_on_s3_with_safe_commits(s3_server):
    s3_server.create_bucket("blame")
    so = {**s3_server.options(), "AWS_CONDITIONAL_PUT": "etag"}
    race = two_partition_race("s3://blame/orders", so)
    t = Table(race.uri, storage_options=so)
    _check_attribution(t, race)
    kinds = sorted(a.content.kind for a in t.evidence().attempts)
    assert kinds == ["delete", "update"]  # the rows were read from the store


def test_replay_stats_and_the_report_tell_the_same_attribution(race, tmp_path):
    """One Table: replay's attempt rows, stats' counts and pair matrix, and the HTML post-mortem all
    carry the evidence's attribution (the same winners, the same exceptions)."""
    t = Table(race.uri)
    ev = {tuple(sorted(p.get("date") for p in a.partitions)): a for a in t.evidence().attempts}
    silent = t.silent_log()
    assert silent.no_read_version is not None and silent.no_read_version.commits > 0  # delta-rs writes none for appends
    assert len(silent.attempts) == len(race.losers)
    for row in silent.attempts:
        a = ev[tuple(sorted(p.split("=", 1)[1] for p in row.partitions))]
        assert (row.winning_version, row.exception, row.ambiguous) == (a.winning_version, a.likely_exception, a.ambiguous)
        assert row.operation == a.candidates[0].operation and row.operation_from == "content"
    st = t.stats_report().to_dict()
    assert st["totals"]["abortedConflicts"] == len(race.losers)
    assert st["totals"]["abortedKnownWinner"] + st["totals"]["abortedAmbiguous"] == len(race.losers)
    files, _ = t.export("html", tmp_path / "report.html")
    html = files[0].read_text()
    for L in race.losers:
        assert f"v{L.winner}" in html and L.exception in html


async def test_the_tui_explain_pane_tells_the_same_attribution(race):
    """The TUI's explain pane of each winner names the attempt it beat, as `explain` does."""
    from tests.test_tui import SIZE, NoSpark, plain, settle
    from tui.app import ForensicsApp
    from tui.widgets.explain import ExplainPane

    t = Table(race.uri)  # parses with the test's Spark and fills this test's cache
    for L in race.losers:
        lines = [line for _, line in t.explain(L.winner).lines() if line.strip()]
        beat = next(line for line in lines if "aborted transaction" in line)
        app = ForensicsApp(race.uri, utc=True, spark_factory=NoSpark())
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("g", "colon", *str(L.winner), "enter", "e")
            await settle(pilot, until=lambda: "explaining" not in plain(app.query_one(ExplainPane)))
            text = " ".join(plain(app.query_one(ExplainPane)).split())
            assert " ".join(beat.split())[:60] in text, (beat, text[:600])
            assert f"read v{L.read_version}" in text


def test_attributions_are_kept_with_the_parse_and_verbose_says_why(race, monkeypatch):
    """README: attributions are computed once per table version and kept in the cache (a second run
    reads them back, the same answer as a --no-cache run); `evidence --verbose` adds the reasoning."""
    cache = Path(os.environ["DELTA_FORENSICS_CACHE_DIR"])
    code, first, _ = run_cli(["evidence", race.uri, "--json", "-q"])
    assert code == 0
    kept = list(cache.glob("tables/*/attributions/*.json"))
    assert len(kept) == len(race.losers)
    stamp = {p: p.stat().st_mtime_ns for p in kept}
    code, second, _ = run_cli(["evidence", race.uri, "--json", "-q"])
    assert code == 0 and second == first
    assert {p: p.stat().st_mtime_ns for p in kept} == stamp  # read back, not recomputed
    code, fresh, _ = run_cli(["evidence", race.uri, "--json", "-q", "--no-cache"])
    assert code == 0 and fresh == first
    _, plain, _ = run_cli(["evidence", race.uri, "-q"])
    _, verbose, _ = run_cli(["evidence", race.uri, "-q", "--verbose"])
    assert "why: inferred" not in plain and verbose.count("why: inferred") == len(race.losers)


def _commit_later(table: Path, version: int, by_ms: int) -> None:
    """Move commit `version` `by_ms` later, as if it had landed then: its commitInfo timestamp, its
    actions' times and the modification times of the files it added and of its commit file."""
    log = table / "_delta_log" / f"{version:020d}.json"
    out = []
    for line in log.read_text().splitlines():
        action = json.loads(line)
        for kind, key in (("commitInfo", "timestamp"), ("add", "modificationTime"), ("remove", "deletionTimestamp")):
            if kind in action and action[kind].get(key) is not None:
                action[kind][key] += by_ms
        if "add" in action:
            f = table / action["add"]["path"]
            t = f.stat().st_mtime + by_ms / 1000
            os.utime(f, (t, t))
        out.append(json.dumps(action))
    t = log.stat().st_mtime + by_ms / 1000
    log.write_text("\n".join(out) + "\n")
    os.utime(log, (t, t))


def test_a_winner_long_after_the_attempts_last_file_is_still_a_candidate(tmp_path):
    """A job's commit check can come long after its last file (driver work, tasks that write
    nothing: a delta-spark MERGE whose only file was written by a task the slow one did not hold up).
    The first commit after the last file could always have beaten it, however late it landed."""
    race = compaction_loses(str(tmp_path / "t"))
    _commit_later(Path(race.uri), 4, 180_000)  # the DELETE that beat the compaction lands 3 minutes later
    t = Table(race.uri)
    assert t.evidence().clock.trusted
    (a,) = t.evidence().attempts
    got = [(c.winning_version, c.exception) for c in a.candidates]
    assert (4, "ConcurrentDeleteReadException") in got, (got, a.why)
    assert any("the first one" in b for b in a.attribution.basis), a.attribution.basis
