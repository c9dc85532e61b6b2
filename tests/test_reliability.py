"""Broken input is salvaged, named and never made worse.

Each case damages a copy of a real table (sample_logs/, written by delta-rs or in
delta-spark's on-disk format) and runs the CLI in-process: the damage is named in one line
(file and version), the exit code is the README's, no traceback, and the rest of the log is
still used, checked against an independent re-parse with the json module.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import json
import os
import re
import shutil
import time
from pathlib import Path
from urllib.parse import quote, unquote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics.cli.main import main

REPO = Path(__file__).resolve().parent.parent
QUICK = "quickstart"  # delta-rs, 20 versions, checkpoint at 18, partitioned by date
MERGE = "a-merge-partitions"  # delta-spark format, txnIds, readVersions, orphan file


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def copy_sample(sample_logs: Path, name: str, dst: Path) -> Path:
    shutil.copytree(sample_logs / name / "table", dst, symlinks=True)
    return dst


def commit_file(t: Path, v: int) -> Path:
    return t / "_delta_log" / f"{v:020d}.json"


def plain_state(t: Path, upto: int | None = None) -> set[str]:
    """Active paths by replaying every commit with the json module (bad lines skipped): the oracle."""
    active: set[str] = set()
    for f in sorted((t / "_delta_log").glob("[0-9]" * 20 + ".json")):
        if upto is not None and int(f.name[:20]) > upto:
            break
        for line in f.read_bytes().split(b"\n"):
            try:
                obj = json.loads(line.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                continue
            if not isinstance(obj, dict):
                continue
            if isinstance(obj.get("add"), dict):
                active.add(obj["add"]["path"])
            elif isinstance(obj.get("remove"), dict):
                active.discard(obj["remove"]["path"])
    return active


def findings_of(err: str) -> list[str]:
    return [x for x in err.splitlines() if re.match(r"^(info|warning|error): ", x)]


def one_error_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.startswith("delta-forensics: error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def snapshot_paths(t: Path, *extra: str) -> tuple[int, dict, str]:
    rc, out, err = run_cli(["snapshot", str(t), "--json", *extra])
    return rc, (json.loads(out) if rc == 0 else {}), err


# --------------------------------------------------------------------------------------
# 2. broken input
# --------------------------------------------------------------------------------------


def test_truncated_last_commit_keeps_its_complete_lines(sample_logs, tmp_path, spark):
    t = copy_sample(sample_logs, QUICK, tmp_path / "t")
    last = max(int(p.name[:20]) for p in (t / "_delta_log").glob("*.json"))
    f = commit_file(t, last)
    data = f.read_bytes()
    lines = data.split(b"\n")
    # Cut inside the last non-empty line: a partial write.
    keep = b"\n".join(lines[:-2]) + b"\n" + lines[-2][: len(lines[-2]) // 2]
    f.write_bytes(keep)
    rc, snap, err = snapshot_paths(t)
    assert rc == 0, err
    bad = [x for x in findings_of(err) if "commit.bad_line" in x]
    assert bad and f"(_delta_log/{f.name}, version {last})" in bad[0]
    assert {x["path"] for x in snap["files"]} == plain_state(t)
    rc, out, err = run_cli(["history", str(t), "--json"])
    assert rc == 0 and [r["version"] for r in json.loads(out)][-1] == last


@pytest.mark.parametrize("garbage,code", [(b"#!garbage {not json", "commit.bad_line"), (b'\xff\xfe{"add": \xc3(}', "commit.non_utf8")])
def test_garbage_line_is_named_and_the_rest_is_used(sample_logs, tmp_path, spark, garbage, code):
    t = copy_sample(sample_logs, QUICK, tmp_path / "t")
    f = commit_file(t, 3)
    f.write_bytes(f.read_bytes().rstrip(b"\n") + b"\n" + garbage + b"\n")
    rc, snap, err = snapshot_paths(t, "--version", "5")
    assert rc == 0, err
    assert any(code in x and f"(_delta_log/{f.name}, version 3)" in x for x in findings_of(err)), err
    assert {x["path"] for x in snap["files"]} == plain_state(t, 5)
    rc, out, _ = run_cli(["history", str(t), "--json"])
    row = next(r for r in json.loads(out) if r["version"] == 3)
    ci = next(json.loads(x)["commitInfo"] for x in commit_file(sample_logs / QUICK / "table", 3).read_text().splitlines() if '"commitInfo"' in x)
    assert row["operation"] == ci["operation"]  # the commit's good lines are still used


def test_missing_middle_version(sample_logs, tmp_path, spark):
    t = copy_sample(sample_logs, QUICK, tmp_path / "t")
    commit_file(t, 5).unlink()
    rc, out, err = run_cli(["history", str(t), "--json"])
    assert rc == 0
    assert [r["version"] for r in json.loads(out)] == [v for v in range(20) if v != 5]
    assert any("log.gap" in x and "version 5" in x for x in findings_of(err)), err
    rc, snap, err = snapshot_paths(t)  # the latest state comes from checkpoint 18: exact
    assert rc == 0 and snap["baseCheckpoint"] == 18
    assert {x["path"] for x in snap["files"]} == plain_state(sample_logs / QUICK / "table")
    rc, _, err = snapshot_paths(t, "--version", "7")  # needs 5: cannot be rebuilt
    assert rc == 7
    line = one_error_line(err)
    assert "version 7" in line and "5" in line
    rc, out, err = run_cli(["replay", str(t), "--json"])
    assert rc == 0 and json.loads(out)["totalCommits"] == 19


@pytest.mark.parametrize(
    "content,code",
    [(b"", "last_checkpoint.empty"), (b"\x00\xff{garbage", "last_checkpoint.corrupt"), (b'{"version":99,"size":3}', "last_checkpoint.dangling")],
)
def test_last_checkpoint_is_only_a_hint(sample_logs, tmp_path, spark, content, code):
    t = copy_sample(sample_logs, QUICK, tmp_path / "t")
    (t / "_delta_log" / "_last_checkpoint").write_bytes(content)
    rc, snap, err = snapshot_paths(t)
    assert rc == 0, err
    assert any(code in x and "_delta_log/_last_checkpoint" in x for x in findings_of(err)), err
    assert snap["baseCheckpoint"] == 18  # found by listing, not by the hint
    assert {x["path"] for x in snap["files"]} == plain_state(t)


def test_copied_commit_is_flagged_not_taken_for_concurrency(sample_logs, tmp_path, spark):
    t = copy_sample(sample_logs, MERGE, tmp_path / "t")
    lines = commit_file(t, 4).read_text().splitlines()
    ci = json.loads(lines[0])
    assert "commitInfo" in ci
    ci["commitInfo"]["timestamp"] += 60_000  # a different commitInfo, the same txnId
    commit_file(t, 5).write_text("\n".join([json.dumps(ci)] + lines[1:]) + "\n")
    rc, out, err = run_cli(["replay", str(t), "--json"])
    assert rc == 0
    dup = [x for x in findings_of(err) if "commit.duplicate" in x]
    assert dup and "_delta_log/00000000000000000005.json, version 5" in dup[0] and "txnId" in dup[0], err
    v5 = next(c for c in json.loads(out)["commits"] if c["version"] == 5)
    assert v5["verdict"] != "anomaly" or "duplicated commit" in (v5["likelyReason"] or "")


def test_unknown_action_and_protocol_feature_warn_and_continue(sample_logs, tmp_path, spark):
    t = copy_sample(sample_logs, MERGE, tmp_path / "t")
    f = commit_file(t, 2)
    proto = {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["futureReaderX"], "writerFeatures": ["futureReaderX", "appendOnly"]}}
    f.write_text(f.read_text().rstrip("\n") + "\n" + json.dumps({"someFutureAction": {"a": 1}}) + "\n" + json.dumps(proto) + "\n")
    rc, snap, err = snapshot_paths(t)
    assert rc == 0, err
    found = findings_of(err)
    assert any("commit.unknown_action" in x and "someFutureAction" in x and "version 2)" in x for x in found), err
    assert any("protocol.unknown_feature" in x and "futureReaderX" in x and "appendOnly" not in x and "version 2)" in x for x in found), err
    assert snap["protocol"]["readerFeatures"] == ["futureReaderX"]  # read, not dropped
    assert {x["path"] for x in snap["files"]} == plain_state(t)
    # --strict turns the warnings into a failure, for pipelines
    for cmd in (["history"], ["snapshot"], ["replay"]):
        rc, _, _ = run_cli(cmd + [str(t), "--strict", "-q"])
        assert rc == 1, cmd


def test_an_unknown_key_beside_a_known_action_is_ignored_as_the_engines_ignore_it(sample_logs, tmp_path, spark):
    """forensics/log/reader.py looks for unknown top-level keys only on a line holding no action it
    knows (a second parse of every line cost about a fifth of the read): an extra key beside an
    add is ignored, as delta-spark's Jackson reader ignores it (JsonUtils.mapper: unknown properties off),
    and the add is used; the same key alone on its line is reported."""
    t = copy_sample(sample_logs, MERGE, tmp_path / "t")
    f = commit_file(t, 2)
    lines = f.read_text().rstrip("\n").split("\n")
    i = next(k for k, ln in enumerate(lines) if ln.startswith('{"add"'))
    add = json.loads(lines[i])
    lines[i] = json.dumps({**add, "someFutureKey": {"b": 2}})
    f.write_text("\n".join(lines) + "\n")
    rc, snap, err = snapshot_paths(t)
    assert rc == 0, err
    assert not [x for x in findings_of(err) if "commit.unknown_action" in x], err
    assert {x["path"] for x in snap["files"]} == plain_state(t)
    f.write_text(f.read_text() + json.dumps({"someFutureKey": {"b": 2}}) + "\n")
    rc, _, err = snapshot_paths(t)
    assert rc == 0 and any("commit.unknown_action" in x and "someFutureKey" in x for x in findings_of(err)), err


def test_strict_is_zero_on_a_clean_log(sample_logs, tmp_path, spark):
    t = copy_sample(sample_logs, MERGE, tmp_path / "t")
    for cmd in (["history"], ["snapshot"], ["replay"], ["sets"]):
        rc, _, err = run_cli(cmd + [str(t), "--strict", "--json"])
        assert rc == 0, (cmd, err)
        assert not [x for x in findings_of(err) if x.startswith(("warning", "error"))]


def test_file_action_without_path_and_wrongly_typed_line(sample_logs, tmp_path, spark):
    """A line Spark can only partly parse is reported as skipped, so none of it may be used;
    an add without a path cannot be keyed: both named, neither crashes sets/evidence."""
    t = copy_sample(sample_logs, MERGE, tmp_path / "t")
    f = commit_file(t, 4)
    f.write_text(f.read_text().rstrip("\n") + '\n{"add":{"path":null,"size":1}}\n{"add":{"path":"ghost.parquet","size":"big"}}\n')
    for cmd in ("sets", "evidence", "snapshot", "replay"):
        rc, out, err = run_cli([cmd, str(t), "--json"])
        assert rc == 0, (cmd, err)
        found = findings_of(err)
        assert any("commit.bad_action" in x and "line 4" in x and "version 4)" in x for x in found), (cmd, err)
        assert any("commit.bad_line" in x and "line 5" in x and "version 4)" in x for x in found), (cmd, err)
        assert "ghost.parquet" not in out, cmd


@pytest.mark.parametrize(
    "argv,code",
    [
        (["history", "{tmp}/nope"], 3),
        (["history", "{tmp}/empty_dir"], 3),
        (["snapshot", "{tmp}/no_commits"], 3),
        (["history", "{table}", "--bogus"], 2),
        (["replay", "{table}", "--rules", "not-a-profile"], 2),
        (["explain", "{table}", "999"], 7),
        (["snapshot", "{table}", "--version", "999"], 7),
        (["snapshot", "{table}", "--version", "-1"], 7),
    ],
)
def test_documented_exit_codes_with_one_line(argv, code, sample_logs, tmp_path, spark):
    (tmp_path / "empty_dir").mkdir()
    (tmp_path / "no_commits" / "_delta_log").mkdir(parents=True)
    (tmp_path / "no_commits" / "_delta_log" / "junk.txt").write_text("x")
    table = sample_logs / MERGE / "table"
    rc, out, err = run_cli([a.format(tmp=tmp_path, table=table) for a in argv])
    assert rc == code, err
    assert not out.strip()
    assert "Traceback" not in err
    lines = [x for x in err.splitlines() if "error:" in x and not x.startswith(("warning", "info"))]
    assert len(lines) == 1, err


# --------------------------------------------------------------------------------------
# a very large commit
# --------------------------------------------------------------------------------------


def write_big_commit(t: Path, n: int) -> None:
    """One delta-spark-format commit with n adds over 100 partitions (written with string templates)."""
    log = t / "_delta_log"
    log.mkdir(parents=True)
    schema = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}},
                                                     {"name": "p", "type": "string", "nullable": True, "metadata": {}}]})
    head = [
        {"commitInfo": {"timestamp": 1718870000000, "operation": "WRITE", "operationParameters": {"mode": "Append", "partitionBy": '["p"]'},
                        "isolationLevel": "Serializable", "isBlindAppend": True, "engineInfo": "Apache-Spark/3.5.1 Delta-Lake/3.2.0",
                        "txnId": "00000000-0000-0000-0000-000000000001"}},
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": "00000000-0000-0000-0000-0000000000b1", "format": {"provider": "parquet", "options": {}}, "schemaString": schema,
                      "partitionColumns": ["p"], "configuration": {}, "createdTime": 1718870000000}},
    ]
    tmpl = '{"add":{"path":"p=%d/part-%07d.parquet","partitionValues":{"p":"%d"},"size":%d,"modificationTime":1718870000000,"dataChange":true}}\n'
    with open(log / f"{0:020d}.json", "w") as fh:
        for a in head:
            fh.write(json.dumps(a) + "\n")
        step = 100_000
        for lo in range(0, n, step):
            fh.write("".join(tmpl % (i % 100, i, i % 100, 1000 + i) for i in range(lo, min(n, lo + step))))


@pytest.mark.slow
def test_commit_with_a_million_adds(tmp_path, spark):
    n = 1_000_000
    t = tmp_path / "big"
    t0 = time.monotonic()
    write_big_commit(t, n)
    assert time.monotonic() - t0 < 60
    t0 = time.monotonic()
    rc, out, err = run_cli(["history", str(t), "--json"])
    read_s = time.monotonic() - t0
    assert rc == 0, err
    assert json.loads(out)[0]["numAddFiles"] == n
    assert len(json.loads(out)[0]["partitionsTouched"]) == 100
    t0 = time.monotonic()
    rc, out, err = run_cli(["snapshot", str(t), "--json"])
    snap_s = time.monotonic() - t0
    assert rc == 0, err
    snap = json.loads(out)
    assert len(snap["files"]) == n
    assert snap["files"][0]["path"].startswith("p=") and not findings_of(err)
    # Generous bounds for a loaded 2-core machine; typical figures are a fraction of these.
    assert read_s < 240, f"reading a 1M-add commit took {read_s:.0f}s"
    assert snap_s < 120, f"snapshot of 1M files took {snap_s:.0f}s"
    t0 = time.monotonic()
    rc, out, _ = run_cli(["history", str(t), "--json"])  # from the cache: no Spark
    assert rc == 0 and time.monotonic() - t0 < 10


# --------------------------------------------------------------------------------------
# paths: special characters, URL-encoding, absolute paths, `..` and symlinks
# --------------------------------------------------------------------------------------

SPECIAL = ["a b", "x%y", "ü/ß?", "c=d", "#hash", "plus+semi;colon:"]


@pytest.fixture
def special_table(tmp_path):
    """A real delta-rs table partitioned by values that need escaping in paths."""
    import pyarrow as pa
    import deltalake
    t = tmp_path / "special"
    data = pa.table({"id": list(range(len(SPECIAL))), "p": SPECIAL})
    deltalake.write_deltalake(str(t), data, partition_by=["p"])
    deltalake.write_deltalake(str(t), data, partition_by=["p"], mode="append")
    return t, deltalake


def test_special_characters_and_url_encoding_match_delta_rs(special_table, spark):
    t, deltalake = special_table
    theirs = sorted(deltalake.DeltaTable(str(t)).get_add_actions(flatten=True).column("path").to_pylist())
    rc, snap, err = snapshot_paths(t)
    assert rc == 0, err
    assert sorted(x["path"] for x in snap["files"]) == theirs
    assert sorted({x["partitionValues"]["p"] for x in snap["files"]}) == sorted(SPECIAL)
    rc, out, err = run_cli(["evidence", str(t), "--json", "--no-replay"])
    assert rc == 0, err
    ev = json.loads(out)
    assert ev["orphanFiles"] == [] and ev["unknownFiles"] == []  # encoded log paths == files on disk


def test_absolute_file_uris_are_the_same_files(special_table, spark):
    """delta-spark writes absolute `file:` URIs for files outside the usual layout (shallow clones,
    CONVERT): an absolute add and a relative remove of the same file must cancel out."""
    t, deltalake = special_table
    log = t / "_delta_log"
    v0 = commit_file(t, 0)
    rel_paths = []
    lines = []
    for line in v0.read_text().splitlines():
        obj = json.loads(line)
        if "add" in obj:
            rel_paths.append(obj["add"]["path"])
            obj["add"]["path"] = "file://" + quote(str(t)) + "/" + obj["add"]["path"]
        lines.append(json.dumps(obj))
    v0.write_text("\n".join(lines) + "\n")
    n = len(list(log.glob("[0-9]" * 20 + ".json")))
    gone = rel_paths[0]
    rm = {"remove": {"path": gone, "deletionTimestamp": 1, "dataChange": True}}
    ci = {"commitInfo": {"timestamp": 1, "operation": "DELETE", "operationParameters": {}, "engineInfo": "hand"}}
    commit_file(t, n).write_text(json.dumps(ci) + "\n" + json.dumps(rm) + "\n")
    rc, snap, err = snapshot_paths(t)
    assert rc == 0, err
    got = {unquote(x["path"]).split(str(t) + "/", 1)[-1] for x in snap["files"]}
    assert unquote(gone) not in got
    assert len(snap["files"]) == 2 * len(SPECIAL) - 1
    rc, out, err = run_cli(["evidence", str(t), "--json", "--no-replay"])
    # Absolute URIs name files under the root: nothing on disk is an orphan (a removed file is
    # still referenced by the retained log).
    assert rc == 0 and json.loads(out)["orphanFiles"] == [], out


class AccessLog:
    """Python-level file-system calls made while the CLI runs (paths as given, not resolved)."""

    def __init__(self, monkeypatch):
        self.calls: list[tuple[str, str, bool]] = []
        for name in ("scandir", "listdir", "stat", "open"):
            self._wrap(monkeypatch, os, name)
        self._wrap(monkeypatch, builtins, "open")

    def _wrap(self, monkeypatch, mod, name):
        real = getattr(mod, name)
        calls = self.calls

        def wrapper(*a, **kw):
            if a:
                p = a[0]
                if isinstance(p, (str, bytes, os.PathLike)) and not isinstance(p, int):
                    follow = kw.get("follow_symlinks", True)
                    calls.append((f"{mod.__name__}.{name}", os.fsdecode(p), follow))
            return real(*a, **kw)

        monkeypatch.setattr(mod, name, wrapper)


def test_paths_leading_outside_the_root_are_never_followed(sample_logs, tmp_path, spark, monkeypatch):
    t = copy_sample(sample_logs, MERGE, tmp_path / "t")
    outside = tmp_path / "outside-secret"
    (outside / "date=2024-06-18").mkdir(parents=True)
    (outside / "secret.parquet").write_bytes(b"PAR1 secret")
    (outside / "date=2024-06-18" / "deep.parquet").write_bytes(b"PAR1 deep")
    os.symlink(outside, t / "date=2024-06-20")  # a partition-looking directory that is a link
    os.symlink(outside / "secret.parquet", t / "date=2024-06-18" / "link.parquet")
    os.symlink(outside, t / "_delta_log" / "_sidecars")  # even in the log directory
    sneaky = ["../outside-secret/secret.parquet", "date=2024-06-18/../../outside-secret/deep.parquet",
              str(outside / "secret.parquet"), "file://" + str(outside / "secret.parquet"), "date=2024-06-20/deep.parquet"]
    adds = [{"add": {"path": p, "partitionValues": {"date": "2024-06-18"}, "size": 1, "modificationTime": 1, "dataChange": True}} for p in sneaky]
    ci = {"commitInfo": {"timestamp": 1718870999000, "operation": "WRITE", "operationParameters": {"mode": "Append"}, "readVersion": 4,
                         "isolationLevel": "Serializable", "isBlindAppend": True, "engineInfo": "Apache-Spark/3.5.1 Delta-Lake/3.2.0"}}
    commit_file(t, 5).write_text("\n".join(json.dumps(a) for a in [ci] + adds) + "\n")
    # Warm: Spark reads the log before we start watching (its JVM is not Python anyway).
    rc, _, err = run_cli(["history", str(t)])
    assert rc == 0, err
    acc = AccessLog(monkeypatch)
    outputs = []
    for argv in (["evidence", str(t), "--json"], ["evidence", str(t)], ["snapshot", str(t), "--json"], ["replay", str(t), "--json"],
                 ["explain", str(t), "4"], ["sets", str(t), "--json"]):
        rc, out, err = run_cli(argv)
        assert rc == 0, (argv, err)
        outputs.append((out, err))
    monkeypatch.undo()
    assert any(fn == "os.scandir" and os.path.normpath(p) == str(t) for fn, p, _ in acc.calls)  # the watch works
    secret = str(outside)
    for fn, p, follow in acc.calls:
        norm = os.path.normpath(p)
        assert not norm.startswith(secret), f"{fn}({p!r}) escaped the table root"
        if fn.endswith(("scandir", "listdir", "open")):
            assert "date=2024-06-20" not in norm and not norm.endswith("link.parquet") and "_sidecars" not in norm, f"{fn}({p!r}) followed a link"
        if fn == "os.stat" and follow:
            assert not norm.endswith(("date=2024-06-20", "link.parquet", "_sidecars")), f"{fn}({p!r}) followed a link"
    ev = json.loads(outputs[0][0])
    assert not [p for p in ev["orphanFiles"] + ev["unknownFiles"] if "secret" in p or "deep" in p or "link.parquet" in p]
    assert any(f["code"] == "evidence.symlink" for f in ev["findings"])
    assert "PAR1" not in "".join(o + e for o, e in outputs)  # no content of any file was read out


# --------------------------------------------------------------------------------------
# 4. no code from the log
# --------------------------------------------------------------------------------------

# Calls that could run text as code or SQL, and the places allowed to make them (with why).
ALLOWED: dict[tuple[str, str], str] = {
    ("forensics/log/reader.py", "expr"): "F.expr on a constant string (json_object_keys): no log text reaches it",
}
# SQL text this code builds itself, only from its own literals: module constants, or functions
# that take no arguments (so no log text can be passed in; test_static_sql_takes_no_input).
STATIC_SQL: dict[tuple[str, str], str] = {
    ("forensics/log/reader.py", "_OKIND_SQL"): "which action a line holds: CASE over literal action names",
    ("forensics/log/reader.py", "_unknown_sql"): "top-level keys that are no known action: literal names",
    ("forensics/log/reader.py", "_rows_sql"): "the per-line projection: literal field names and types",
    ("forensics/log/reader.py", "_OKIND_SQL_UTF8"): "_OKIND_SQL without its literal U+FFFD search",
    ("forensics/log/reader.py", "_other_row_sql"): "a line's other action as a struct: literal field names and types",
    ("forensics/log/reader.py", "_other_row_sql_utf8"): "_other_row_sql without its literal U+FFFD search",
    ("forensics/log/reader.py", "NONBLANK_SQL"): "whether a line is blank: one literal condition",
}
DANGEROUS_NAMES = {"eval", "exec", "compile", "__import__", "execfile"}
DANGEROUS_ATTRS = {"sql", "expr", "selectExpr", "system", "popen", "loads_pickle"}
DANGEROUS_MODULES = {"pickle", "cPickle", "dill", "marshal", "shelve", "cloudpickle"}


def _sources() -> list[Path]:
    return sorted(p for d in ("forensics", "tui") for p in (REPO / d).rglob("*.py"))


def scan_for_code_execution(paths: list[Path], root: Path) -> list[str]:
    """Every call that could run text as code or SQL, outside ALLOWED."""
    bad = []
    for path in paths:
        rel = str(path.relative_to(root))
        tree = ast.parse(path.read_text(), filename=rel)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
                for n in names:
                    if n.split(".")[0] in DANGEROUS_MODULES:
                        bad.append(f"{rel}:{node.lineno}: imports {n}")
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Name) and f.id in DANGEROUS_NAMES:
                bad.append(f"{rel}:{node.lineno}: {f.id}(")
            if isinstance(f, ast.Attribute) and f.attr in DANGEROUS_ATTRS:
                # sqlglot renders an expression with .sql(dialect=...): printing, not executing.
                if f.attr == "sql" and any(k.arg == "dialect" for k in node.keywords) and not node.args:
                    continue
                const = all(isinstance(a, ast.Constant) and isinstance(a.value, str) or _static_sql(rel, a) for a in node.args)
                if (rel, f.attr) in ALLOWED and const:
                    continue
                bad.append(f"{rel}:{node.lineno}: .{f.attr}(" + ("" if const else " with a non-constant argument"))
            if isinstance(f, ast.Attribute) and f.attr in ("run", "Popen", "call", "check_output", "check_call"):
                if any(k.arg == "shell" and isinstance(k.value, ast.Constant) and k.value.value for k in node.keywords):
                    bad.append(f"{rel}:{node.lineno}: subprocess with shell=True")
    return bad


def _static_sql(rel: str, a: ast.expr) -> bool:
    if isinstance(a, ast.Name):
        return (rel, a.id) in STATIC_SQL
    return isinstance(a, ast.Call) and not a.args and not a.keywords and isinstance(a.func, ast.Name) and (rel, a.func.id) in STATIC_SQL


def test_static_sql_takes_no_input():
    """What STATIC_SQL names is a constant assigned from literals and helpers, or a function
    without parameters: nothing from a log can reach the SQL it returns."""
    for (rel, name), _why in STATIC_SQL.items():
        tree = ast.parse((REPO / rel).read_text())
        defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
        assigns = [n for n in tree.body if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)]
        assert len(defs) + len(assigns) == 1, (rel, name)
        for d in defs:
            a = d.args
            assert not (a.args or a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg), f"{name} takes arguments"


def test_no_eval_exec_pickle_or_sql_from_strings():
    bad = scan_for_code_execution(_sources(), REPO)
    assert not bad, "code or SQL could be run from strings:\n" + "\n".join(bad)


def test_the_source_scan_sees_what_it_forbids(tmp_path):
    """The scan itself can fail: planted eval(), pickle, spark.sql(f-string) and F.expr(var) are caught."""
    planted = tmp_path / "planted.py"
    planted.write_text(
        "import pickle\nimport pyspark.sql.functions as F\n"
        "def f(spark, s, tree):\n    eval(s)\n    tree.sql(dialect='spark')\n    F.expr(s)\n    return spark.sql(f'SELECT {s}')\n"
    )
    bad = scan_for_code_execution([planted], tmp_path)
    assert [b.split(": ", 1)[1] for b in bad] == [
        "imports pickle", "eval(", ".expr( with a non-constant argument", ".sql( with a non-constant argument",
    ], bad


def test_predicate_parser_bounds_size_and_depth():
    from forensics.predicates import MAX_DEPTH, MAX_PREDICATE_CHARS, parse_predicate

    for text in ("(" * 100_000 + "a = 1" + ")" * 100_000, "NOT " * 50_000 + "a = 1", " AND ".join(f"(a = {i}" for i in range(5000)),
                 "a = '" + "x" * (4 * MAX_PREDICATE_CHARS) + "'", "a IN (" + ",".join(map(str, range(200_000))) + ")"):
        t0 = time.monotonic()
        p = parse_predicate(text)
        assert time.monotonic() - t0 < 5, text[:40]
        assert p.sql is None and p.error, text[:40]
    # Real predicates nest a few levels; 20 must still parse (the exact boundary: next test).
    deep_ok = "(" * 20 + "a = 1" + ")" * 20
    assert parse_predicate(deep_ok).sql is not None and MAX_DEPTH >= 20


NESTINGS = {
    "parentheses": lambda d: "(" * d + "a = 1" + ")" * d,
    "calls": lambda d: "abs(" * d + "a" + ")" * d + " = 1",
    "NOT": lambda d: "NOT " * d + "a = 1",
    "CASE": lambda d: "CASE WHEN " * d + "a = 1" + " THEN 1 END" * d + " = 1",
    "Catalyst OR chain": lambda d: "(" * d + "(a = 0)" + "".join(f" OR (a = {i}))" for i in range(1, d + 1)),
    "IN": lambda d: "a IN (" * d + "1" + ")" * d,
}


@pytest.mark.parametrize("form", sorted(NESTINGS))
def test_nesting_limit_is_the_one_the_message_names(form):
    """Up to MAX_DEPTH levels parse, one more is refused with "nesting deeper than MAX_DEPTH", even
    when parse_predicate is called 300 frames deep (the message once said 200 while sqlglot's
    recursion stopped near 49). The oracle: sqlglot's own tree, parsed in a thread with room to spare."""
    import sys
    import threading

    import sqlglot

    from forensics.predicates import MAX_DEPTH, parse_predicate
    from forensics.predicates.parse import _depth, _parse_cached

    def oracle_depth(text: str) -> int:
        got: dict[str, int] = {}

        def run() -> None:
            sys.setrecursionlimit(100_000)
            got["d"] = _depth(sqlglot.parse_one(text, read="spark"))

        old = threading.stack_size(512 << 20)
        try:
            t = threading.Thread(target=run)
            t.start()
            t.join()
        finally:
            threading.stack_size(old)
        return got["d"]

    def nested(n: int, f):
        return f() if n == 0 else nested(n - 1, f)

    saw = set()
    for d in range(1, MAX_DEPTH + 3):
        text = NESTINGS[form](d)
        depth = oracle_depth(text)
        _parse_cached.cache_clear()
        p = nested(300, lambda: parse_predicate(text))
        if depth <= MAX_DEPTH:
            assert p.sql is not None, (d, depth, p.error)
            saw.add("ok")
        else:
            assert p.sql is None and p.error == f"nesting deeper than {MAX_DEPTH}", (d, depth, p.error)
            saw.add("refused")
        if depth > MAX_DEPTH + 1:
            break
    assert saw == {"ok", "refused"}, saw  # the boundary was crossed


