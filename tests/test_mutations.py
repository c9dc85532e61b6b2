"""Mutation tests: real corpus tables, broken on purpose (on a copy), read by the CLI.

For a sample of diverse tables (classic / multi-part / V2 checkpoints, deletion vectors,
column mapping, compaction, staged commits, delta-rs, Databricks) each mutation is applied to a
fresh copy and `history --json`, `snapshot --json` and `replay --json` run in-process. Whatever
the damage: no traceback (exit 70 never), nothing written to the copy, exit codes from the
README's table, every diagnostic line names a file or a version, and the damage itself is named.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from forensics.log.listing import RE_CHECKPOINT_CLASSIC, RE_CHECKPOINT_MULTI, RE_CHECKPOINT_V2, RE_COMMIT, RE_COMPACTED
from helpers import run_cli, tree_state


DOCUMENTED_EXIT = {0, 1, 2, 3, 4, 5, 6, 7, 8}  # docs/exit-codes.md (70 = a bug)
FINDING_LINE = re.compile(r"^(info|warning|error): [a-z0-9_]+(\.[a-z0-9_]+)+ \((?P<loc>[^)]+)\): \S")
ERROR_LINE = re.compile(r"^delta-forensics: error: .+ \[(?P<loc>[^\]]+)\]$")


# Same as tests/test_readonly.py (kept here so each file runs on its own).


# --------------------------------------------------------------------------------------
# Mutations: each damages a copy and says which name must then appear in the diagnostics
# --------------------------------------------------------------------------------------


def _commits(log: Path) -> list[Path]:
    return sorted(p for p in log.iterdir() if RE_COMMIT.match(p.name))


def _compacted_versions(log: Path) -> set[int]:
    out: set[int] = set()
    for p in log.iterdir():
        m = RE_COMPACTED.match(p.name)
        if m:
            out.update(range(int(m.group(1)), int(m.group(2)) + 1))
    return out


def _middle(log: Path) -> Path | None:
    cs = _commits(log)
    return cs[len(cs) // 2] if len(cs) >= 3 else (cs[0] if cs else None)


def _has_commit_info(p: Path) -> bool:
    return any(line.startswith(b'{"commitInfo"') for line in p.read_bytes().splitlines())


@dataclass
class Expect:
    """What the diagnostics must name after the mutation (None: nothing is required)."""

    token: str | None
    why: str = ""


def truncate_commit(log: Path) -> Expect | None:
    """A partial write of the newest commit: cut inside a line, never on a line boundary."""
    cs = _commits(log)
    if not cs:
        return None
    f = cs[-1]
    data = f.read_bytes()
    cut = len(data) // 2
    while cut > 1 and data[cut - 1 : cut] in (b"\n", b"}"):
        cut -= 1
    f.write_bytes(data[:cut])
    return Expect(f"{f.name}, version {int(f.name[:20])}", "truncated line")


def corrupt_bytes(log: Path) -> Expect | None:
    f = _middle(log)
    if f is None:
        return None
    data = bytearray(f.read_bytes())
    at = max(1, len(data) // 3)
    data[at : at + 12] = b"\xff\x00garb\xfe{\x01\x02\x03"
    f.write_bytes(bytes(data))
    return Expect(f"{f.name}, version {int(f.name[:20])}", "corrupt line")


def delete_commit(log: Path) -> Expect | None:
    cs = _commits(log)
    covered = _compacted_versions(log)
    inner = [c for c in cs[1:-1] if int(c.name[:20]) not in covered]
    if not inner:
        return None
    f = inner[len(inner) // 2]
    f.unlink()
    return Expect(f"version {int(f.name[:20])}", "gap")


def delete_checkpoint_part(log: Path) -> Expect | None:
    """One part of the newest multi-part checkpoint, a V2 checkpoint's sidecar, or a classic checkpoint."""
    multi = sorted(p for p in log.iterdir() if RE_CHECKPOINT_MULTI.match(p.name))
    if multi:
        multi[-1].unlink()
        return Expect("checkpoint.incomplete", "missing part")
    sidecars = sorted((log / "_sidecars").glob("*.parquet")) if (log / "_sidecars").is_dir() else []
    v2 = [p for p in log.iterdir() if RE_CHECKPOINT_V2.match(p.name)]
    if sidecars and v2:
        sidecars[0].unlink()
        return Expect(None, "missing sidecar (reported when a snapshot needs that checkpoint)")
    classic = sorted(p for p in log.iterdir() if RE_CHECKPOINT_CLASSIC.match(p.name))
    if classic:
        classic[-1].unlink()
        lc = log / "_last_checkpoint"
        if lc.exists() and f'"version":{int(classic[-1].name[:20])}' in lc.read_text().replace(" ", ""):
            return Expect("last_checkpoint.dangling", "hint points at a deleted checkpoint")
        return Expect(None, "checkpoint removed; commits still cover the state")
    return None


