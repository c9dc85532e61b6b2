"""Installed like a Python tool: the wheel holds every file the package reads at run time, and
(live, `make install-check`) a wheel built from the sources installs into a fresh virtual
environment, where `delta-forensics` answers from outside the checkout.

The fresh environment installs with pip's cache and the versions this environment runs
(`pip freeze` as constraints), so pyspark's 450 MB are not fetched again."""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("forensics", "tui")
QUICKSTART = ROOT / "sample_logs" / "quickstart" / "table"


def _data_files() -> list[str]:
    """Every file in the packages that is not Python source: what the code reads at run time
    (schemas, conformance scenarios, the TUI's stylesheet)."""
    out = []
    for pkg in PACKAGES:
        for p in sorted((ROOT / pkg).rglob("*")):
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts:
                out.append(p.relative_to(ROOT).as_posix())
    return out


def _package_data() -> dict[str, list[str]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]


def _declared(path: str, package_data: dict[str, list[str]]) -> bool:
    """Whether a package-data pattern of the file's package (setuptools' glob, relative to it) covers it."""
    pkg, _, rel = path.partition("/")
    return any(fnmatch.fnmatchcase(rel, pattern) and rel.count("/") == pattern.count("/") for pattern in package_data.get(pkg, []))


def test_every_data_file_is_declared_package_data():
    files = _data_files()
    assert {"forensics/schemas/history.schema.json", "tui/app.tcss"} <= set(files)
    assert any(f.startswith("forensics/conformance/scenarios/") for f in files)
    missing = [f for f in files if not _declared(f, _package_data())]
    assert missing == [], f"add to [tool.setuptools.package-data] in pyproject.toml: {missing}"


def test_declaration_check_can_fail():
    assert not _declared("tui/widgets/new.tcss", {"tui": ["*.tcss"]})
    assert not _declared("forensics/schemas/x.json", {"forensics": ["schemas/*.schema.json"]})
    assert _declared("forensics/schemas/x.schema.json", {"forensics": ["schemas/*.schema.json"]})


# --------------------------------------------------------------------------------------
# live: build the wheel, install it into a fresh venv, run it
# --------------------------------------------------------------------------------------


def _sources(dest: Path) -> Path:
    """A copy of what a build reads (the checkout stays free of build/ and egg-info)."""
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, dest / name)
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, dest / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _run(argv: list, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, stdin=subprocess.DEVNULL, **kw)
    assert proc.returncode == 0, f"{argv}: {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.mark.live
@pytest.mark.slow
def test_wheel_installs_into_a_fresh_venv_and_runs(tmp_path):
    (tmp_path / "src").mkdir()
    src = _sources(tmp_path / "src")
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", dist, src], timeout=600)
    wheels = list(dist.glob("delta_forensics-*.whl"))
    assert len(wheels) == 1, wheels
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    missing = [f for f in _data_files() if f not in names]
    assert missing == [], f"not in the wheel: {missing}"
    assert "forensics/cli/commands/completion.py" in names and not any(n.startswith("tests/") for n in names)

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    pins = tmp_path / "constraints.txt"
    frozen = _run([sys.executable, "-m", "pip", "freeze", "--exclude-editable"], timeout=120).stdout
    pins.write_text("".join(line + "\n" for line in frozen.splitlines() if line and not line.startswith(("-e", "delta-forensics", "delta_forensics"))))
    _run([py, "-m", "pip", "install", "-q", "-c", pins, wheels[0]], timeout=1200)  # pip's own cache: nothing fetched twice

    # From a directory outside the checkout, with a clean environment: only the installed package answers.
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {"PATH": f"{env_dir / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8",
           "DELTA_FORENSICS_CACHE_DIR": str(tmp_path / "cache"),
           "DELTA_FORENSICS_ENGINE": "off",  # no resident engine left behind by a test
           "DELTA_FORENSICS_DELTA": "on" if os.environ.get("DELTA_FORENSICS_DELTA_JARS") else "off",  # no jar download
           **{k: v for k, v in os.environ.items() if k in ("JAVA_HOME", "DELTA_FORENSICS_DELTA_JARS")}}
    exe = env_dir / "bin" / "delta-forensics"
    where = _run([py, "-c", "import forensics, tui; print(forensics.__file__); print(tui.__file__)"], cwd=work, env=env, timeout=60)
    assert all(str(env_dir) in line for line in where.stdout.splitlines()), where.stdout
    assert _run([exe, "--version"], cwd=work, env=env, timeout=60).stdout.strip() == "delta-forensics 0.1.0"
    history = json.loads(_run([exe, "history", QUICKSTART, "--json"], cwd=work, env=env, timeout=600).stdout)
    assert [c["version"] for c in history] == list(range(20))
    schema = json.loads(_run([exe, "schema", "history"], cwd=work, env=env, timeout=60).stdout)  # package data via importlib.resources
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "_shtab_delta_forensics" in _run([exe, "completion", "bash"], cwd=work, env=env, timeout=60).stdout
    css = _run([py, "-c", "import importlib.resources as r; print(r.files('tui').joinpath('app.tcss').read_text()[:1])"],
               cwd=work, env=env, timeout=60)
    assert css.stdout.strip()
