"""Replay in blocks (forensics/replay/verdict.py REPLAY_BLOCK): the same verdicts as one pass, and
what no later window needs is let go (a 1,000,000-commit log must not hold every write set)."""

from __future__ import annotations

import pytest

from forensics.log.delta_log import DeltaLog
from forensics.replay import verdict
from forensics.replay.windows import replay_table


@pytest.fixture()
def busy_log(sample_logs, spark):
    t = sample_logs / "busy" / "table"
    if not t.exists():
        pytest.skip("sample_logs/busy not generated yet")
    return str(t)


def test_blocks_give_the_one_pass_verdicts_and_let_go_of_what_is_behind(busy_log, monkeypatch):
    whole_log = DeltaLog.open(busy_log)
    whole = replay_table(whole_log)
    assert len(whole.verdicts) > 12
    held_whole = len(whole_log.derived["write_set"])

    monkeypatch.setattr(verdict, "REPLAY_BLOCK", 4)
    blocked_log = DeltaLog.open(busy_log)
    blocked = replay_table(blocked_log)
    assert blocked.to_dict() == whole.to_dict()
    # What is still held is what the last block reached back to: nothing older.
    last = [blocked.verdicts[v] for v in sorted(blocked.verdicts)[-4:]]
    reach = min(c.version if c.read_version is None else min(c.version, c.read_version + 1) for c in last)
    held = blocked_log.derived["write_set"]
    assert len(held) < held_whole
    assert all(v >= reach for v in held), (reach, sorted(held))

def test_what_the_caller_built_before_is_kept(busy_log, monkeypatch):
    log = DeltaLog.open(busy_log)
    first = min(log.versions)
    from forensics.sets.commit_sets import write_set

    write_set(log, log.record(first))  # the caller's own question, asked before the replay
    monkeypatch.setattr(verdict, "REPLAY_BLOCK", 4)
    replay_table(log)
    assert first in log.derived["write_set"]
