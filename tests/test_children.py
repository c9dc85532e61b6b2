"""The environment of the tool's own Python children (forensics/runtime/children.py): the halves
of the commitInfo decode, the bundle's copiers, the replay's second process and the warm engine. Each finds this package
without an install, and none holds a storage credential of the caller's (the engine's own test
is `test_engine.py::test_the_engine_never_receives_credentials`)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from forensics.log import bundle
from forensics.log.params import commit_info_columns, concat_columns
from forensics.runtime import halves
from forensics.runtime.children import PACKAGE_PARENT, child_environment

REPO = Path(__file__).resolve().parent.parent
CANARY = "canary-7f3e1b-never-in-a-child"
SECRETS = {"AWS_SECRET_ACCESS_KEY": CANARY, "AWS_PROFILE": "incident", "AZURE_STORAGE_ACCOUNT_KEY": CANARY,
           "GOOGLE_APPLICATION_CREDENTIALS": "/home/u/sa.json", "MY_SERVICE_TOKEN": CANARY}


def test_the_child_environment_drops_credentials_and_keeps_the_rest():
    env = {"PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "PYTHONPATH": "/opt/lib", **SECRETS}
    got = child_environment(env)
    assert not set(SECRETS) & set(got)
    assert got["PATH"] == "/usr/bin" and got["HOME"] == "/home/u" and got["LANG"] == "C.UTF-8"
    assert got["PYTHONPATH"] == os.pathsep.join([PACKAGE_PARENT, "/opt/lib"])
    assert env["AWS_SECRET_ACCESS_KEY"] == CANARY  # the caller's mapping is left as it was


def _recording_python(tmp_path: Path) -> tuple[Path, Path]:
    """An interpreter that writes its environment to a file and then runs as this one would."""
    dumps = tmp_path / "environments"
    dumps.mkdir()
    script = tmp_path / "python"
    script.write_text(f'#!/bin/sh\nenv -0 > "{dumps}/$$.env"\nexec "{sys.executable}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, dumps


def _environments(dumps: Path) -> list[dict[str, str]]:
    out = []
    for f in sorted(dumps.glob("*.env")):
        pairs = [e.split("=", 1) for e in f.read_text().split("\0") if "=" in e]
        out.append(dict(pairs))
    return out


@pytest.fixture()
def secrets_set(monkeypatch):
    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)


@pytest.mark.skipif(halves.cores() < 2, reason="the second process runs with two cores or more")
def test_the_halves_child_holds_no_credential(tmp_path, monkeypatch, secrets_set):
    python, dumps = _recording_python(tmp_path)
    monkeypatch.setattr(halves, "PYTHON", str(python))
    raws = [json.dumps({"userId": f"u{i}", "operation": "WRITE"}) for i in range(40)]
    has = [True] * len(raws)
    assert halves.in_two(commit_info_columns, concat_columns, raws, has, min_items=0) == commit_info_columns(raws, has)
    [env] = _environments(dumps)
    assert not set(SECRETS) & set(env) and CANARY not in json.dumps(env)
    assert env["PYTHONPATH"].split(os.pathsep)[0] == PACKAGE_PARENT


def test_the_bundles_copiers_hold_no_credential(tmp_path, monkeypatch, secrets_set):
    python, dumps = _recording_python(tmp_path)
    monkeypatch.setattr(sys, "executable", str(python))
    src = tmp_path / "log"
    src.mkdir()
    work = []
    for v in range(4):
        (src / f"{v:020d}.json").write_text('{"commitInfo":{"operation":"WRITE"}}\n')
        work.append((str(src / f"{v:020d}.json"), f"{v:020d}.json", v))
    out = tmp_path / "bundle"
    out.mkdir()
    assert bundle._in_workers(out, [work[:2], work[2:]]) == (None, False)
    envs = _environments(dumps)
    assert len(envs) == 2
    for env in envs:
        assert not set(SECRETS) & set(env) and CANARY not in json.dumps(env)
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["part-a-00000.tsv", "part-b-00000.tsv"]


def test_a_child_of_the_tool_finds_this_package_without_an_install(tmp_path):
    """An interpreter without the package installed (the venv's base) imports it through the
    child environment alone, not without it."""
    base = Path(sys.base_prefix) / "bin" / "python3"
    if sys.base_prefix == sys.prefix or not base.exists():
        pytest.skip("needs a virtual environment over a base interpreter")
    code = "import forensics.runtime.children as c; print(c.PACKAGE_PARENT)"
    bare_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    bare = subprocess.run([str(base), "-c", code], env=bare_env, capture_output=True, cwd=tmp_path, timeout=60)
    assert bare.returncode != 0 and b"No module named 'forensics'" in bare.stderr
    ok = subprocess.run([str(base), "-c", code], env=child_environment(bare_env), capture_output=True, cwd=tmp_path, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.decode().strip() == PACKAGE_PARENT == str(REPO)


@pytest.mark.skipif(halves.cores() < 2, reason="the second process runs with two cores or more")
def test_the_replays_second_process_holds_no_credential(tmp_path, monkeypatch, secrets_set, spark):
    from forensics.log.delta_log import DeltaLog
    from forensics.replay import second
    from forensics.replay.windows import replay_table

    python, dumps = _recording_python(tmp_path)
    monkeypatch.setattr(second, "PYTHON", str(python))
    monkeypatch.setattr(second, "MIN_WINDOWS", 1)
    report = replay_table(DeltaLog.open(str(REPO / "sample_logs" / "busy" / "table")))
    assert report.verdicts
    [env] = _environments(dumps)
    assert not set(SECRETS) & set(env) and CANARY not in json.dumps(env)
    assert env["PYTHONPATH"].split(os.pathsep)[0] == PACKAGE_PARENT