def corrupt_checkpoint(log: Path) -> Expect | None:
    """The newest checkpoint (one part of it) loses its second half: it is the latest snapshot's base
    in every table this is applied to, so snapshot must say it could not use it."""
    cps = sorted(
        (p for p in log.iterdir() if RE_CHECKPOINT_CLASSIC.match(p.name) or RE_CHECKPOINT_MULTI.match(p.name) or RE_CHECKPOINT_V2.match(p.name)),
        key=lambda p: (int(p.name[:20]), p.name),
    )
    if not cps:
        return None
    f = cps[-1]
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2] + b"\x00garbage")  # footer gone: not Parquet / not JSON any more
    return Expect(f"checkpoint.unreadable (_delta_log/{f.name[:20]}", "checkpoint unusable as a base")


def duplicate_commit(log: Path) -> Expect | None:
    cs = _commits(log)
    if not cs:
        return None
    last = cs[-1]
    new_v = int(last.name[:20]) + 1
    shutil.copyfile(last, log / f"{new_v:020d}.json")
    if _has_commit_info(last):
        return Expect("commit.duplicate", "copied commitInfo")
    return Expect(None, "no commitInfo to compare")


def inject_unknown_action(log: Path) -> Expect | None:
    f = _middle(log)
    if f is None:
        return None
    data = f.read_bytes()
    f.write_bytes(data.rstrip(b"\n") + b'\n{"futureAction":{"x":1}}\n')
    return Expect(f"{f.name}, version {int(f.name[:20])}", "unknown action")


def inject_garbage_line(log: Path) -> Expect | None:
    f = _middle(log)
    if f is None:
        return None
    data = f.read_bytes()
    f.write_bytes(data.rstrip(b"\n") + b"\n#!garbage \x1b[31m not json\n")
    return Expect(f"{f.name}, version {int(f.name[:20])}", "garbage line")


def empty_last_checkpoint(log: Path) -> Expect | None:
    (log / "_last_checkpoint").write_bytes(b"")
    return Expect("last_checkpoint.empty", "empty hint")


MUTATIONS: dict[str, Callable[[Path], Expect | None]] = {
    f.__name__: f
    for f in (
        truncate_commit, corrupt_bytes, delete_commit, delete_checkpoint_part, corrupt_checkpoint,
        duplicate_commit, inject_unknown_action, inject_garbage_line, empty_last_checkpoint,
    )
}

# ~15 diverse tables (corpus/INDEX.md), each with the mutations that matter for it; every
# mutation is applied to several tables.
PLAN: dict[str, list[str]] = {
    "golden-checkpoint": ["truncate_commit", "corrupt_checkpoint", "delete_commit", "empty_last_checkpoint"],
    "golden-multi-part-checkpoint": ["delete_checkpoint_part", "corrupt_checkpoint", "duplicate_commit"],
    "golden-v2-checkpoint-parquet": ["delete_checkpoint_part", "corrupt_checkpoint", "inject_garbage_line"],
    "golden-v2-checkpoint-json": ["corrupt_checkpoint", "truncate_commit"],
    "dspark-table-with-dv-small": ["corrupt_bytes", "duplicate_commit", "inject_unknown_action"],
    "golden-data-reader-timestamp_ntz-id-mode": ["truncate_commit", "inject_garbage_line"],
    "krs-compacted-log-files-table": ["delete_commit", "corrupt_bytes", "truncate_commit"],
    "kjava-catalog-owned-preview": ["inject_unknown_action", "duplicate_commit"],
    "rs-python-0.25.5-checkpoint": ["corrupt_checkpoint", "truncate_commit", "empty_last_checkpoint"],
    "krs-app-txn-checkpoint": ["delete_checkpoint_part", "inject_garbage_line"],
    "rs-table_with_deletion_logs": ["corrupt_checkpoint", "delete_commit", "corrupt_bytes", "inject_unknown_action"],
    "rs-checkpoint-v2-table": ["delete_checkpoint_part", "duplicate_commit", "empty_last_checkpoint"],
    "dspark-transaction_log_schema_evolvability": ["inject_garbage_line", "delete_commit", "corrupt_checkpoint"],
    "rs-checkpoints_vacuumed": ["corrupt_checkpoint", "truncate_commit"],
    "krs-v1-multi-part-partitioned-struct-stats-only": ["delete_checkpoint_part", "corrupt_bytes", "duplicate_commit"],
    "rs-cdf-table-with-cdc-and-dvs": ["inject_unknown_action", "delete_commit", "corrupt_bytes"],
}


def check_stderr(err: str, where: str) -> None:
    assert "Traceback" not in err, where
    for line in err.splitlines():
        if not line.strip():
            continue
        m = FINDING_LINE.match(line) or ERROR_LINE.match(line)
        assert m, f"{where}: a diagnostic line that names neither file nor version: {line!r}"
        assert m.group("loc").strip(), f"{where}: {line!r}"