def test_error_text_parser_bounds_hostile_input():
    from forensics.errortext import parse_error_text

    t0 = time.monotonic()
    r = parse_error_text("ConcurrentAppendException: " + "{" * 200_000 + '"a":' * 50_000)
    assert time.monotonic() - t0 < 10 and r is not None


# --------------------------------------------------------------------------------------
# 5. fuzzing the parsers not covered elsewhere
# --------------------------------------------------------------------------------------

from forensics.log import listing as L  # noqa: E402
from forensics.log.params import decode_parameters, decode_value, parse_commit_info  # noqa: E402

name_parts = st.sampled_from(["0" * 20, "00000000000000000007", "1" * 19, ".json", ".crc", ".checkpoint", ".parquet", ".compacted",
                              ".0000000001", ".0000000002", ".", "_last_checkpoint", ".tmp", "._", "-", "a", "\x1b", "é", "%20", "uuid"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(name_parts, min_size=1, max_size=6).map("".join), min_size=1, max_size=25, unique=True))
def test_listing_classifies_any_names(tmp_path_factory, names):
    t = tmp_path_factory.mktemp("lst")
    log = t / "_delta_log"
    log.mkdir()
    for n in names:
        if "/" in n or n in (".", ".."):
            continue
        (log / n).write_bytes(b"{}")
    listing = L.list_log(str(t))
    for v, f in listing.commits.items():
        assert L.RE_COMMIT.match(f.name) and int(f.name[:20]) == v
    for cp in listing.checkpoints:
        assert all(f.name.startswith(f"{cp.version:020d}.checkpoint") for f in cp.files)
    for f in listing.findings:
        assert f.file or f.version is not None


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4), max_leaves=20))
def test_params_decoding_never_raises(value):
    decoded = decode_parameters({"p": value, "j": json.dumps(value)})
    assert set(decoded) == {"p", "j"}
    # list/object parameters written as JSON text decode back to the value (conflict-rules §8.1)
    if isinstance(value, (list, dict)):
        assert decoded["j"] == value
    decode_value(value)
    assert isinstance(parse_commit_info(json.dumps(value)), dict)
    assert parse_commit_info(json.dumps(value)[:7]) in ({}, value)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300), st.integers(min_value=0, max_value=50))
