"""The reader on real tables: corpus-wide, against delta-rs, and against a plain re-parse."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from forensics.errors import ExitCode, ForensicsError
from forensics.log.listing import list_log
from forensics.log.snapshot import snapshot
from forensics.log.delta_log import DeltaLog

# Tables the corpus documents as broken (corpus/INDEX.md): refused with a diagnostic, never a crash.
DOCUMENTED_BROKEN = {
    "golden-versions-not-contiguous": ExitCode.NO_VERSION,  # v1 missing, no checkpoint: must fail
    "krs-crc-malformed": ExitCode.NOT_A_TABLE,  # only a malformed .crc, no commits
    "rs-errlogs-table_c": ExitCode.NO_VERSION,  # a commit missing in the middle
}


def corpus_tables(shared: Path) -> list[Path]:
    root = shared / "corpus" / "tables"
    return sorted(p for p in root.iterdir() if p.is_dir())


def plain_parse(table: Path) -> dict[int, dict]:
    """Re-parse every commit JSON with the json module only (independent of Spark)."""
    out = {}
    for f in sorted((table / "_delta_log").glob("[0-9]" * 20 + ".json")):
        v = int(f.name.split(".")[0])
        ci, adds, removes = None, 0, 0
        for line in f.read_bytes().decode("utf-8", "replace").splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if not isinstance(obj, dict):
                continue
            if "commitInfo" in obj and ci is None and isinstance(obj["commitInfo"], dict):
                ci = obj["commitInfo"]
            adds += "add" in obj
            removes += "remove" in obj
        out[v] = {"ci": ci or {}, "adds": adds, "removes": removes}
    return out


@pytest.mark.shared
@pytest.mark.slow
def test_every_corpus_table_reads_or_is_refused_cleanly(shared_dir, spark):
    """Acceptance: every corpus table parses, or is refused with a clear diagnostic; no traceback."""
    refused = {}
    for table in corpus_tables(shared_dir):
        try:
            log = DeltaLog.open(str(table), use_cache=False)
            snapshot(log)
        except ForensicsError as e:
            refused[table.name] = e.code
            assert e.message and "\n" not in e.message
    assert refused == DOCUMENTED_BROKEN


@pytest.mark.shared
@pytest.mark.slow
def test_snapshot_matches_delta_rs_and_history_matches_plain_parse(shared_dir, spark):
    import deltalake
    compared = 0
    for table in corpus_tables(shared_dir):
        if table.name in DOCUMENTED_BROKEN:
            continue
        log = DeltaLog.open(str(table), use_cache=False)
        # history vs plain re-parse: operation, readVersion, add/remove counts
        plain = plain_parse(table)
        by_v = {r.version: r for r in log.records()}
        for v, p in plain.items():
            r = by_v[v]
            assert r.operation == p["ci"].get("operation"), (table.name, v)
            assert r.read_version == p["ci"].get("readVersion"), (table.name, v)
            assert (r.num_add, r.num_remove) == (p["adds"], p["removes"]), (table.name, v)
        # snapshot vs delta-rs
        try:
            dt = deltalake.DeltaTable(str(table))
            theirs = sorted(dt.get_add_actions(flatten=True).column("path").to_pylist())
        except Exception:  # noqa: BLE001 - tables delta-rs cannot load are not compared
            continue
        snap, _ = snapshot(log)
        assert snap.version == dt.version(), table.name
        assert sorted(f.path for f in snap.files) == theirs, table.name
        compared += 1
    assert compared >= 150


def test_checkpoint_kinds_and_stray_files(shared_dir, spark):
    t = shared_dir / "corpus" / "tables"
    for name, kind in (
        ("golden-multi-part-checkpoint", "multipart"),
        ("golden-v2-checkpoint-json", "v2"),
        ("golden-v2-checkpoint-parquet", "v2"),
        ("golden-checkpoint", "classic"),
    ):
        log = DeltaLog.open(str(t / name))
        snap, findings = snapshot(log)
        assert snap.base_checkpoint is not None, name
        assert any(c.kind == kind and c.version == snap.base_checkpoint for c in log.listing.checkpoints), name
        assert not [f for f in findings if f.severity == "error"], name
    junk = DeltaLog.open(str(t / "krs-cdf-column-mapping-name-mode-3-7"))
    assert any(f.code == "stray.appledouble" for f in junk.findings)


def test_compaction_and_staged_commits(shared_dir, spark):
    t = shared_dir / "corpus" / "tables"
    log = DeltaLog.open(str(t / "krs-compacted-log-files-table"))
    assert log.versions == list(range(0, 26))
    staged = DeltaLog.open(str(t / "kjava-catalog-owned-preview"))
    assert staged.listing.staged
    assert any(f.code.startswith("commit.staged") for f in staged.findings)


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_broken_lines_are_findings_naming_file_and_version(tmp_path, sample_logs, spark):
    src = sample_logs / "quickstart" / "table"
    if not src.exists():
        pytest.skip("sample_logs/quickstart not generated yet")
    t = _copy(src, tmp_path / "t")
    listing = list_log(str(t))
    last = listing.versions[-1]
    f = t / "_delta_log" / f"{last:020d}.json"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])  # a partial write of the last commit
    mid = t / "_delta_log" / f"{listing.versions[1]:020d}.json"
    mid.write_bytes(mid.read_bytes() + b"\xff\xfe not json\n")
    log = DeltaLog.open(str(t), use_cache=False)
    codes = {(x.code, x.version) for x in log.findings}
    assert ("commit.bad_line", last) in codes
    assert ("commit.non_utf8", listing.versions[1]) in codes
    for x in log.findings:
        if x.code.startswith("commit."):
            assert x.file and x.file.startswith("_delta_log/") and x.version is not None


def test_cache_reused_without_jvm_and_incremental(tmp_path, sample_logs, spark):
    src = sample_logs / "quickstart" / "table"
    if not src.exists():
        pytest.skip("sample_logs/quickstart not generated yet")
    t = _copy(src, tmp_path / "t")
    calls = []

    def factory():
        calls.append(1)
        return spark

    first = DeltaLog.open(str(t), spark_factory=factory)
    assert not first.from_cache and calls == [1]
    again = DeltaLog.open(str(t), spark_factory=factory)
    assert again.from_cache and calls == [1]  # no Spark at all
    assert again.commits.equals(first.commits)
    # a new commit: only it is read
    last = first.versions[-1]
    nxt = t / "_delta_log" / f"{last + 1:020d}.json"
    nxt.write_text(json.dumps({"commitInfo": {"timestamp": 1, "operation": "SET TBLPROPERTIES", "operationParameters": {}, "readVersion": last}}) + "\n")
    inc = DeltaLog.open(str(t), spark_factory=factory)
    assert calls == [1, 1]
    assert inc.versions[-1] == last + 1
    assert inc.record(last + 1).read_version == last
    fresh = DeltaLog.open(str(t), use_cache=False, spark_factory=factory)
    assert fresh.commits.sort("version").equals(inc.commits.sort("version"))


def test_lazy_file_actions_are_safe_from_many_threads(sample_logs, spark):
    """The TUI's workers read `log.actions` concurrently; none may see it missing."""
    import threading

    DeltaLog.open(str(sample_logs / "busy" / "table"))
    for _ in range(5):
        log = DeltaLog.open_cached(str(sample_logs / "busy" / "table"))
        assert log is not None
        seen: list[int | None] = []
        threads = [threading.Thread(target=lambda: seen.append(None if log.actions is None else log.actions.height)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(seen) == 8 and None not in seen and len(set(seen)) == 1
