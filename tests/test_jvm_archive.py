"""The JVM class-data archive: written by a first run, used by the next, never a byte on stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from forensics.runtime import jvm_archive
from forensics.runtime.java import JVM_OPTS, find_java


def _history(table: str, env: dict) -> dict:
    p = subprocess.run(
        [sys.executable, "-m", "forensics", "history", table, "--json", "-q", "--no-cache"],
        capture_output=True, env=env, timeout=600,
    )
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    # The whole of stdout is one JSON document: the JVM's archive dump at exit (which happens
    # after Python has gone, on the same stdout) must not add a byte to it.
    return json.loads(p.stdout.decode())


def _wait_for_dump(part) -> None:
    """The JVM dumps its archive as it exits, after the Python process: wait until the file stops growing."""
    deadline, last = time.time() + 120, -1
    while time.time() < deadline:
        size = part.stat().st_size if part.exists() else -1
        if size > 0 and size == last:
            return
        last = size
        time.sleep(2)


@pytest.mark.skipif(find_java().major is None or find_java().major < 17, reason="needs Java 17+")
def test_first_run_writes_the_archive_and_the_next_uses_it(tmp_path, sample_logs, monkeypatch):
    table = str(sample_logs / "quickstart" / "table")
    monkeypatch.setenv("DELTA_FORENSICS_JVM_ARCHIVE_DIR", str(tmp_path / "jvm"))
    monkeypatch.setenv("DELTA_FORENSICS_JVM_ARCHIVE", "auto")
    java, opts = find_java(), os.environ.get("DELTA_FORENSICS_JVM_OPTS", JVM_OPTS)
    final, part, _lock = jvm_archive._paths(jvm_archive.archive_key(java.path, java.raw, opts))

    first = _history(table, dict(os.environ))  # no archive yet: this run's JVM writes one at exit
    _wait_for_dump(part)
    assert part.exists(), "the first run wrote no archive"
    jvm_archive._finish(part, final)
    assert jvm_archive.plan(java.path, java.raw, opts).mode == "use" and final.stat().st_size > (1 << 20)

    second = _history(table, dict(os.environ))  # this JVM maps the archive
    assert second == first and len(second) == 20


def test_off_means_no_archive_options(monkeypatch, tmp_path):
    monkeypatch.setenv("DELTA_FORENSICS_JVM_ARCHIVE_DIR", str(tmp_path))
    monkeypatch.setenv("DELTA_FORENSICS_JVM_ARCHIVE", "off")
    assert jvm_archive.plan("/usr/bin/java", "17", JVM_OPTS).options == ""
    monkeypatch.setenv("DELTA_FORENSICS_JVM_ARCHIVE", "use")
    assert jvm_archive.plan("/usr/bin/java", "17", JVM_OPTS).mode == "off"  # none there yet, and "use" never writes
    assert not any(tmp_path.iterdir())


def test_a_truncated_dump_is_dropped_not_used(monkeypatch, tmp_path):
    monkeypatch.setenv("DELTA_FORENSICS_JVM_ARCHIVE_DIR", str(tmp_path))
    monkeypatch.setenv("DELTA_FORENSICS_JVM_ARCHIVE", "auto")
    final, part, _lock = jvm_archive._paths(jvm_archive.archive_key("/usr/bin/java", "17", JVM_OPTS))
    part.write_bytes(b"\x00" * 4096)  # not an archive: wrong magic, too short
    old = time.time() - 3600
    os.utime(part, (old, old))
    plan = jvm_archive.plan("/usr/bin/java", "17", JVM_OPTS)
    assert not final.exists() and plan.mode == "create"  # dropped, and this start writes a new one


@pytest.mark.live
@pytest.mark.skipif(find_java().major is None or find_java().major < 17, reason="needs Java 17+")
def test_deltas_classes_start_from_the_archive(tmp_path, monkeypatch):
    """Delta's jars (forensics/runtime/delta_jvm.py) reach the session through `spark.jars`, a class
    loader of Spark's own; the dynamic archive keeps classes it gave too, so a later start maps
    them as it maps Spark's instead of reading them from the jars."""
    import os as _os

    if not _os.environ.get("DELTA_FORENSICS_DELTA_JARS"):
        pytest.skip("DELTA_FORENSICS_DELTA_JARS is not set (make test-live sets it)")
    monkeypatch.setenv("DELTA_FORENSICS_JVM_ARCHIVE_DIR", str(tmp_path / "jvm"))
    monkeypatch.setenv("DELTA_FORENSICS_JVM_ARCHIVE", "auto")
    monkeypatch.setenv("DELTA_FORENSICS_CACHE_DIR", str(tmp_path / "cache"))
    code = ("import sys\n"
            "from forensics.runtime.java import check_java\n"
            "from forensics.runtime.spark import driver_java_options, get_spark\n"
            "from forensics.runtime.delta_jvm import loaded\n"
            "opts = driver_java_options(check_java())\n"
            "assert 'SharedArchiveFile' in opts, opts\n"
            "s = get_spark(conf={'spark.driver.extraJavaOptions': opts + ' -Xlog:class+load=info:file=' + sys.argv[1]})\n"
            "assert loaded(s)\n"
            "s.range(1).count()\n")
    p = subprocess.run([sys.executable, "-c", "from forensics.runtime.jvm_archive import build; print(build().mode)"],
                       capture_output=True, text=True, timeout=600)
    assert p.stdout.strip() == "use", p.stderr[-2000:]
    log = tmp_path / "classes.log"
    p = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    delta = [ln for ln in log.read_text().splitlines() if " io.delta." in ln or " org.apache.spark.sql.delta." in ln]
    from_archive = [ln for ln in delta if "source: shared objects file" in ln]
    # the extension the session is started with, and a good part of what it pulls in (measured: 91
    # of 197; lambda forms and the classes the dump of a custom class loader skips come from the jar)
    assert any(" io.delta.sql.DeltaSparkSessionExtension " in ln for ln in from_archive), delta[:5]
    assert len(from_archive) >= 50, (len(from_archive), len(delta))


