"""The synthetic delta-spark-format log: format against real delta-spark commits, stale
windows against the conflict rules (re-derived here from the log), checkpoints, delta-rs."""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from forensics.errors import ForensicsError
from forensics.synth import SparkLogWriter, SynthConfig, TableDirNotEmpty, synthesize
from forensics.synth.checkpoint import last_checkpoint_checksum
from forensics.synth.opparams import quirk_commit_info_json

N = 600


@pytest.fixture(scope="module")
def synth_log(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("synth") / "t"
    synthesize(out, SynthConfig(commits=N, partitions=6, stale=0.15, checkpoint_interval=100, seed=3))
    return out


@pytest.fixture(scope="module")
def synth_ws(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("synthws") / "t"
    synthesize(out, SynthConfig(commits=400, partitions=4, stale=0.2, checkpoint_interval=0, seed=5,
                                engine_info="Databricks-Runtime/15.4.x-scala2.12"))
    return out


def _commits(table: Path) -> list[list[dict]]:
    files = sorted((table / "_delta_log").glob("*.json"))
    out = []
    for i, f in enumerate(files):
        assert f.name == f"{i:020d}.json"
        out.append([json.loads(line) for line in f.read_text(encoding="utf-8").split("\n")])
    return out


def _lines(table: Path, version: int) -> list[str]:
    return (table / "_delta_log" / f"{version:020d}.json").read_text(encoding="utf-8").split("\n")


def _first(commits, op):
    for c in commits:
        if c[0]["commitInfo"]["operation"] == op:
            return c
    raise AssertionError(f"no {op} commit")


def _in_order(sub: list[str], full: list[str]) -> bool:
    """The keys of `sub` that `full` has appear in `full`'s order."""
    common = [k for k in sub if k in full]
    return common == [k for k in full if k in common]


def test_every_line_is_one_json_action(synth_log):
    commits = _commits(synth_log)
    assert len(commits) == N
    for v, actions in enumerate(commits):
        assert all(len(a) == 1 for a in actions)
        assert "commitInfo" in actions[0], f"v{v}: commitInfo is not first"
        raw = _lines(synth_log, v)
        assert all(" " not in line.split('"stats"')[0][:20] for line in raw)  # compact JSON


@pytest.mark.parametrize(
    "table,version,op",
    [
        ("golden-basic-with-inserts-merge", 1, "MERGE"),
        ("golden-basic-with-inserts-updates", 1, "UPDATE"),
        ("golden-commit-info-containing-arbitrary-operationParams-types", 1, "WRITE"),
        ("golden-commit-info-containing-arbitrary-operationParams-types", 2, "OPTIMIZE"),
    ],
)
def test_commit_info_structure_matches_real_delta_spark(shared_dir, synth_log, table, version, op):
    real_lines = (shared_dir / "corpus/tables" / table / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    real = [json.loads(x) for x in real_lines]
    ours = _first(_commits(synth_log), op)
    rci, oci = real[0]["commitInfo"], ours[0]["commitInfo"]
    assert rci["operation"] == oci["operation"] == op
    assert list(rci) == list(oci), "commitInfo keys / Jackson order differ"
    rp, op_ = rci["operationParameters"], oci["operationParameters"]
    assert _in_order(list(op_), list(rp)) and set(rp) <= set(op_) | {"predicate"}
    for k in set(rp) & set(op_):
        assert type(rp[k]) is type(op_[k]), k  # strings stay strings, booleans stay raw
        if isinstance(rp[k], str) and rp[k][:1] == "[":
            assert isinstance(json.loads(op_[k]), list), f"{k} must be JSON text of a list"
    if "predicate" in rp and rp["predicate"] not in ("[]",):
        for pred in json.loads(rp["predicate"]) + json.loads(op_["predicate"]):
            assert re.search(r"#\d+", pred), "Catalyst simpleString carries expression ids"
    # file actions: same key order as the real ones
    for kind in ("add", "remove"):
        r = [a[kind] for a in real if kind in a]
        o = [a[kind] for a in ours if kind in a]
        if r and o:
            assert _in_order(list(o[0]), list(r[0])) and set(r[0]) <= set(o[0]) | {"stats"}


def test_create_and_metadata_key_order(shared_dir, synth_log):
    real = [json.loads(x) for x in (shared_dir / "corpus/tables/golden-commit-info-containing-arbitrary-operationParams-types"
                                     / "_delta_log/00000000000000000000.json").read_text().splitlines()]
    ours = _commits(synth_log)[0]
    assert [next(iter(a)) for a in ours] == [next(iter(a)) for a in real if "add" not in a]
    assert list(ours[1]["metaData"]) == list(real[1]["metaData"])
    assert list(ours[0]["commitInfo"]["operationParameters"])[:1] == ["partitionBy"]


def test_stale_share_and_windows_obey_conflict_rules(synth_log, synth_ws):
    for table, share, ws in ((synth_log, 0.15, False), (synth_ws, 0.2, True)):
        commits = _commits(table)
        stale = [v for v, c in enumerate(commits) if c[0]["commitInfo"].get("readVersion", v - 1) < v - 1]
        assert abs(len(stale) / (len(commits) - 1) - share) < 0.03
        active_at: list[set[str]] = []
        active: set[str] = set()
        for c in commits:
            for a in c:
                if "add" in a:
                    active.add(a["add"]["path"])
                elif "remove" in a:
                    active.discard(a["remove"]["path"])
            active_at.append(set(active))
        for v in stale:
            ci = commits[v][0]["commitInfo"]
            r = ci["readVersion"]
            window = commits[r + 1 : v]
            assert not any("metaData" in a for w in window for a in w), f"v{v}: metadata winner aborts (conflict-rules §5.2)"
            removes = [a["remove"]["path"] for a in commits[v] if "remove" in a]
            assert set(removes) <= active_at[r], f"v{v} removes files not in its snapshot"
            win_removed = {a["remove"]["path"] for w in window for a in w if "remove" in a}
            assert not set(removes) & win_removed, f"v{v}: delete-read/delete-delete (conflict-rules §5.7/5.8)"
            op = ci["operation"]
            if op in ("DELETE", "UPDATE", "MERGE"):
                m = re.search(r"date#\d+ = (\d{4}-\d\d-\d\d)", ci["operationParameters"]["predicate"])
                assert m, ci["operationParameters"]
                day = m.group(1)
                for w in window:
                    blind = w[0]["commitInfo"].get("isBlindAppend") is True
                    for a in w:
                        kind = next(iter(a))
                        if kind in ("add", "remove") and a[kind]["partitionValues"]["date"] == day:
                            assert kind == "add" and blind and ws, f"v{v} ({op} on {day}) conflicts with a winner"
            elif op == "OPTIMIZE":
                assert ci["isolationLevel"] == "SnapshotIsolation"
            else:
                assert op == "WRITE" and ci["isBlindAppend"] is True


def test_checkpoint_matches_real_schema_and_replay(shared_dir, synth_log):
    real = pq.ParquetFile(shared_dir / "corpus/tables/golden-checkpoint/_delta_log/00000000000000000010.checkpoint.parquet")
    ours = pq.ParquetFile(synth_log / "_delta_log" / f"{500:020d}.checkpoint.parquet")
    assert ours.schema_arrow.names == real.schema_arrow.names
    for name in real.schema_arrow.names:
        rt, ot = real.schema_arrow.field(name).type, ours.schema_arrow.field(name).type
        assert [f.name for f in rt] == [f.name for f in ot], name
    rows = ours.read().to_pylist()
    adds = {r["add"]["path"] for r in rows if r["add"]}
    active: set[str] = set()
    for c in _commits(synth_log)[:501]:
        for a in c:
            if "add" in a:
                active.add(a["add"]["path"])
            elif "remove" in a:
                active.discard(a["remove"]["path"])
    assert adds == active
    last = json.loads((synth_log / "_delta_log/_last_checkpoint").read_text())
    assert last["version"] == 500 and last["size"] == len(rows) and last["numOfAddFiles"] == len(adds)
    golden_last = json.loads((shared_dir / "corpus/tables/golden-checkpoint/_delta_log/_last_checkpoint").read_text())
    assert last_checkpoint_checksum(golden_last) == golden_last["checksum"]
    assert last["checksum"] == last_checkpoint_checksum(last)
    assert list(last) == list(golden_last) and last["checkpointSchema"] == golden_last["checkpointSchema"]


def test_delta_rs_opens_the_synth_log(synth_log):
    from deltalake import DeltaTable

    dt = DeltaTable(str(synth_log))
    assert dt.version() == N - 1
    hist = dt.history(5)
    commits = _commits(synth_log)
    assert [h["operation"] for h in hist] == [commits[v][0]["commitInfo"]["operation"] for v in range(N - 1, N - 6, -1)]
    active = set()
    for c in commits:
        for a in c:
            if "add" in a:
                active.add(a["add"]["path"])
            elif "remove" in a:
                active.discard(a["remove"]["path"])
    assert len(dt.file_uris()) == len(active)


def test_deterministic_for_a_seed(tmp_path):
    digests = []
    for name in ("x", "y"):
        synthesize(tmp_path / name, SynthConfig(commits=150, seed=11, checkpoint_interval=50))
        h = hashlib.sha256()
        for f in sorted((tmp_path / name / "_delta_log").glob("*.json")):
            h.update(f.read_bytes())
        digests.append(h.hexdigest())
    assert digests[0] == digests[1]


def test_quirk_json_matches_observed_error_form(shared_dir):
    line = (shared_dir / "corpus/tables/golden-commit-info-containing-arbitrary-operationParams-types"
            / "_delta_log/00000000000000000002.json").read_text().splitlines()[0]
    text = quirk_commit_info_json(line)
    assert '"operationParameters":{"predicate":[],"zOrderBy":["id"],"clusterBy":[],"auto":false}' in text
    observed = (shared_dir / "corpus/errors/03-concurrent-delete-delete-optimize-databricks.txt").read_text()
    assert '"operationParameters":{"predicate":[],"zOrderBy":[]' in observed  # the same quirk, seen in the wild
    assert text.startswith('{"timestamp":') and '"version"' not in text


def test_writer_refuses_non_empty_dir(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "x").write_text("keep me")
    with pytest.raises(TableDirNotEmpty):
        SparkLogWriter(tmp_path / "t")
    assert (tmp_path / "t" / "x").read_text() == "keep me"


def test_cli_command(tmp_path, capsys):
    from forensics.cli.commands import synth as cmd

    parser = argparse.ArgumentParser()
    cmd.add_parser(parser.add_subparsers())
    args = parser.parse_args(["synth", str(tmp_path / "o"), "--commits", "120", "--json", "--seed", "2"])
    assert cmd.run(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["versions"] == 120 and len(list((tmp_path / "o/_delta_log").glob("*.json"))) == 120
    args = parser.parse_args(["synth", str(tmp_path / "o"), "--commits", "5"])
    with pytest.raises(ForensicsError):
        cmd.run(args)


@pytest.mark.slow
def test_twenty_thousand_commits_fast(tmp_path):
    t0 = time.perf_counter()
    res = synthesize(tmp_path / "big", SynthConfig(commits=20_000, partitions=16, stale=0.1))
    elapsed = time.perf_counter() - t0
    assert res.versions == 20_000 and (tmp_path / "big/_delta_log" / f"{19_999:020d}.json").exists()
    assert elapsed < 45, f"20k commits took {elapsed:.1f}s"
