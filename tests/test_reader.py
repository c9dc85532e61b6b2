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


def corpus_sample(shared: Path, stride: int = 10) -> list[Path]:
    """Every `stride`-th table of each source (golden-, dspark-, kjava-, krs-, rs-, uc-), the
    documented broken ones and every third table with a checkpoint in its name (classic, multi-part,
    v2 with and without sidecars): each writer and layout the corpus has, in a sixth of the time
    (`make test`; the whole corpus is read by `make test-live`)."""
    tables = corpus_tables(shared)
    by_source: dict[str, list[Path]] = {}
    for t in tables:
        by_source.setdefault(t.name.split("-")[0], []).append(t)
    keep = {t for group in by_source.values() for t in group[::stride]}
    keep |= {t for t in tables if t.name in DOCUMENTED_BROKEN}
    keep |= set([t for t in tables if "checkpoint" in t.name][::3])
    return sorted(keep)


def read_corpus(tables: list[Path]) -> tuple[dict[str, int], int]:
    """Open each table once (no cache): it parses, or is refused with a one-line diagnostic; its
    history equals a plain re-parse of its commit files (operation, readVersion, add and remove
    counts); where delta-rs loads it, its snapshot's version and files equal delta-rs's.
    Returns (refused name -> exit code, how many snapshots were compared with delta-rs)."""
    import deltalake

    refused: dict[str, int] = {}
    compared = 0
    for table in tables:
        try:
            log = DeltaLog.open(str(table), use_cache=False)
            snap, _ = snapshot(log)
        except ForensicsError as e:
            refused[table.name] = e.code
            assert e.message and "\n" not in e.message
            continue
        plain = plain_parse(table)
        by_v = {r.version: r for r in log.records()}
        for v, p in plain.items():
            r = by_v[v]
            assert r.operation == p["ci"].get("operation"), (table.name, v)
            assert r.read_version == p["ci"].get("readVersion"), (table.name, v)
            assert (r.num_add, r.num_remove) == (p["adds"], p["removes"]), (table.name, v)
        try:
            dt = deltalake.DeltaTable(str(table))
            theirs = sorted(dt.get_add_actions(flatten=True).column("path").to_pylist())
        except Exception:  # noqa: BLE001 - tables delta-rs cannot load are not compared
            continue
        assert snap.version == dt.version(), table.name
        assert sorted(f.path for f in snap.files) == theirs, table.name
        compared += 1
    return refused, compared


@pytest.mark.shared
@pytest.mark.slow
def test_corpus_sample_reads_matches_plain_parse_and_delta_rs(shared_dir, spark):
    """A sample of every source of the corpus: parsed or refused cleanly, equal to a plain re-parse
    and to delta-rs's snapshot."""
    tables = corpus_sample(shared_dir)
    assert len({t.name.split("-")[0] for t in tables}) == len({t.name.split("-")[0] for t in corpus_tables(shared_dir)})
    refused, compared = read_corpus(tables)
    assert refused == {k: v for k, v in DOCUMENTED_BROKEN.items() if k in {t.name for t in tables}} and len(refused) == 3
    assert compared >= 0.6 * (len(tables) - len(refused)), (compared, len(tables))


@pytest.mark.shared
@pytest.mark.live
def test_every_corpus_table_reads_matches_plain_parse_and_delta_rs(shared_dir, spark):
    """Acceptance: every corpus table parses, or is refused with a clear diagnostic; no traceback;
    history equal to a plain re-parse, the snapshot equal to delta-rs's wherever it loads."""
    refused, compared = read_corpus(corpus_tables(shared_dir))
    assert refused == DOCUMENTED_BROKEN
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


def _counting(spark):
    """A Spark factory that counts the sessions asked of it (each is a JVM start in real use)."""
    calls: list[int] = []

    def factory():
        calls.append(1)
        return spark

    return factory, calls


def test_cache_reused_without_jvm_and_incremental(tmp_path, sample_logs, spark):
    src = sample_logs / "quickstart" / "table"
    if not src.exists():
        pytest.skip("sample_logs/quickstart not generated yet")
    t = _copy(src, tmp_path / "t")
    factory, calls = _counting(spark)
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


def test_from_cache_hands_its_listing_over_before_it_judges_the_cache(tmp_path, sample_logs, spark):
    """The TUI paints the commits' times from the listing that judges the cache (one listing, not
    two): `listed` gets `list_log`'s commits at their times whether the cache is current or behind,
    and is never called when nothing is cached (then nothing is listed at all)."""
    from forensics import Table
    from forensics.log.listing import list_log

    t = _copy(sample_logs / "quickstart" / "table", tmp_path / "t")
    got: list = []
    assert Table.from_cache(t, listed=got.append) is None and got == []
    DeltaLog.open(str(t), spark_factory=lambda: spark)
    current = Table.from_cache(t, listed=got.append)
    assert current is not None and current.read_from_cache
    assert got == [list_log(str(t)).commit_times()] == [Table.listed_commits(t)]
    assert [v for v, _ in got[0]] == current.versions
    last = current.versions[-1]
    (t / "_delta_log" / f"{last + 1:020d}.json").write_text(
        json.dumps({"commitInfo": {"timestamp": 1, "operation": "SET TBLPROPERTIES", "operationParameters": {}, "readVersion": last}}) + "\n")
    got.clear()
    assert Table.from_cache(t, listed=got.append) is None  # behind: the caller reads the new commit
    assert len(got) == 1 and got[0][-1][0] == last + 1 and got[0] == Table.listed_commits(t)


