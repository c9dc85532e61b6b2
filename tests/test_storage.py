"""forensics.storage against real servers on 127.0.0.1: moto (S3), Azurite (Azure), fake-gcs-server.

No mocks: every mirror, listing and failure goes over HTTP to a server started by a fixture in
tests/servers.py. The environment is emptied of cloud settings for every test, so a
developer's credentials never leak in (and no client ever looks for a metadata service).
"""

from __future__ import annotations

import ast
import http.server
import json
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import servers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from servers import closed_port, listing, upload_dir

from forensics.errors import ExitCode, ForensicsError, NotADeltaTable, UsageError
from forensics.storage import (
    StorageOptions,
    list_table_files,
    load_profile,
    mirror_log,
    parse_location,
    resolve_options,
)
from forensics.storage.mirror import MANIFEST

REPO = Path(__file__).resolve().parent.parent
BUSY = REPO / "sample_logs" / "busy" / "table"
BUCKET = "tables"
# delta-rs option names whose values are secrets (for "no secret in the message" checks).
SECRET_KEYS = ("AWS_SECRET_ACCESS_KEY", "AZURE_STORAGE_ACCOUNT_KEY")

# The servers' session fixtures (tests/servers.py), made visible to this module.
s3_server = servers.s3_server
azurite = servers.azurite
gcs_server = servers.gcs_server


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch, tmp_path):
    """No cloud settings from the developer's shell; no ~/.aws; no config file; metadata services
    (tried by object_store when it finds no credentials) pointed at a closed local port."""
    for key in list(os.environ):
        upper = key.upper()
        if upper.startswith(("AWS_", "AZURE_", "GOOGLE_", "DELTA_FORENSICS_PROFILE")) or "PROXY" in upper or upper == "SSL_CERT_FILE":
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("DELTA_FORENSICS_CONFIG", str(tmp_path / "no-config.toml"))
    dead = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("AWS_METADATA_ENDPOINT", dead)
    monkeypatch.setenv("AZURE_MSI_ENDPOINT", dead)


# --------------------------------------------------------------------------------------
# The table: sample_logs/busy plus every other kind of log file
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def local_table(tmp_path_factory) -> Path:
    """busy's table, plus a .crc, a staged commit and a sidecar so every log file kind travels."""
    root = tmp_path_factory.mktemp("busy") / "table"
    shutil.copytree(BUSY, root)
    log = root / "_delta_log"
    (log / "00000000000000000404.crc").write_text(json.dumps({"tableSizeBytes": 1234, "numFiles": 32}))
    (log / "_staged_commits").mkdir()
    shutil.copy(log / "00000000000000000404.json", log / "_staged_commits" / f"00000000000000000405.{uuid.uuid4()}.json")
    (log / "_sidecars").mkdir()
    shutil.copy(log / "00000000000000000399.checkpoint.parquet", log / "_sidecars" / f"{uuid.uuid4()}.parquet")
    return root


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@dataclass
class Backend:
    """One store as the tests see it: where a table goes, and how to change it behind our back."""

    name: str
    uri: Callable[[str], str]  # prefix -> table URI
    options: Callable[..., dict]  # explicit delta-rs options
    upload: Callable[[Path, str], int]  # local dir, prefix -> files uploaded
    put: Callable[[str, bytes], None]  # key in the bucket
    delete: Callable[[str], None]
    listing: Callable[[str], dict]  # prefix -> {path: (size, etag, last_modified)}
    bad_endpoint: Callable[[int], dict]  # port -> options pointing at a closed port


def _s3_backend(server) -> Backend:
    server.create_bucket(BUCKET)
    store = server.store(BUCKET)
    import obstore

    return Backend(
        name="s3",
        uri=lambda p: f"s3://{BUCKET}/{p}",
        options=server.options,
        upload=lambda d, p: upload_dir(store, d, p),
        put=lambda k, b: obstore.put(store, k, b),
        delete=lambda k: obstore.delete(store, k),
        listing=lambda p: listing(store, p),
        bad_endpoint=lambda port: server.options(AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}"),
    )


def _azure_backend(server) -> Backend:
    server.create_container(BUCKET)
    store = server.store(BUCKET)
    import obstore

    return Backend(
        name="azure",
        uri=lambda p: f"abfss://{BUCKET}@{server.account}.dfs.core.windows.net/{p}",
        options=server.options,
        upload=lambda d, p: upload_dir(store, d, p),
        put=lambda k, b: obstore.put(store, k, b),
        delete=lambda k: obstore.delete(store, k),
        listing=lambda p: listing(store, p),
        bad_endpoint=lambda port: server.options(AZURE_STORAGE_ENDPOINT=f"http://127.0.0.1:{port}/{server.account}"),
    )