_EMPTY_IVY = """<ivysettings>
  <settings defaultResolver="empty"/>
  <resolvers><filesystem name="empty"><artifact pattern="{repo}/[module]-[revision].[ext]"/></filesystem></resolvers>
</ivysettings>
"""


@pytest.mark.skipif(find_java().major is None or find_java().major < 17, reason="needs Java 17+")
def test_a_start_that_could_not_have_deltas_jars_leaves_the_archive_to_the_retry(tmp_path, monkeypatch):
    """The first start asks Ivy for Delta's jars; with none to be had its JVM exits at once, dumping
    the few classes of that failure. The archive later starts map must be the retried session's,
    which ran a job: its scheduler's classes come from the archive, not the jars."""
    (tmp_path / "repo").mkdir()
    settings = tmp_path / "ivysettings.xml"
    settings.write_text(_EMPTY_IVY.format(repo=tmp_path / "repo"))
    env = {**os.environ, "DELTA_FORENSICS_JVM_ARCHIVE_DIR": str(tmp_path / "jvm"), "DELTA_FORENSICS_JVM_ARCHIVE": "auto",
           "XDG_CACHE_HOME": str(tmp_path / "xdg"), "DELTA_FORENSICS_CACHE_DIR": str(tmp_path / "cache"),
           "DELTA_FORENSICS_DELTA_PACKAGE": "io.delta:delta-spark_2.13:0.0.0", "DELTA_FORENSICS_DELTA": "on"}
    env.pop("DELTA_FORENSICS_DELTA_JARS", None)
    monkeypatch.setenv("DELTA_FORENSICS_JVM_ARCHIVE_DIR", env["DELTA_FORENSICS_JVM_ARCHIVE_DIR"])
    first = ("import sys\n"
             "from forensics.runtime.spark import get_spark\n"
             "from forensics.runtime.delta_jvm import loaded\n"
             "s = get_spark(conf={'spark.jars.ivySettings': sys.argv[1]})\n"
             "assert not loaded(s)\n"
             "s.range(3).count()\n")
    p = subprocess.run([sys.executable, "-c", first, str(settings)], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "could not be used" in p.stderr  # the one line about Delta's side, and the run went on
    java, opts = find_java(), os.environ.get("DELTA_FORENSICS_JVM_OPTS", JVM_OPTS)
    final, part, _lock = jvm_archive._paths(jvm_archive.archive_key(java.path, java.raw, opts))
    _wait_for_dump(part)  # the retried start's JVM dumps as it exits
    assert part.exists(), "no archive was dumped"
    jvm_archive._finish(part, final)

    log = tmp_path / "classes.log"
    second = ("import sys\n"
              "from forensics.runtime.java import check_java\n"
              "from forensics.runtime.spark import driver_java_options, get_spark\n"
              "opts = driver_java_options(check_java())\n"
              "assert 'SharedArchiveFile' in opts, opts\n"
              "get_spark(conf={'spark.driver.extraJavaOptions': opts + ' -Xlog:class+load=info:file=' + sys.argv[1]}).range(3).count()\n")
    env["DELTA_FORENSICS_DELTA"] = "off"
    p = subprocess.run([sys.executable, "-c", second, str(log)], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    loads = log.read_text().splitlines()
    scheduler = [ln for ln in loads if " org.apache.spark.scheduler.DAGScheduler " in ln]
    assert scheduler and "source: shared objects file" in scheduler[0], scheduler