def test_a_generation_published_while_the_jvm_starts_is_used(tmp_path, sample_logs, spark):
    """Nothing cached when a first look lists the log, so it starts Spark; a generation another
    process publishes meanwhile is still found once the JVM is up, and nothing is parsed twice."""
    t = _copy(sample_logs / "quickstart" / "table", tmp_path / "t")
    published: list[bool] = []

    def slow_start():  # what a second command, quicker to its JVM, does during this one's start
        published.append(not DeltaLog.open(str(t), spark_factory=lambda: spark).from_cache)
        return spark

    log = DeltaLog.open(str(t), spark_factory=slow_start)
    assert published == [True] and log.from_cache
    assert log.commits.equals(DeltaLog.open(str(t), use_cache=False, spark_factory=lambda: spark).commits)


def test_cache_survives_log_cleanup_but_not_a_rewritten_commit(tmp_path, sample_logs, spark):
    """The cache's meta keeps a digest of the files it was built from; when the log's differs, the
    whole fingerprint decides: commits cleaned up since (log retention) leave it usable, a commit
    file rewritten in place does not."""
    src = sample_logs / "quickstart" / "table"
    t = _copy(src, tmp_path / "t")
    factory, calls = _counting(spark)
    first = DeltaLog.open(str(t), spark_factory=factory)
    assert not first.from_cache and calls == [1]
    log_dir = t / "_delta_log"
    for v in range(0, 6):  # the checkpoint at 18 keeps the table whole
        (log_dir / f"{v:020d}.json").unlink()
    cleaned = DeltaLog.open(str(t), spark_factory=factory)
    assert cleaned.from_cache and calls == [1]
    ten = log_dir / f"{10:020d}.json"
    ten.write_text(ten.read_text() + "\n")  # another size: not the file the cache was built from
    rewritten = DeltaLog.open(str(t), spark_factory=factory)
    assert not rewritten.from_cache and calls == [1, 1]


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


def test_two_small_reads_at_once_leave_the_sessions_settings_as_they_were(spark):
    """The TUI reads from two workers: small reads switch the session to interpreted evaluation,
    and the switch is the session's. Ended in the other order than begun (what two threads do),
    the settings must come back as the caller had them, and stay switched while a read is on."""
    from forensics.log.reader import _INTERPRETED, _interpreted_if_small

    before = {k: spark.conf.get(k, None) for k in _INTERPRETED}
    first, second = _interpreted_if_small(spark, 1, 10), _interpreted_if_small(spark, 1, 10)
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first read ends while the second still runs
    assert {k: spark.conf.get(k, None) for k in _INTERPRETED} == _INTERPRETED
    second.__exit__(None, None, None)
    assert {k: spark.conf.get(k, None) for k in _INTERPRETED} == before
    with _interpreted_if_small(spark, 10**9, 10**12):  # a big read changes nothing
        assert {k: spark.conf.get(k, None) for k in _INTERPRETED} == before


def test_the_fingerprint_digest_is_the_hash_of_each_files_fingerprint_entry(tmp_path):
    """meta.json's digest stays the hash of the tab-joined `_fingerprint_entry` rows (the
    digest spells them out for speed): a cache written by an earlier release stays valid."""
    import hashlib

    from forensics.log.delta_log import _fingerprint_digest, _fingerprint_entry, _plan_files

    for t in sorted(Path(__file__).resolve().parents[1].glob("sample_logs/*/table")):
        plan = _plan_files(list_log(str(t)))
        for upto in (None, max(plan) // 2):
            rows = "\n".join("\t".join(map(str, (v, *_fingerprint_entry(f, s)))) for v, (f, s) in sorted(plan.items())
                             if upto is None or v <= upto)
            assert _fingerprint_digest(plan, upto) == hashlib.blake2b(rows.encode("utf-8", "surrogateescape"), digest_size=20).hexdigest()


# HotSpot compiles no method of more bytecode than this (HugeMethodLimit, with the default
# -XX:+DontCompileHugeMethods, which the warm engine's JVM keeps: forensics/runtime/java.py).
HOTSPOT_HUGE_METHOD_BYTES = 8000


@pytest.mark.parametrize("check_fffd", [True, False])
def test_the_parses_generated_code_is_small_enough_for_the_jit(spark, sample_logs, check_fffd):
    """Each Java method Spark generates for the commit parse stays under HotSpot's limit, or
    the warm engine would run it interpreted (reader._rows). Asked of Spark itself: the
    bytecode size of every whole-stage subtree of the plan a bundle read runs."""
    import pyspark.sql.functions as F

    from forensics.log.reader import _parsed

    commit = sample_logs / "quickstart" / "table" / "_delta_log" / ("0" * 20 + ".json")
    # the (version, line, text) columns a bundle read gives
    lines = spark.read.text(str(commit)).select(F.lit(0).cast("long").alias("version"), F.lit(0).alias("line"),
                                               F.col("value").alias("text"))
    plan = _parsed(lines, check_fffd)._jdf.queryExecution().executedPlan()
    subtrees = spark.sparkContext._jvm.org.apache.spark.sql.execution.debug.package.codegenStringSeq(plan)
    sizes = [subtrees.apply(i)._3().maxMethodCodeSize() for i in range(subtrees.size())]
    assert sizes and max(sizes) < HOTSPOT_HUGE_METHOD_BYTES, sizes
