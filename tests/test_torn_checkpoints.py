"""Checkpoints and `_last_checkpoint` caught half-written by another writer.

A table is written by a real engine (deltalake: ten appends, a DELETE, `create_checkpoint()` at
versions 3 and 10); multi-part and V2 (sidecar) checkpoints are written in delta-spark's form by
forensics/synth/checkpoint.py from the same table's state, and, when ../shared is present, real
delta-spark / kernel checkpoints from the corpus are torn too. Each torn file must be named by a
finding, never used, and every answer (snapshot at the latest version and at the checkpoint's,
history) must equal the answer for the same log without the torn file.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from tests.helpers import run_cli

CP = "00000000000000000010.checkpoint.parquet"


def findings(err: str) -> list[str]:
    return [x for x in err.splitlines() if x.startswith(("info:", "warning:", "error:"))]


def answers(t: Path) -> dict:
    """What a user sees: snapshots (latest, at 10, at 5) and history, findings left out."""
    out = {}
    for key, argv in {"latest": ["snapshot"], "v10": ["snapshot", "--version", "10"], "v5": ["snapshot", "--version", "5"],
                      "history": ["history"]}.items():
        rc, text, err = run_cli(argv + [str(t), "--json"])
        assert rc == 0 and "Traceback" not in err, (argv, err)
        doc = json.loads(text)
        if isinstance(doc, dict):
            doc.pop("findings", None)
        out[key] = doc
    return out


def assert_same_as_without(torn: Path, clean: Path, file: str) -> list[str]:
    """The torn log answers as the clean one does, and a finding names `file`; returns the findings."""
    want = answers(clean)
    got = answers(torn)
    assert got == want
    rc, _, err = run_cli(["snapshot", str(torn), "--json"])
    named = [x for x in findings(err) if f"_delta_log/{file}" in x]
    assert rc == 0 and named, err
    assert "Traceback" not in err
    return named


@pytest.fixture(scope="module")
def rs_table(tmp_path_factory) -> Path:
    """Written by delta-rs; its own checkpoints at 3 and 10 and its `_last_checkpoint`."""
    import deltalake
    import pyarrow as pa

    t = tmp_path_factory.mktemp("rs") / "t"
    for i in range(10):
        deltalake.write_deltalake(str(t), pa.table({"id": [i, i + 100], "p": [f"d{i % 3}"] * 2}), partition_by=["p"], mode="append")
        if i == 3:
            deltalake.DeltaTable(str(t)).create_checkpoint()
        if i == 6:
            deltalake.DeltaTable(str(t)).delete("id = 2")
    deltalake.DeltaTable(str(t)).create_checkpoint()
    names = sorted(p.name for p in (t / "_delta_log").iterdir())
    assert "00000000000000000003.checkpoint.parquet" in names and CP in names
    return t


def copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def state_actions(t: Path, upto: int) -> list[dict]:
    """The table's state at `upto` as checkpoint actions (protocol, metaData, active adds),
    replayed from the JSON commits with the json module: what a checkpoint writer would write."""
    protocol = metadata = None
    adds: dict[str, dict] = {}
    for v in range(upto + 1):
        for line in (t / "_delta_log" / f"{v:020d}.json").read_text().splitlines():
            obj = json.loads(line)
            if "protocol" in obj:
                protocol = obj
            elif "metaData" in obj:
                metadata = obj
            elif "add" in obj:
                adds[obj["add"]["path"]] = obj
            elif "remove" in obj:
                adds.pop(obj["remove"]["path"], None)
    return [protocol, metadata, *adds.values()]


def with_multipart(rs_table: Path, dst: Path, parts: int = 3) -> tuple[Path, list[Path]]:
    from forensics.synth.checkpoint import write_multipart_checkpoint

    t = copy(rs_table, dst)
    (t / "_delta_log" / CP).unlink()
    files = write_multipart_checkpoint(t / "_delta_log", 10, state_actions(t, 10), parts)
    return t, files


def with_v2(rs_table: Path, dst: Path) -> tuple[Path, Path, list[Path]]:
    from forensics.synth.checkpoint import write_v2_checkpoint

    t = copy(rs_table, dst)
    (t / "_delta_log" / CP).unlink()
    manifest, sidecars = write_v2_checkpoint(t / "_delta_log", 10, state_actions(t, 10), sidecars=2)
    return t, manifest, sidecars


def cut(p: Path, keep: int) -> None:
    p.write_bytes(p.read_bytes()[:keep])


def cut_points(p: Path) -> list[int]:
    """Where a write can be caught: nothing yet, the magic only, a seeded random point, all but the footer."""
    n = p.stat().st_size
    rng = random.Random(p.name)
    return [0, 4, rng.randrange(5, n - 8), n - 8]


# --------------------------------------------------------------------------------------
# classic single-file (delta-rs's own)
# --------------------------------------------------------------------------------------


def test_whole_checkpoints_are_used(rs_table, tmp_path, spark):
    """The control: untorn, every form is the base at 10 and gives the JSON-replay answer."""
    clean = copy(rs_table, tmp_path / "clean")
    (clean / "_delta_log" / CP).unlink()
    base = answers(clean)["latest"]
    assert base["baseCheckpoint"] == 3
    for t in (copy(rs_table, tmp_path / "classic"), with_multipart(rs_table, tmp_path / "multi")[0], with_v2(rs_table, tmp_path / "v2")[0]):
        rc, out, err = run_cli(["snapshot", str(t), "--json"])
        doc = json.loads(out)
        assert rc == 0 and doc["baseCheckpoint"] == 10 and not [x for x in findings(err) if "checkpoint" in x], err
        assert sorted(f["path"] for f in doc["files"]) == sorted(f["path"] for f in base["files"])


def test_torn_classic_checkpoint_falls_back(rs_table, tmp_path, spark):
    clean = copy(rs_table, tmp_path / "clean")
    (clean / "_delta_log" / CP).unlink()
    whole = (rs_table / "_delta_log" / CP).read_bytes()
    for i, keep in enumerate(cut_points(rs_table / "_delta_log" / CP)):
        t = copy(rs_table, tmp_path / f"torn{i}")
        cut(t / "_delta_log" / CP, keep)
        named = assert_same_as_without(t, clean, CP)
        assert "checkpoint.unreadable" in named[0] and "version 10" in named[0], named
    # The writer finishes: the same table now answers from checkpoint 10 (nothing torn was cached).
    (t / "_delta_log" / CP).write_bytes(whole)
    rc, out, err = run_cli(["snapshot", str(t), "--json"])
    assert rc == 0 and json.loads(out)["baseCheckpoint"] == 10 and "checkpoint.unreadable" not in err


# --------------------------------------------------------------------------------------
# multi-part (delta-spark form)
# --------------------------------------------------------------------------------------


def test_multipart_with_a_missing_part(rs_table, tmp_path, spark):
    clean = copy(rs_table, tmp_path / "clean")
    (clean / "_delta_log" / CP).unlink()
    t, parts = with_multipart(rs_table, tmp_path / "t")
    parts[1].unlink()
    named = assert_same_as_without(t, clean, parts[0].name)
    assert "checkpoint.incomplete" in named[0] and "2 of 3 parts" in named[0]


@pytest.mark.parametrize("which", [0, 1, 2])
def test_multipart_with_a_torn_part(rs_table, tmp_path, spark, which):
    clean = copy(rs_table, tmp_path / "clean")
    (clean / "_delta_log" / CP).unlink()
    t, parts = with_multipart(rs_table, tmp_path / "t")
    keep = cut_points(parts[which])[which + 1]  # a different cut for each part
    cut(parts[which], keep)
    named = assert_same_as_without(t, clean, parts[which].name)
    assert "checkpoint.unreadable" in named[0]


# --------------------------------------------------------------------------------------
# V2 with sidecars (delta-spark form)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["sidecar_missing", "sidecar_empty", "sidecar_cut", "manifest_cut"])
def test_v2_checkpoint_with_a_torn_part(rs_table, tmp_path, spark, damage):
    clean = copy(rs_table, tmp_path / "clean")
    (clean / "_delta_log" / CP).unlink()
    t, manifest, sidecars = with_v2(rs_table, tmp_path / "t")
    if damage == "sidecar_missing":
        sidecars[1].unlink()
        name = f"_sidecars/{sidecars[1].name}"
    elif damage == "sidecar_empty":
        cut(sidecars[0], 0)
        name = f"_sidecars/{sidecars[0].name}"
    elif damage == "sidecar_cut":
        cut(sidecars[1], sidecars[1].stat().st_size - 8)
        name = f"_sidecars/{sidecars[1].name}"
    else:
        cut(manifest, manifest.stat().st_size // 2)
        name = manifest.name
    named = assert_same_as_without(t, clean, name)
    assert any(code in named[0] for code in ("checkpoint.unreadable", "checkpoint.sidecar_missing")), named


def test_v2_json_manifest_cut_between_lines(rs_table, tmp_path, spark):
    """A JSON V2 manifest cut at a line boundary parses cleanly but lacks protocol/metaData:
    still torn (a checkpoint always carries both)."""
    clean = copy(rs_table, tmp_path / "clean")
    (clean / "_delta_log" / CP).unlink()
    t = copy(clean, tmp_path / "t")
    manifest = t / "_delta_log" / "00000000000000000010.checkpoint.6374b053-df23-479b-b2cf-c9c550132b49.json"
    lines = [json.dumps({"checkpointMetadata": {"version": 10}})] + [json.dumps(a) for a in state_actions(t, 10)]
    manifest.write_text("\n".join(lines[:1] + lines[3:]) + "\n")  # the adds, but protocol and metaData not yet
    named = assert_same_as_without(t, clean, manifest.name)
    assert "checkpoint.unreadable" in named[0] and "protocol and metaData" in named[0]


# --------------------------------------------------------------------------------------
# _last_checkpoint
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("content,code", [
    ("half", "last_checkpoint.corrupt"),
    ("garbage", "last_checkpoint.corrupt"),
    ("missing", "last_checkpoint.dangling"),
    ("incomplete", "last_checkpoint.dangling"),
])
def test_last_checkpoint_torn_or_pointing_at_nothing_whole(rs_table, tmp_path, spark, content, code):
    clean = copy(rs_table, tmp_path / "clean")
    (clean / "_delta_log" / "_last_checkpoint").unlink()
    t = copy(rs_table, tmp_path / "t")
    lc = t / "_delta_log" / "_last_checkpoint"
    real = lc.read_bytes()
    if content == "half":
        lc.write_bytes(real[: len(real) // 2])
    elif content == "garbage":
        lc.write_bytes(b"\x00\x00\x00\x00{\"vers")
    elif content == "missing":
        lc.write_text(json.dumps({"version": 12, "size": 13}))
    else:
        # _last_checkpoint names a 3-part checkpoint at 12 of which one part was written so far;
        # the clean log has neither (nor the commits 11 and 12 it would need).
        clean_v = clean / "_delta_log"
        for v in (11, 12):
            for d in (t / "_delta_log", clean_v):
                shutil.copy(rs_table / "_delta_log" / f"{10:020d}.json", d / f"{v:020d}.json")
        from forensics.synth.checkpoint import write_multipart_checkpoint

        parts = write_multipart_checkpoint(t / "_delta_log", 12, state_actions(t, 12), 3)
        for p in parts[1:]:
            p.unlink()
        lc.write_text(json.dumps({"version": 12, "size": 13, "parts": 3}))
    named = assert_same_as_without(t, clean, "_last_checkpoint")
    assert code in named[0], named
    if content == "incomplete":
        assert "incomplete" in named[0]


# --------------------------------------------------------------------------------------
# real delta-spark / kernel checkpoints from ../shared (skipped when absent)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("table,victim", [
    ("golden-multi-part-checkpoint", "00000000000000000001.checkpoint.0000000002.0000000002.parquet"),
    ("krs-v2-checkpoints-parquet-with-sidecars", "_sidecars/00000000000000000006.checkpoint.0000000002.0000000002.4367b29c-0e87-447f-8e81-9814cc01ad1f.parquet"),
    ("krs-v2-checkpoints-json-with-sidecars", "00000000000000000006.checkpoint.2a15d0c6-8b11-4a98-bab4-957905d62f7f.json"),
])
def test_real_engine_checkpoints_torn(shared_dir, tmp_path, spark, table, victim):
    src = shared_dir / "corpus" / "tables" / table
    if not (src / "_delta_log" / victim).exists():
        pytest.skip(f"{table} has no {victim}")
    t = copy(src, tmp_path / "t")
    f = t / "_delta_log" / victim
    cut(f, f.stat().st_size // 2)
    clean = copy(src, tmp_path / "clean")
    v = int(Path(victim).name[:20])
    for p in list((clean / "_delta_log").rglob(f"{v:020d}.checkpoint.*")):
        p.unlink()  # the whole checkpoint at v, every part and sidecar: the log without it
    got, want = {}, {}
    for key, argv in {"latest": ["snapshot"], "history": ["history"]}.items():
        for d, dst in ((t, got), (clean, want)):
            rc, out, err = run_cli(argv + [str(d), "--json"])
            assert rc == 0 and "Traceback" not in err, err
            doc = json.loads(out)
            if isinstance(doc, dict):
                doc.pop("findings", None)
            dst[key] = doc
            if d is t and key == "latest":
                assert any(victim in x for x in findings(err)), err
    assert got == want
