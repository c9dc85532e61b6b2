"""Tables in object stores through the real path: the CLI and forensics.Table against moto (S3),
Azurite (Azure) and fake-gcs-server (GCS) on 127.0.0.1, compared with the same table on disk.

Every answer must equal the local copy's, apart from the table's URI and file times; the
`_delta_log` is mirrored into the cache and refreshed by fetching only what changed.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import uuid
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import servers
from servers import closed_port, upload_dir

from forensics import Table
from forensics.cli.main import main
from forensics.runtime.paths import mirror_dir, table_cache_dir

s3_server = servers.s3_server
azurite = servers.azurite
gcs_server = servers.gcs_server

pytestmark = pytest.mark.usefixtures("spark")
CLOUD_ENV = ("AWS_", "AZURE_", "GOOGLE_", "DELTA_FORENSICS_PROFILE", "HTTPS_PROXY", "HTTP_PROXY")


@pytest.fixture(autouse=True)
def _no_cloud_env(monkeypatch):
    """Each test says where its credentials come from; none leak in from the machine."""
    for k in list(os.environ):
        if k.startswith(CLOUD_ENV):
            monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _opts(options: dict[str, str]) -> list[str]:
    return [a for k, v in options.items() for a in ("--storage-option", f"{k}={v}")]


def _s3_table(s3_server, sample_logs: Path, name: str) -> str:
    bucket = f"b{uuid.uuid4().hex[:12]}"
    s3_server.create_bucket(bucket)
    upload_dir(s3_server.store(bucket, name), sample_logs / name / "table")
    return f"s3://{bucket}/{name}"


def test_s3_history_equals_the_local_copy_with_env_credentials(s3_server, sample_logs, monkeypatch):
    uri = _s3_table(s3_server, sample_logs, "quickstart")
    for k, v in s3_server.options().items():
        monkeypatch.setenv(k, v)
    code, remote, err = cli("history", uri, "--json", "-q")
    assert code == 0, err
    _, local, _ = cli("history", str(sample_logs / "quickstart" / "table"), "--json", "-q")
    assert json.loads(remote) == json.loads(local)
    code, remote_a, err = cli("history", uri.replace("s3://", "s3a://"), "--json", "-q")
    assert code == 0 and json.loads(remote_a) == json.loads(local), err


def test_s3_history_with_storage_options_only(s3_server, sample_logs):
    uri = _s3_table(s3_server, sample_logs, "quickstart")
    code, remote, err = cli("history", uri, "--json", "-q", *_opts(s3_server.options()))
    assert code == 0, err
    _, local, _ = cli("history", str(sample_logs / "quickstart" / "table"), "--json", "-q")
    assert json.loads(remote) == json.loads(local)


def test_azure_history_equals_the_local_copy(azurite, sample_logs, monkeypatch):
    container = f"c{uuid.uuid4().hex[:12]}"
    azurite.create_container(container)
    upload_dir(azurite.store(container, "quickstart"), sample_logs / "quickstart" / "table")
    uri = f"az://{container}/quickstart"
    _, local, _ = cli("history", str(sample_logs / "quickstart" / "table"), "--json", "-q")
    code, by_flags, err = cli("history", uri, "--json", "-q", *_opts(azurite.options()))
    assert code == 0, err
    assert json.loads(by_flags) == json.loads(local)
    for k, v in azurite.options().items():
        monkeypatch.setenv(k, v)
    code, by_env, err = cli("history", uri, "--json", "-q", "--no-cache")
    assert code == 0 and json.loads(by_env) == json.loads(local), err


def test_gcs_history_equals_the_local_copy(gcs_server, sample_logs):
    bucket = f"g{uuid.uuid4().hex[:12]}"
    gcs_server.create_bucket(bucket)
    gcs_server.upload_dir(bucket, sample_logs / "quickstart" / "table", "quickstart")
    code, remote, err = cli("history", f"gs://{bucket}/quickstart", "--json", "-q", *_opts(gcs_server.options()))
    assert code == 0, err
    _, local, _ = cli("history", str(sample_logs / "quickstart" / "table"), "--json", "-q")
    assert json.loads(remote) == json.loads(local)


def _without(d: dict, *keys: str) -> dict:
    return {k: v for k, v in d.items() if k not in keys}


def test_replay_explain_evidence_agree_with_the_local_copy(s3_server, sample_logs):
    """Incident (a) in S3, its orphan data file included: the same verdicts, the same story, the same
    aborted attempt and winner; only the table's URI (and the files' times) differ."""
    uri = _s3_table(s3_server, sample_logs, "a-merge-partitions")
    local = sample_logs / "a-merge-partitions" / "table"
    remote_t = Table(uri, storage_options=s3_server.options())
    local_t = Table(local)
    assert remote_t.location == uri
    assert _without(remote_t.replay_report().to_dict(), "table") == _without(local_t.replay_report().to_dict(), "table")
    assert remote_t.explain(3, use_evidence=False).to_dict() == local_t.explain(3, use_evidence=False).to_dict()
    ev_r, ev_l = remote_t.evidence(), local_t.evidence()
    assert [f.path for f in ev_r.orphan_files] == [f.path for f in ev_l.orphan_files] != []
    assert [(a.likely_exception, a.winning_version) for a in ev_r.attempts] == [(a.likely_exception, a.winning_version) for a in ev_l.attempts]
    assert "object store" in ev_r.clock.why
    text = (sample_logs / "a-merge-partitions" / "error.txt").read_text()
    assert remote_t.explain_error(text).winning_version == local_t.explain_error(text).winning_version == 3


def test_error_file_in_the_store(s3_server, sample_logs):
    uri = _s3_table(s3_server, sample_logs, "a-merge-partitions")
    bucket = uri.split("/")[2]
    s3_server._boto("s3").put_object(Bucket=bucket, Key="incidents/error.txt",
                                     Body=(sample_logs / "a-merge-partitions" / "error.txt").read_bytes())
    code, out, err = cli("explain-error", uri, "--error-file", f"s3://{bucket}/incidents/error.txt", "--json", "-q",
                         *_opts(s3_server.options()))
    assert code == 0, err
    assert json.loads(out)["winning_version"] == 3


def test_a_refresh_fetches_only_the_new_commits(s3_server, sample_logs, tmp_path):
    src = tmp_path / "busy"
    shutil.copytree(sample_logs / "busy" / "table", src)
    log = src / "_delta_log"
    newest = sorted(log.glob("0*.json"))[-3:]
    held = {p.name: p.read_bytes() for p in newest}
    for p in newest:
        p.unlink()
    bucket = f"b{uuid.uuid4().hex[:12]}"
    s3_server.create_bucket(bucket)
    store = s3_server.store(bucket, "busy")
    upload_dir(store, src)
    uri = f"s3://{bucket}/busy"
    first = Table(uri, storage_options=s3_server.options())
    assert first.store.mirror.fetched > 3
    for name, data in held.items():
        store.put(f"_delta_log/{name}", data)
    again = Table(uri, storage_options=s3_server.options())
    assert again.store.mirror.fetched == 3
    assert again.versions[-3:] == [int(n.split(".")[0]) for n in sorted(held)]
    assert len(again.versions) == len(first.versions) + 3


def test_no_cache_mirrors_into_a_temporary_directory(s3_server, sample_logs):
    uri = _s3_table(s3_server, sample_logs, "quickstart")
    code, _, err = cli("history", uri, "--json", "-q", "--no-cache", *_opts(s3_server.options()))
    assert code == 0, err
    assert not table_cache_dir(uri).exists() and not mirror_dir(uri).exists()


def test_a_closed_endpoint_is_its_own_exit_code_in_one_line_without_the_secret(tmp_path):
    secret = "s3cr3t-" + uuid.uuid4().hex
    opts = {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{closed_port()}", "AWS_ALLOW_HTTP": "true"}
    code, out, err = cli("history", "s3://bucket/table", *_opts(opts))
    assert code == 9, err
    assert len(err.strip().splitlines()) == 1 and "s3://bucket/table" in err
    assert secret not in err and secret not in out and "Traceback" not in err
    cache = Path(os.environ["DELTA_FORENSICS_CACHE_DIR"])
    assert not any(secret in p.read_text(errors="ignore") for p in cache.rglob("*") if p.is_file())


def test_wrong_credentials_and_missing_buckets_have_their_own_exit_codes(azurite, s3_server):
    code, _, err = cli("history", f"s3://nosuch{uuid.uuid4().hex[:8]}/t", *_opts(s3_server.options()))
    assert code == 11, err
    container = f"c{uuid.uuid4().hex[:12]}"
    azurite.create_container(container)
    wrong = azurite.options(AZURE_STORAGE_ACCOUNT_KEY="d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXk=")
    code, _, err = cli("history", f"az://{container}/t", *_opts(wrong))
    assert code == 10, err
    assert "d3Jvbmcta2V5" not in err


def test_a_profile_holds_storage_options(s3_server, sample_logs, tmp_path, monkeypatch):
    uri = _s3_table(s3_server, sample_logs, "quickstart")
    conf = tmp_path / "config.toml"
    lines = ["[profiles.local-s3]", "storage_options = { " + ", ".join(f'{k} = "{v}"' for k, v in s3_server.options().items()) + " }"]
    conf.write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("DELTA_FORENSICS_CONFIG", str(conf))
    code, out, err = cli("history", uri, "--json", "-q", "--profile", "local-s3")
    assert code == 0, err
    assert len(json.loads(out)) == 20


def test_conf_and_a_profiles_spark_conf_reach_the_tools_spark_session(sample_logs, tmp_path, repo_root):
    """--conf (and a profile's spark_conf) set the tool's own Spark session: an event log appears where
    spark.eventLog.dir says, in a fresh process (one session per process)."""
    import subprocess
    import sys

    events = tmp_path / "events"
    events.mkdir()
    conf = tmp_path / "config.toml"
    conf.write_text(f'[profiles.ev]\nspark_conf = {{ "spark.eventLog.dir" = "file://{events}" }}\n')
    env = {**os.environ, "DELTA_FORENSICS_CONFIG": str(conf)}
    out = subprocess.run([sys.executable, "-m", "forensics", "history", str(sample_logs / "quickstart" / "table"), "--json",
                          "--no-cache", "--profile", "ev", "--conf", "spark.eventLog.enabled=true"],
                         capture_output=True, text=True, cwd=repo_root, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert any(events.iterdir()), "no Spark event log written: the settings did not reach the session"
    bad = subprocess.run([sys.executable, "-m", "forensics", "history", "x", "--conf", "novalue"],
                         capture_output=True, text=True, cwd=repo_root, timeout=120)
    assert bad.returncode == 2 and "--conf takes KEY=VALUE" in bad.stderr