def test_lenient_json_on_hostile_nesting(text, depth):
    from forensics.errortext.lenient_json import parse_lenient

    parse_lenient("{" * depth + text + "[" * depth)
    parse_lenient('{"a":' * depth + text)


json_line = st.one_of(
    st.just('{"commitInfo":{"operation":"WRITE","readVersion":0}}'),
    st.just('{"add":{"path":"f.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}'),
    st.just('{"remove":{"path":"f.parquet","dataChange":true}}'),
    st.just('{"unknownThing":{}}'),
    st.text(max_size=60).filter(lambda s: "\n" not in s and "\r" not in s),
    st.binary(max_size=40).map(lambda b: b.decode("latin-1")).filter(lambda s: "\n" not in s and "\r" not in s),
)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.lists(json_line, min_size=0, max_size=6), min_size=1, max_size=4))
def test_reader_on_generated_logs_never_crashes(tmp_path_factory, spark, commits):
    """Small logs of valid, broken and hostile lines: every line either parses or is a finding
    naming its file and version; the CLI never fails with a traceback."""
    t = tmp_path_factory.mktemp("gen")
    log = t / "_delta_log"
    log.mkdir()
    for v, lines in enumerate(commits):
        (log / f"{v:020d}.json").write_bytes(("\n".join(lines) + "\n").encode("utf-8", "surrogatepass") if lines else b"")
    for cmd in ("history", "snapshot"):
        rc, out, err = run_cli([cmd, str(t), "--json"])  # history reads with Spark, snapshot from the cache
        assert rc in (0, 3, 4, 7), (cmd, err)
        assert "Traceback" not in err and "internal error" not in err, err
        if rc == 0:
            json.loads(out)
        for line in findings_of(err):
            assert re.search(r"\((_delta_log[^,)]*, )?version \d+\)|\(_delta_log[^)]*\)", line), line