def _gcs_backend(server) -> Backend:
    server.create_bucket(BUCKET)
    store = server.store(BUCKET)
    return Backend(
        name="gcs",
        uri=lambda p: f"gs://{BUCKET}/{p}",
        options=server.options,
        upload=lambda d, p: server.upload_dir(BUCKET, d, p),
        put=lambda k, b: server.put(BUCKET, k, b),
        delete=lambda k: server.delete(BUCKET, k),
        listing=lambda p: listing(store, p),
        bad_endpoint=lambda port: server.options(GOOGLE_BASE_URL=f"http://127.0.0.1:{port}"),
    )


_BACKENDS: dict[str, Backend] = {}


@pytest.fixture(params=["s3", "azure", "gcs"])
def backend(request) -> Backend:
    name = request.param
    if name not in _BACKENDS:
        fixture, make = {"s3": ("s3_server", _s3_backend), "azure": ("azurite", _azure_backend), "gcs": ("gcs_server", _gcs_backend)}[name]
        _BACKENDS[name] = make(request.getfixturevalue(fixture))
    return _BACKENDS[name]


@pytest.fixture
def remote_table(backend, local_table) -> tuple[Backend, str]:
    """The local table uploaded under a fresh prefix, for tests that change it: (backend, prefix)."""
    prefix = f"t-{uuid.uuid4().hex[:10]}"
    backend.upload(local_table, prefix)
    return backend, prefix


_SHARED: dict[str, str] = {}


@pytest.fixture
def shared_table(backend, local_table) -> tuple[Backend, str]:
    """The local table uploaded once per store, for tests that only read it: (backend, prefix)."""
    if backend.name not in _SHARED:
        _SHARED[backend.name] = "shared/busy"
        backend.upload(local_table, _SHARED[backend.name])
    return backend, _SHARED[backend.name]


def _assert_mirror_matches(mirror_root: Path, local_table: Path, remote: dict) -> None:
    """Byte-identical `_delta_log`, and each file's mtime is the object's last-modified."""
    assert _tree(mirror_root / "_delta_log") == _tree(local_table / "_delta_log")
    for rel in _tree(mirror_root / "_delta_log"):
        key = next(k for k in remote if k.endswith("/_delta_log/" + rel))
        size, _etag, last_modified = remote[key]
        st_ = (mirror_root / "_delta_log" / rel).stat()
        assert st_.st_size == size
        assert st_.st_mtime_ns // 1_000_000 == int(last_modified.timestamp() * 1000), rel


# --------------------------------------------------------------------------------------
# parse_location
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "uri, kind, scheme, bucket, account, prefix, normal",
    [
        ("s3://bucket/a/b/", "s3", "s3", "bucket", "", "a/b", "s3://bucket/a/b"),
        ("s3://LegacyBucket/t", "s3", "s3", "LegacyBucket", "", "t", "s3://LegacyBucket/t"),
        ("gs://Bucket/t", "gcs", "gs", "bucket", "", "t", "gs://bucket/t"),
        ("s3a://bucket//a//b", "s3", "s3a", "bucket", "", "a/b", "s3a://bucket/a/b"),
        ("S3://bucket", "s3", "s3", "bucket", "", "", "s3://bucket"),
        ("gs://b/warehouse/t", "gcs", "gs", "b", "", "warehouse/t", "gs://b/warehouse/t"),
        ("az://container/t", "azure", "az", "container", "", "t", "az://container/t"),
        ("azure://container/x/t", "azure", "azure", "container", "", "x/t", "azure://container/x/t"),
        ("abfss://c@acct.dfs.core.windows.net/p/t", "azure", "abfss", "c", "acct", "p/t", "abfss://c@acct.dfs.core.windows.net/p/t"),
        ("abfs://c@acct.blob.core.windows.net/t", "azure", "abfs", "c", "acct", "t", "abfs://c@acct.blob.core.windows.net/t"),
        (
            "https://acct.blob.core.windows.net/c/t?sv=1&sig=abc",
            "azure",
            "https",
            "c",
            "acct",
            "t",
            "https://acct.blob.core.windows.net/c/t",
        ),
        ("s3://bucket/my%20table", "s3", "s3", "bucket", "", "my table", "s3://bucket/my%20table"),
        ("main.sales.orders", "catalog", "", "", "", "main.sales.orders", "main.sales.orders"),
        ("sales.orders", "catalog", "", "", "", "sales.orders", "sales.orders"),
    ],
)
def test_parse_location_examples(uri, kind, scheme, bucket, account, prefix, normal):
    loc = parse_location(uri)
    assert (loc.kind, loc.scheme, loc.bucket, loc.account, loc.prefix, loc.uri) == (kind, scheme, bucket, account, prefix, normal)
    assert parse_location(loc.uri) == loc