@pytest.mark.shared
@pytest.mark.parametrize("table", sorted(PLAN))
def test_mutated_copies_are_read_safely(table, shared_dir, tmp_path, spark):
    src = shared_dir / "corpus" / "tables" / table
    if not src.is_dir():
        pytest.skip(f"{table} not in this corpus")
    for name in PLAN[table]:
        t = tmp_path / name / table
        shutil.copytree(src, t, symlinks=True)
        expect = MUTATIONS[name](t / "_delta_log")
        assert expect is not None, f"{name} does not apply to {table}: fix PLAN"
        before = tree_state(t)
        errs = []
        codes = {}
        for cmd in ("history", "snapshot", "replay"):
            rc, out, err = run_cli([cmd, str(t), "--json"])
            where = f"{table} / {name} / {cmd}"
            assert rc != 70, f"{where}: internal error: {err}"
            assert rc in DOCUMENTED_EXIT, f"{where}: exit {rc}"
            check_stderr(err, where)
            if rc == 0:
                json.loads(out)
            else:
                assert not out.strip(), where
                assert len([x for x in err.splitlines() if x.startswith("delta-forensics: error:")]) == 1, where
            errs.append(err)
            codes[cmd] = rc
        assert tree_state(t) == before, f"{table} / {name}: the copy was modified"
        # history never needs a checkpoint or the full state: the rest of the log is always used.
        assert codes["history"] == 0, f"{table} / {name}: {errs[0]}"
        if expect.token:
            assert any(expect.token in e for e in errs), f"{table} / {name}: {expect.why}: {expect.token!r} not named in {errs}"


def test_corrupt_checkpoint_falls_back_and_says_so(shared_dir, tmp_path, spark):
    """golden-checkpoint: checkpoint 10 corrupt, commits 0..14 all present: snapshot falls back to
    the commits, says which file it could not use, and gives the state delta-rs gives."""
    import deltalake
    src = shared_dir / "corpus" / "tables" / "golden-checkpoint"
    t = tmp_path / "t"
    shutil.copytree(src, t)
    expected = sorted(deltalake.DeltaTable(str(src)).get_add_actions(flatten=True).column("path").to_pylist())
    corrupt_checkpoint(t / "_delta_log")
    rc, out, err = run_cli(["snapshot", str(t), "--json"])
    assert rc == 0, err
    snap = json.loads(out)
    assert snap["baseCheckpoint"] is None
    assert sorted(f["path"] for f in snap["files"]) == expected
    line = next(x for x in err.splitlines() if "checkpoint.unreadable" in x)
    assert "_delta_log/00000000000000000010.checkpoint.parquet, version 10" in line and "falling back" in line


def test_corrupt_checkpoint_without_fallback_is_exit_4_naming_it(shared_dir, tmp_path, spark):
    """rs-checkpoints_vacuumed: commits before 5 are gone, so a corrupt checkpoint 10 falls back to 5,
    and with 5 corrupt as well nothing can rebuild the state: snapshot exits 4 with one line naming
    the file; history and replay still use the retained commits."""
    src = shared_dir / "corpus" / "tables" / "rs-checkpoints_vacuumed"
    t = tmp_path / "t"
    shutil.copytree(src, t)
    log = t / "_delta_log"
    for v in (5, 10):
        f = log / f"{v:020d}.checkpoint.parquet"
        f.write_bytes(f.read_bytes()[:100])
    rc, out, err = run_cli(["snapshot", str(t), "--json"])
    assert rc == 4, err
    lines = [x for x in err.splitlines() if x.startswith("delta-forensics: error:")]
    assert len(lines) == 1 and ".checkpoint.parquet" in lines[0] and "Traceback" not in err
    rc, out, err = run_cli(["history", str(t), "--json"])
    assert rc == 0 and json.loads(out)  # the commits are still read
    # replay salvages the retained commits and says that no file state is exact
    rc, out, err = run_cli(["replay", str(t), "--json"])
    assert rc == 0, err
    assert any(x.startswith("error: checkpoint.unreadable") and "version 5" in x for x in err.splitlines()), err
    assert json.loads(out)["totalCommits"] == 8


def test_missing_sidecar_is_not_used_as_a_base(shared_dir, tmp_path, spark):
    import deltalake
    src = shared_dir / "corpus" / "tables" / "golden-v2-checkpoint-parquet"
    expected = sorted(deltalake.DeltaTable(str(src)).get_add_actions(flatten=True).column("path").to_pylist())
    t = tmp_path / "t"
    shutil.copytree(src, t)
    sidecar = sorted((t / "_delta_log" / "_sidecars").glob("*.parquet"))[0]
    sidecar.unlink()
    for _ in range(2):  # the second run must not trust a cached partial checkpoint either
        rc, out, err = run_cli(["snapshot", str(t), "--json"])
        assert rc == 0, err
        snap = json.loads(out)
        assert snap["baseCheckpoint"] is None
        assert sorted(f["path"] for f in snap["files"]) == expected
        assert any("checkpoint.sidecar_missing" in x and sidecar.name in x for x in err.splitlines()), err
