"""Shared fixtures: one local SparkSession per test run, paths to sample logs and ../shared."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE_LOGS = REPO / "sample_logs"
SHARED = Path(os.environ.get("DELTA_FORENSICS_SHARED", REPO.parent / "shared"))


def pytest_sessionstart(session) -> None:
    """Give every sample table its recorded file times before any test runs (a git checkout sets
    them to the checkout's time; evidence reads them). Once per process, before its first test:
    restoring them mid-run, as fixtures did, changed the times under a test on another xdist
    worker between its two runs of one command (an in-process and an engine answer that then
    differed)."""
    from forensics.synth.mtimes import restore_in_place

    for sample in sorted(SAMPLE_LOGS.iterdir()):
        if sample.is_dir():
            restore_in_place(sample)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def sample_logs() -> Path:
    return SAMPLE_LOGS


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not (SHARED / "spec" / "conflict-rules.md").exists():
        pytest.skip("../shared reference material is absent")
    return SHARED


# The test session's JVM and every CLI subprocess use the JVM class-data archive when one
# exists (`make test` builds it first, forensics/runtime/jvm_archive.py) but never write one: a
# session-long JVM would record every class of the run and dump them all at exit.
os.environ.setdefault("DELTA_FORENSICS_JVM_ARCHIVE", "use")

# Commands run in-process in every test (and every CLI subprocess they start), as with --no-engine:
# tests/test_engine.py runs a representative subset through the warm engine, not the whole suite twice.
os.environ.setdefault("DELTA_FORENSICS_ENGINE", "off")


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of this test run (local[2], UI off, few shuffle partitions)."""
    from forensics.runtime.spark import get_spark

    session = get_spark(master="local[2]")
    yield session


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own cache directory so cached results never leak between tests."""
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("DELTA_FORENSICS_CACHE_DIR", str(cache))
    yield