def test_parse_location_local_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.b").mkdir()
    assert parse_location("a.b").kind == "local"  # an existing directory is a path, not a catalog name
    assert parse_location("a.b").uri == str(tmp_path / "a.b")
    for text in (str(tmp_path / "t"), f"file://{tmp_path}/t", f"file:{tmp_path}/t/", "./t"):
        loc = parse_location(text)
        assert (loc.kind, loc.uri, loc.prefix) == ("local", str(tmp_path / "t"), str(tmp_path / "t")), text


@pytest.mark.parametrize(
    "uri", ["hdfs://nn/t", "http://example.com/t", "s3:///t", "abfss://acct.dfs.core.windows.net/t", "", "   ", "file://otherhost/t"]
)
def test_parse_location_rejects(uri):
    with pytest.raises(UsageError):
        parse_location(uri)


_name = st.from_regex(r"[a-z0-9][a-z0-9-]{1,20}[a-z0-9]", fullmatch=True)
_segment = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="/\\?#%", exclude_categories=("Cs", "Cc")), min_size=1, max_size=12
).filter(lambda s: s.strip() == s and s not in (".", ".."))
_prefix = st.lists(_segment, min_size=0, max_size=4).map("/".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scheme=st.sampled_from(["s3", "s3a", "gs", "az", "azure", "abfss", "abfs", "https"]), bucket=_name, account=_name, prefix=_prefix)
def test_parse_location_round_trips(scheme, bucket, account, prefix):
    from urllib.parse import quote

    path = quote(prefix, safe="/")
    if scheme in ("abfss", "abfs"):
        uri = f"{scheme}://{bucket}@{account}.dfs.core.windows.net/{path}"
    elif scheme == "https":
        uri = f"https://{account}.blob.core.windows.net/{bucket}/{path}"
    else:
        uri = f"{scheme}://{bucket}/{path}"
    loc = parse_location(uri)
    assert loc.bucket == bucket
    assert loc.prefix == prefix
    assert not loc.uri.endswith("/")
    again = parse_location(loc.uri)
    assert again == loc
    assert again.uri == loc.uri
    if scheme in ("abfss", "abfs", "https"):
        assert loc.account == account


_secret = st.from_regex(r"S3CR3T[A-Za-z0-9]{6,30}", fullmatch=True)


@settings(max_examples=100, deadline=None)
@given(secret=_secret, bucket=_name, prefix=_prefix.filter(bool))
def test_no_secret_survives_parsing(secret, bucket, prefix):
    from urllib.parse import quote

    path = quote(prefix, safe="/")
    uris = [
        f"s3a://AKIAEXAMPLE:{secret}@{bucket}/{path}",
        f"https://acct.blob.core.windows.net/{bucket}/{path}?sv=2022-11-02&ss=b&sig={secret}",
        f"abfss://{bucket}@acct.dfs.core.windows.net/{path}?sp=rl&sig={secret}",
        f"az://{bucket}/{path}?se=2099&sig={secret}",
    ]
    for uri in uris:
        loc = parse_location(uri)
        for shown in (loc.uri, repr(loc), str(loc), loc.bucket_uri, loc.child("_delta_log")):
            assert secret not in shown, uri
        assert any(secret in v for _, v in loc.uri_credentials)
        options = resolve_options(loc, environ={})
        assert secret not in repr(options) and secret not in str(options)
        assert any(secret in v for v in options.values.values())  # still used, never shown
        assert secret not in options.scrub(f"failed GET {uri}: {secret}")


# --------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------


def _write_config(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_option_precedence_env_profile_explicit(tmp_path, monkeypatch):
    cfg = _write_config(
        tmp_path / "config.toml",
        """
[profiles.prod]
storage_options = { AWS_REGION = "eu-west-1", AWS_ENDPOINT_URL = "https://profile.example", aws_allow_http = false }
spark_conf = { "spark.driver.memory" = "6g" }

[profiles.other]
storage_options = { AWS_REGION = "ap-south-1" }
""",
    )
    monkeypatch.setenv("DELTA_FORENSICS_CONFIG", str(cfg))
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://env.example")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ENVKEYID")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "ENVSECRET")

    env_only = resolve_options("s3://b/t")
    assert env_only.values["AWS_REGION"] == "us-west-2" and env_only.sources["AWS_REGION"] == "environment"
    assert env_only.profile is None

    with_profile = resolve_options("s3://b/t", profile="prod")
    assert with_profile.values["AWS_REGION"] == "eu-west-1"
    assert with_profile.values["AWS_ENDPOINT_URL"] == "https://profile.example"
    assert with_profile.sources["AWS_REGION"].startswith("profile 'prod'")
    assert with_profile.values["AWS_ACCESS_KEY_ID"] == "ENVKEYID"  # the profile names no credentials
    assert with_profile.spark_conf == {"spark.driver.memory": "6g"}

    explicit = resolve_options(
        "s3://b/t",
        {"aws_endpoint_url": "https://explicit.example", "Access_Key_Id": "EXPLICITID", "secret_access_key": "EXPLICITSECRET"},
        profile="prod",
    )
    assert explicit.values["AWS_ENDPOINT_URL"] == "https://explicit.example"
    assert explicit.sources["AWS_ENDPOINT_URL"] == "explicit options"
    assert explicit.values["AWS_REGION"] == "eu-west-1"
    assert (explicit.values["AWS_ACCESS_KEY_ID"], explicit.values["AWS_SECRET_ACCESS_KEY"]) == ("EXPLICITID", "EXPLICITSECRET")

    monkeypatch.setenv("DELTA_FORENSICS_PROFILE", "other")
    assert resolve_options("s3://b/t").values["AWS_REGION"] == "ap-south-1"
    with pytest.raises(UsageError, match="no profile 'nope'.*other, prod"):
        resolve_options("s3://b/t", profile="nope")


def test_default_profile_and_bad_config(tmp_path, monkeypatch):
    cfg = _write_config(tmp_path / "c.toml", '[profiles.default]\nstorage_options = { AZURE_STORAGE_ACCOUNT_NAME = "fromprofile" }\n')
    monkeypatch.setenv("DELTA_FORENSICS_CONFIG", str(cfg))
    assert resolve_options("az://c/t").values["AZURE_STORAGE_ACCOUNT_NAME"] == "fromprofile"
    # the URI's account names the table: it beats every option
    assert resolve_options("abfss://c@uriacct.dfs.core.windows.net/t").values["AZURE_STORAGE_ACCOUNT_NAME"] == "uriacct"
    _write_config(cfg, "[profiles.default\nstorage_options = 1\n")
    with pytest.raises(UsageError, match="not valid TOML"):
        resolve_options("az://c/t")
    monkeypatch.setenv("DELTA_FORENSICS_CONFIG", str(tmp_path / "absent.toml"))
    with pytest.raises(UsageError, match="does not exist"):
        load_profile("prod")
    assert load_profile() is None


def test_platformdirs_config_location(monkeypatch, tmp_path):
    from forensics.storage import config_path

    monkeypatch.delenv("DELTA_FORENSICS_CONFIG")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config_path() == tmp_path / "xdg" / "delta-forensics" / "config.toml"


def test_explicit_credentials_never_mix_with_environment_ones(monkeypatch):
    """An explicit key pair drops the environment's session token (object_store would mix them)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ENVKEYID")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "ENVSECRET")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "ENVTOKEN")
    opts = resolve_options("s3://b/t", {"AWS_ACCESS_KEY_ID": "EXPLICITID", "AWS_SECRET_ACCESS_KEY": "EXPLICITSECRET"})
    assert "AWS_SESSION_TOKEN" not in opts.values


def test_built_store_ignores_environment_it_was_not_given(monkeypatch):
    """End to end: the request the store signs carries no session token from the environment."""
    import obstore

    seen: list[dict] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append({k.lower(): v for k, v in self.headers.items()})
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("AWS_SESSION_TOKEN", "ENVTOKEN")
        opts = resolve_options(
            "s3://b/t",
            {
                "AWS_ACCESS_KEY_ID": "EXPLICITID",
                "AWS_SECRET_ACCESS_KEY": "EXPLICITSECRET",
                "AWS_ENDPOINT_URL": f"http://127.0.0.1:{server.server_port}",
                "AWS_ALLOW_HTTP": "true",
            },
        )
        store = opts.store(parse_location("s3://b/t"))
        with pytest.raises(FileNotFoundError):
            obstore.get(store, "x")
        assert os.environ["AWS_SESSION_TOKEN"] == "ENVTOKEN"  # restored after the build
    finally:
        server.shutdown()
    assert seen and "x-amz-security-token" not in seen[0]
    assert "Credential=EXPLICITID/" in seen[0]["authorization"]


def test_aws_profile_files(tmp_path, monkeypatch):
    (tmp_path / "credentials").write_text("[dev]\naws_access_key_id = PROFILEID\naws_secret_access_key = PROFILESECRET\n")
    (tmp_path / "config").write_text(
        "[profile dev]\nregion = eu-central-1\nendpoint_url = http://127.0.0.1:1\ns3 =\n  addressing_style = virtual\n"
        "[default]\nregion = us-east-2\n"
    )
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    assert resolve_options("s3://b/t").values["AWS_REGION"] == "us-east-2"  # [default] without AWS_PROFILE
    monkeypatch.setenv("AWS_PROFILE", "dev")
    opts = resolve_options("s3://b/t")
    assert opts.values["AWS_ACCESS_KEY_ID"] == "PROFILEID"
    assert opts.values["AWS_REGION"] == "eu-central-1"
    assert opts.values["AWS_ENDPOINT_URL"] == "http://127.0.0.1:1"
    assert opts.values["AWS_S3_ADDRESSING_STYLE"] == "virtual"
    assert "AWS profile 'dev'" in opts.sources["AWS_ACCESS_KEY_ID"]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ENVID")  # the environment's keys beat the profile's
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "ENVSECRET")
    assert resolve_options("s3://b/t").values["AWS_ACCESS_KEY_ID"] == "ENVID"
    monkeypatch.setenv("AWS_PROFILE", "missing")
    with pytest.raises(UsageError, match="AWS profile 'missing' not found"):
        resolve_options("s3://b/t")
    with (tmp_path / "config").open("a") as f:
        f.write("[profile sso]\nsso_session = corp\nregion = eu-west-1\n")
    monkeypatch.setenv("AWS_PROFILE", "sso")
    with pytest.raises(UsageError, match="uses sso_session, which delta-forensics cannot run.*export-credentials"):
        resolve_options("s3://b/t")


def test_mirror_with_an_aws_profile_only(s3_server, local_table, tmp_path, monkeypatch):
    """~/.aws files name the keys and the endpoint; nothing else is configured."""
    s3_server.create_bucket(BUCKET)
    prefix = f"t-{uuid.uuid4().hex[:10]}"
    upload_dir(s3_server.store(BUCKET), local_table, prefix)
    (tmp_path / "credentials").write_text(
        f"[moto]\naws_access_key_id = {s3_server.access_key}\naws_secret_access_key = {s3_server.secret_key}\n"
    )
    (tmp_path / "config").write_text(f"[profile moto]\nregion = {s3_server.region}\nendpoint_url = {s3_server.endpoint}\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_PROFILE", "moto")
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    mirror = mirror_log(f"s3://{BUCKET}/{prefix}", None, tmp_path / "m")
    assert _tree(mirror.log_dir) == _tree(local_table / "_delta_log")


def test_repr_masks_secrets_and_keys_are_case_insensitive():
    opts = resolve_options(
        "s3://b/t",
        {
            "aws_access_key_id": "AKIDVALUE1",
            "Secret_Access_Key": "SECRETVALUE2",
            "token": "TOKENVALUE3",
            "AWS_REGION": "eu-west-1",
            "HTTPS_PROXY": "http://user:PROXYPASS4@proxy:3128",
            "AZURE_STORAGE_ACCOUNT_KEY": "ignored-for-s3",
            "DYNAMO_LOCK_TABLE_NAME": "locks",
        },
        environ={},
    )
    assert set(opts.values) >= {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "HTTPS_PROXY"}
    text = repr(opts) + str(opts) + json.dumps(opts.masked()) + repr(opts.describe())
    for secret in ("AKIDVALUE1", "SECRETVALUE2", "TOKENVALUE3", "PROXYPASS4"):
        assert secret not in text
        assert secret not in opts.scrub(f"... {secret} ...")
    assert "eu-west-1" in text
    assert set(opts.ignored) == {"AZURE_STORAGE_ACCOUNT_KEY", "DYNAMO_LOCK_TABLE_NAME"}
    with pytest.raises(UsageError, match="unknown storage option 'AWS_NOT_A_THING'"):
        resolve_options("s3://b/t", {"AWS_NOT_A_THING": "1"}, environ={})


def test_plain_http_endpoint_needs_allow_http():
    opts = resolve_options(
        "s3://b/t", {"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"}, environ={}
    )
    with pytest.raises(UsageError, match="AWS_ALLOW_HTTP=true"):
        opts.store(parse_location("s3://b/t"))


def test_local_and_catalog_locations_need_no_store_options(tmp_path):
    assert resolve_options(str(tmp_path), environ={}).kind == "local"
    opts = resolve_options("main.sales.orders", environ={})
    with pytest.raises(UsageError, match="catalog"):
        opts.store(parse_location("main.sales.orders"))


# --------------------------------------------------------------------------------------
# Mirroring from real servers
# --------------------------------------------------------------------------------------


def test_mirror_with_credentials_from_the_environment(shared_table, local_table, tmp_path, monkeypatch):
    backend, prefix = shared_table
    for key, value in backend.options().items():
        monkeypatch.setenv(key, value)
    updates = []
    mirror = mirror_log(backend.uri(prefix), None, tmp_path / "m", progress=updates.append)
    n = len(_tree(local_table / "_delta_log"))
    assert (mirror.fetched, mirror.reused, mirror.removed) == (n, 0, 0)
    assert mirror.bytes_fetched == sum(len(b) for b in _tree(local_table / "_delta_log").values())
    _assert_mirror_matches(mirror.root, local_table, backend.listing(prefix))
    assert updates[0].done == 0 and updates[-1].done == updates[-1].total == n
    assert "mirroring _delta_log" in str(updates[-1])
    again = mirror_log(backend.uri(prefix), None, tmp_path / "m")
    assert (again.fetched, again.reused, again.removed, again.bytes_fetched) == (0, n, 0, 0)


def test_mirror_with_explicit_options_only(shared_table, local_table, tmp_path):
    backend, prefix = shared_table
    assert not [k for k in os.environ if k.startswith(("AZURE_STORAGE", "GOOGLE_")) or k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")]
    mirror = mirror_log(backend.uri(prefix), backend.options(), tmp_path / "m", max_workers=3)
    assert mirror.fetched == len(_tree(local_table / "_delta_log"))
    _assert_mirror_matches(mirror.root, local_table, backend.listing(prefix))
    assert (mirror.root / MANIFEST).is_file()


def test_refresh_fetches_only_new_files_and_removes_deleted_ones(remote_table, local_table, tmp_path):
    backend, prefix = remote_table
    dest = tmp_path / "m"
    first = mirror_log(backend.uri(prefix), backend.options(), dest)
    n = first.fetched
    body = (local_table / "_delta_log" / "00000000000000000404.json").read_bytes()
    for v in (405, 406, 407):
        backend.put(f"{prefix}/_delta_log/{v:020d}.json", body)
    time.sleep(1.1)  # emulators keep last-modified to the second: make the rewrite below visible
    backend.put(f"{prefix}/_delta_log/_last_checkpoint", b'{"version":399,"size":402}')
    second = mirror_log(backend.uri(prefix), backend.options(), dest)
    assert (second.fetched, second.reused, second.removed) == (4, n - 1, 0)
    assert (dest / "_delta_log" / "00000000000000000406.json").read_bytes() == body
    assert (dest / "_delta_log" / "_last_checkpoint").read_bytes() == b'{"version":399,"size":402}'

    backend.delete(f"{prefix}/_delta_log/00000000000000000406.json")
    third = mirror_log(backend.uri(prefix), backend.options(), dest)
    assert (third.fetched, third.reused, third.removed) == (0, n + 2, 1)
    assert not (dest / "_delta_log" / "00000000000000000406.json").exists()

    # a local file changed behind the mirror's back is fetched again; a stray local file goes
    (dest / "_delta_log" / "00000000000000000001.json").write_text("tampered")
    (dest / "_delta_log" / "stray.json").write_text("{}")
    fourth = mirror_log(backend.uri(prefix), backend.options(), dest)
    assert (fourth.fetched, fourth.removed) == (1, 1)
    assert (dest / "_delta_log" / "00000000000000000001.json").read_bytes() == (
        local_table / "_delta_log" / "00000000000000000001.json"
    ).read_bytes()


def test_refresh_lists_only_the_tail_until_a_clean_up(remote_table, local_table, tmp_path):
    """A refresh lists from 100 versions below the newest mirrored commit (a 20,000-commit log lists
    in seconds); when the oldest mirrored file is gone (log clean-up), it lists the whole log again
    and the removals reach the mirror."""
    backend, prefix = remote_table
    dest = tmp_path / "m"
    first = mirror_log(backend.uri(prefix), backend.options(), dest)
    assert first.listed_from is None
    body = (local_table / "_delta_log" / "00000000000000000404.json").read_bytes()
    backend.put(f"{prefix}/_delta_log/00000000000000000405.json", body)
    second = mirror_log(backend.uri(prefix), backend.options(), dest)
    assert second.listed_from == "_delta_log/00000000000000000304"
    assert (second.fetched, second.removed) == (1, 0) and second.files == first.files + 1
    assert (dest / "_delta_log" / "00000000000000000405.json").read_bytes() == body
    assert _tree(dest / "_delta_log") == {**_tree(local_table / "_delta_log"), "00000000000000000405.json": body}

    oldest = sorted(p.name for p in (local_table / "_delta_log").glob("0*"))[0]
    backend.delete(f"{prefix}/_delta_log/{oldest}")
    third = mirror_log(backend.uri(prefix), backend.options(), dest)
    assert third.listed_from is None and (third.fetched, third.removed) == (0, 1)
    assert not (dest / "_delta_log" / oldest).exists()


def test_list_table_files_finds_orphans_without_the_log(remote_table, local_table):
    backend, prefix = remote_table
    backend.put(f"{prefix}/date=2024-04-01/part-orphan-0000.snappy.parquet", b"PAR1orphan")
    backend.put(f"{prefix}/stray-at-root.txt", b"x")
    files = list_table_files(backend.uri(prefix), backend.options())
    paths = {f.path for f in files}
    expected = {p.relative_to(local_table).as_posix() for p in local_table.rglob("*") if p.is_file() and "_delta_log" not in p.parts}
    assert paths == expected | {"date=2024-04-01/part-orphan-0000.snappy.parquet", "stray-at-root.txt"}
    orphan = next(f for f in files if f.path.endswith("part-orphan-0000.snappy.parquet"))
    assert orphan.size == len(b"PAR1orphan") and orphan.last_modified_ms > 0


def test_mirror_and_listing_never_write_to_the_store(shared_table, tmp_path):
    backend, prefix = shared_table
    before = backend.listing(prefix)
    mirror_log(backend.uri(prefix), backend.options(), tmp_path / "m")
    mirror_log(backend.uri(prefix), backend.options(), tmp_path / "m")
    list_table_files(backend.uri(prefix), backend.options())
    assert backend.listing(prefix) == before


def test_package_calls_only_read_operations():
    """Read-only by construction: no obstore call in forensics/storage can change a store."""
    allowed = {"list", "list_with_delimiter", "get", "head"}
    calls = set()
    for path in (REPO / "forensics" / "storage").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("obstore", "obs"):
                calls.add(node.attr)
    assert calls and calls <= allowed, calls - allowed


def test_sas_token_in_the_uri_is_used_and_never_shown(azurite, local_table, tmp_path):
    azurite.create_container(BUCKET)
    prefix = f"t-{uuid.uuid4().hex[:10]}"
    upload_dir(azurite.store(BUCKET), local_table, prefix)
    sas = azurite.sas_token()
    uri = f"az://{BUCKET}/{prefix}?{sas}"
    opts = {"AZURE_STORAGE_ACCOUNT_NAME": azurite.account, "AZURE_STORAGE_ENDPOINT": azurite.endpoint, "AZURE_ALLOW_HTTP": "true"}
    mirror = mirror_log(uri, opts, tmp_path / "m")
    assert mirror.fetched == len(_tree(local_table / "_delta_log"))
    sig = dict(p.split("=", 1) for p in sas.split("&"))["sig"]
    assert sig not in mirror.location.uri and sig not in repr(mirror)


def test_mirror_is_readable_by_the_log_lister(shared_table, tmp_path):
    """The mirror is a local table: the reader's listing sees every commit with the store's times."""
    from forensics.log.listing import list_log

    backend, prefix = shared_table
    mirror = mirror_log(backend.uri(prefix), backend.options(), tmp_path / "m")
    listed = list_log(str(mirror.root))
    assert sorted(listed.commits) == list(range(405))
    remote = backend.listing(prefix)
    key = f"{prefix}/_delta_log/00000000000000000404.json"
    assert listed.commits[404].mtime_ms == int(remote[key][2].timestamp() * 1000)


def test_mirror_refuses_a_directory_that_is_not_a_mirror(tmp_path, s3_server):
    (tmp_path / "d" / "_delta_log").mkdir(parents=True)
    (tmp_path / "d" / "_delta_log" / "00000000000000000000.json").write_text("{}")
    with pytest.raises(UsageError, match="not a delta-forensics mirror"):
        mirror_log(f"s3://{BUCKET}/x", s3_server.options(), tmp_path / "d")


# --------------------------------------------------------------------------------------
# Failures: one line each, with their own exit code, never a secret
# --------------------------------------------------------------------------------------


def _fails(call) -> tuple[ForensicsError, float]:
    t0 = time.monotonic()
    with pytest.raises(ForensicsError) as info:
        call()
    return info.value, time.monotonic() - t0


def _assert_clean(err: ForensicsError, uri: str, options: dict) -> None:
    line = err.one_line()
    assert "\n" not in line and "Traceback" not in line and "Debug source" not in line
    assert parse_location(uri).uri in line
    for key, value in options.items():
        if key in SECRET_KEYS or "KEY" in key or "SECRET" in key:
            assert value not in line, key
    assert err.__cause__ is None and err.__suppress_context__


def test_closed_port_is_unreachable_within_seconds(backend):
    options = backend.bad_endpoint(closed_port())
    uri = backend.uri("some/table")
    err, seconds = _fails(lambda: mirror_log(uri, options, Path("/nonexistent-never-created")))
    assert err.code == ExitCode.STORE_UNREACHABLE, err.one_line()
    assert seconds < 10
    assert err.one_line().startswith("cannot reach http://127.0.0.1:")
    assert "connection refused" in err.one_line()
    _assert_clean(err, uri, options)


def test_missing_bucket_is_not_found(backend, tmp_path):
    uri = backend.uri("t").replace(BUCKET, "no-such-bucket-here", 1)
    err, _ = _fails(lambda: mirror_log(uri, backend.options(), tmp_path / "m"))
    assert err.code == ExitCode.STORE_NOT_FOUND, err.one_line()
    assert "no such " in err.one_line() and "no-such-bucket-here" in err.one_line()
    _assert_clean(err, uri, backend.options())
    err2, _ = _fails(lambda: list_table_files(uri, backend.options()))
    assert err2.code == ExitCode.STORE_NOT_FOUND


def test_existing_bucket_without_a_log_is_not_a_table(backend, tmp_path):
    prefix = f"empty-{uuid.uuid4().hex[:8]}"
    backend.put(f"{prefix}/date=2024-01-01/part-0.parquet", b"PAR1")
    with pytest.raises(NotADeltaTable, match="no _delta_log"):
        mirror_log(backend.uri(prefix), backend.options(), tmp_path / "m")


def test_wrong_azure_key_is_denied(azurite, tmp_path):
    azurite.create_container(BUCKET)
    wrong = azurite.options(AZURE_STORAGE_ACCOUNT_KEY="d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXk=")
    uri = f"az://{BUCKET}/t"
    err, seconds = _fails(lambda: mirror_log(uri, wrong, tmp_path / "m"))
    assert err.code == ExitCode.STORE_DENIED, err.one_line()
    assert err.one_line().startswith(f"access denied to {uri} (HTTP 403")
    assert "AZURE_STORAGE_ACCOUNT_KEY from explicit options" in err.one_line()
    assert seconds < 10
    _assert_clean(err, uri, wrong)


def test_s3_credentials_are_checked_when_moto_enforces_iam(s3_server, local_table, tmp_path):
    s3_server.create_bucket(BUCKET)
    prefix = f"t-{uuid.uuid4().hex[:10]}"
    upload_dir(s3_server.store(BUCKET), local_table, prefix)
    uri = f"s3://{BUCKET}/{prefix}"
    with s3_server.enforced_auth() as (key, secret):
        good = s3_server.options(AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret)
        assert mirror_log(uri, good, tmp_path / "ok").fetched > 400
        for bad in (
            s3_server.options(AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY="wrong-secret-value"),
            s3_server.options(AWS_ACCESS_KEY_ID="AKIANOSUCHKEY0000000", AWS_SECRET_ACCESS_KEY=secret),
        ):
            err, _ = _fails(lambda bad=bad: mirror_log(uri, bad, tmp_path / "bad"))
            assert err.code == ExitCode.STORE_DENIED, err.one_line()
            assert "check credentials" in err.one_line()
            _assert_clean(err, uri, bad)
            assert secret not in err.one_line()


def test_storage_options_type_is_what_mirror_accepts(s3_server, local_table, tmp_path):
    """A resolved `StorageOptions` and a plain dict of explicit options are interchangeable."""
    s3_server.create_bucket(BUCKET)
    prefix = f"t-{uuid.uuid4().hex[:10]}"
    upload_dir(s3_server.store(BUCKET), local_table, prefix)
    uri = f"s3://{BUCKET}/{prefix}"
    resolved = resolve_options(uri, s3_server.options())
    assert isinstance(resolved, StorageOptions)
    assert mirror_log(uri, resolved, tmp_path / "a").fetched == mirror_log(uri, s3_server.options(), tmp_path / "b").fetched
