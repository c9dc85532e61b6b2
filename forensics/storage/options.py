"""Which credentials and settings reach a store, and from where: explicit > profile > environment.

Keys are spelled as delta-rs spells them (`AWS_ALLOW_HTTP`, `AZURE_STORAGE_ACCOUNT_KEY`,
..., case-insensitive, with object_store's short aliases such as `access_key_id`), so options
copied from a delta-rs or Polars job work as they are. The environment layer reads the
variables the ecosystem reads (plus `~/.aws` profiles, which object_store no longer reads); a
config file adds named profiles. A `StorageOptions` never shows a secret in its repr, and it
builds the obstore store with the client/retry settings split out as object_store expects.
"""

from __future__ import annotations

import configparser
import os
import re
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from forensics.errors import UsageError
from forensics.safe import is_secret_key, masked_value, remember_settings, scrub, scrub_uri_credentials, uri_secrets
from forensics.storage.location import StoreLocation, parse_location

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

# --------------------------------------------------------------------------------------
# Key tables: obstore config key -> environment names object_store reads (first = canonical).
# --------------------------------------------------------------------------------------

_STORE_KEYS: dict[str, dict[str, tuple[str, ...]]] = {
    "s3": {
        "access_key_id": ("AWS_ACCESS_KEY_ID",),
        "secret_access_key": ("AWS_SECRET_ACCESS_KEY",),
        "session_token": ("AWS_SESSION_TOKEN", "AWS_TOKEN"),
        "region": ("AWS_REGION",),
        "default_region": ("AWS_DEFAULT_REGION",),
        "endpoint": ("AWS_ENDPOINT_URL", "AWS_ENDPOINT"),
        "aws_endpoint_url_s3": ("AWS_ENDPOINT_URL_S3",),
        "virtual_hosted_style_request": ("AWS_VIRTUAL_HOSTED_STYLE_REQUEST",),
        "skip_signature": ("AWS_SKIP_SIGNATURE",),
        "request_payer": ("AWS_REQUEST_PAYER",),
        "unsigned_payload": ("AWS_UNSIGNED_PAYLOAD",),
        "checksum_algorithm": ("AWS_CHECKSUM_ALGORITHM",),
        "conditional_put": ("AWS_CONDITIONAL_PUT",),
        "copy_if_not_exists": ("AWS_COPY_IF_NOT_EXISTS",),
        "container_credentials_relative_uri": ("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",),
        "container_credentials_full_uri": ("AWS_CONTAINER_CREDENTIALS_FULL_URI",),
        "container_authorization_token_file": ("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",),
        "disable_tagging": ("AWS_DISABLE_TAGGING",),
        "disable_bulk_delete": ("AWS_DISABLE_BULK_DELETE",),
        "imdsv1_fallback": ("AWS_IMDSV1_FALLBACK",),
        "metadata_endpoint": ("AWS_METADATA_ENDPOINT",),
        "role_arn": ("AWS_ROLE_ARN",),
        "role_session_name": ("AWS_ROLE_SESSION_NAME",),
        "s3_express": ("AWS_S3_EXPRESS",),
        "server_side_encryption": ("AWS_SERVER_SIDE_ENCRYPTION",),
        "sse_bucket_key_enabled": ("AWS_SSE_BUCKET_KEY_ENABLED",),
        "sse_customer_key_base64": ("AWS_SSE_CUSTOMER_KEY_BASE64",),
        "sse_kms_key_id": ("AWS_SSE_KMS_KEY_ID",),
        "sts_endpoint": ("AWS_STS_ENDPOINT",),
        "web_identity_token_file": ("AWS_WEB_IDENTITY_TOKEN_FILE",),
    },
    "azure": {
        "account_name": ("AZURE_STORAGE_ACCOUNT_NAME",),
        "account_key": ("AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ACCESS_KEY", "AZURE_STORAGE_MASTER_KEY"),
        "client_id": ("AZURE_STORAGE_CLIENT_ID", "AZURE_CLIENT_ID"),
        "client_secret": ("AZURE_STORAGE_CLIENT_SECRET", "AZURE_CLIENT_SECRET"),
        "tenant_id": ("AZURE_STORAGE_TENANT_ID", "AZURE_STORAGE_AUTHORITY_ID", "AZURE_TENANT_ID", "AZURE_AUTHORITY_ID"),
        "authority_host": ("AZURE_STORAGE_AUTHORITY_HOST", "AZURE_AUTHORITY_HOST"),
        "credential_type": ("AZURE_CREDENTIAL_TYPE",),
        "sas_key": ("AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_SAS_KEY"),
        "token": ("AZURE_STORAGE_TOKEN",),
        "use_emulator": ("AZURE_STORAGE_USE_EMULATOR",),
        "use_fabric_endpoint": ("AZURE_USE_FABRIC_ENDPOINT",),
        "encryption_key": ("AZURE_ENCRYPTION_KEY",),
        "endpoint": ("AZURE_STORAGE_ENDPOINT", "AZURE_ENDPOINT"),
        "msi_endpoint": ("AZURE_MSI_ENDPOINT", "AZURE_IDENTITY_ENDPOINT"),
        "object_id": ("AZURE_OBJECT_ID",),
        "msi_resource_id": ("AZURE_MSI_RESOURCE_ID",),
        "federated_token_file": ("AZURE_FEDERATED_TOKEN_FILE",),
        "use_azure_cli": ("AZURE_USE_AZURE_CLI",),
        "skip_signature": ("AZURE_SKIP_SIGNATURE",),
        "disable_tagging": ("AZURE_DISABLE_TAGGING",),
        "fabric_token_service_url": ("AZURE_FABRIC_TOKEN_SERVICE_URL",),
        "fabric_workload_host": ("AZURE_FABRIC_WORKLOAD_HOST",),
        "fabric_session_token": ("AZURE_FABRIC_SESSION_TOKEN",),
        "fabric_cluster_identifier": ("AZURE_FABRIC_CLUSTER_IDENTIFIER",),
    },
    "gcs": {
        "service_account": ("GOOGLE_SERVICE_ACCOUNT", "GOOGLE_SERVICE_ACCOUNT_PATH"),
        "service_account_key": ("GOOGLE_SERVICE_ACCOUNT_KEY",),
        "application_credentials": ("GOOGLE_APPLICATION_CREDENTIALS",),
        "bearer_token": ("GOOGLE_BEARER_TOKEN",),
        "base_url": ("GOOGLE_BASE_URL",),
        "skip_signature": ("GOOGLE_SKIP_SIGNATURE",),
    },
}
_PREFIX = {"s3": "AWS", "azure": "AZURE", "gcs": "GOOGLE"}
# object_store's extra short aliases (delta-rs accepts them too).
_SHORT_ALIASES: dict[str, dict[str, str]] = {
    "s3": {"token": "AWS_SESSION_TOKEN", "endpoint_url": "AWS_ENDPOINT_URL", "aws_token": "AWS_SESSION_TOKEN"},
    "azure": {
        "access_key": "AZURE_STORAGE_ACCOUNT_KEY",
        "master_key": "AZURE_STORAGE_ACCOUNT_KEY",
        "azure_storage_account": "AZURE_STORAGE_ACCOUNT_NAME",
        "sas_token": "AZURE_STORAGE_SAS_TOKEN",
        "bearer_token": "AZURE_STORAGE_TOKEN",
        "azure_storage_bearer_token": "AZURE_STORAGE_TOKEN",
        "azure_storage_use_fabric_endpoint": "AZURE_USE_FABRIC_ENDPOINT",
        "azure_storage_use_azure_cli": "AZURE_USE_AZURE_CLI",
        "azure_storage_skip_signature": "AZURE_SKIP_SIGNATURE",
        "azure_storage_client_secret": "AZURE_STORAGE_CLIENT_SECRET",
    },
    "gcs": {"google_service_account_path": "GOOGLE_SERVICE_ACCOUNT"},
}
# HTTP client settings (object_store ClientConfigKey): `AWS_ALLOW_HTTP`, `allow_http`, ...
_CLIENT_KEYS = (
    "allow_http",
    "allow_invalid_certificates",
    "connect_timeout",
    "read_timeout",
    "timeout",
    "pool_idle_timeout",
    "pool_max_idle_per_host",
    "http1_only",
    "http2_only",
    "http2_keep_alive_interval",
    "http2_keep_alive_timeout",
    "http2_keep_alive_while_idle",
    "user_agent",
    "randomize_addresses",
    "default_content_type",
)
# Settings not tied to one cloud: canonical name -> accepted spellings (lower-case).
_GENERIC = {
    "PROXY_URL": ("proxy_url", "proxy"),
    "HTTPS_PROXY": ("https_proxy",),
    "HTTP_PROXY": ("http_proxy",),
    "ALL_PROXY": ("all_proxy",),
    "NO_PROXY": ("no_proxy", "proxy_excludes"),
    "PROXY_CA_CERTIFICATE": ("proxy_ca_certificate",),
    "ROOT_CERTIFICATE": ("root_certificate", "ca_bundle", "ca_certificate"),
    "SSL_CERT_FILE": ("ssl_cert_file",),
    "MAX_RETRIES": ("max_retries",),
    "RETRY_TIMEOUT": ("retry_timeout",),
}
_S3_EXTRA = {
    "AWS_PROFILE": ("aws_profile", "profile"),
    "AWS_CA_BUNDLE": ("aws_ca_bundle",),
    "AWS_S3_ADDRESSING_STYLE": ("aws_s3_addressing_style", "addressing_style", "s3_addressing_style"),
}
# delta-rs options about writing (locking, unsafe renames): meaningless for a read-only mirror.
_WRITE_SIDE = re.compile(
    r"^(AWS_S3_LOCKING_PROVIDER|DELTA_DYNAMO_TABLE_NAME|DYNAMO_LOCK_.*|AWS_S3_ALLOW_UNSAFE_RENAME|MOUNT_ALLOW_UNSAFE_RENAME"
    r"|AWS_FORCE_CREDENTIAL_LOAD|AWS_S3_ASSUME_ROLE_ARN|AWS_S3_ROLE_SESSION_NAME|AWS_IAM_ROLE_ARN|AWS_IAM_ROLE_SESSION_NAME"
    r"|AWS_EC2_METADATA_DISABLED|AWS_EC2_METADATA_TIMEOUT|AWS_S3_POOL_IDLE_TIMEOUT_SECONDS|AWS_STS_POOL_IDLE_TIMEOUT_SECONDS"
    r"|AWS_S3_GET_INTERNAL_SERVER_ERROR_RETRIES|CONDITIONAL_PUT|COPY_IF_NOT_EXISTS)$"
)
# Keys that carry an identity: the highest layer that sets any of them provides all of them, so
# an explicit key never mixes with, say, a session token left in the environment.
_CREDENTIAL_KEYS = {
    "s3": {
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SKIP_SIGNATURE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    },
    "azure": {
        "AZURE_STORAGE_ACCOUNT_KEY",
        "AZURE_STORAGE_SAS_TOKEN",
        "AZURE_STORAGE_TOKEN",
        "AZURE_STORAGE_CLIENT_ID",
        "AZURE_STORAGE_CLIENT_SECRET",
        "AZURE_STORAGE_TENANT_ID",
        "AZURE_FEDERATED_TOKEN_FILE",
        "AZURE_USE_AZURE_CLI",
        "AZURE_SKIP_SIGNATURE",
        "AZURE_CREDENTIAL_TYPE",
        "AZURE_OBJECT_ID",
        "AZURE_MSI_RESOURCE_ID",
    },
    "gcs": {
        "GOOGLE_SERVICE_ACCOUNT",
        "GOOGLE_SERVICE_ACCOUNT_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_BEARER_TOKEN",
        "GOOGLE_SKIP_SIGNATURE",
    },
}
# Values safe to print in a diagnostic (everything else longer than 3 chars is scrubbed).
_SHOWABLE = re.compile(
    r"^(AWS_REGION|AWS_DEFAULT_REGION|AWS_ENDPOINT_URL|AWS_ENDPOINT_URL_S3|AZURE_STORAGE_ACCOUNT_NAME|AZURE_STORAGE_ENDPOINT"
    r"|GOOGLE_BASE_URL|PROXY_URL|HTTPS?_PROXY|ALL_PROXY|AWS_PROFILE|.*_ALLOW_HTTP|.*_TIMEOUT|MAX_RETRIES|.*_USE_EMULATOR"
    r"|AWS_VIRTUAL_HOSTED_STYLE_REQUEST|AWS_S3_ADDRESSING_STYLE)$"
)
_PLAIN_VALUE = re.compile(r"(?i)^(true|false|yes|no|on|off|\d+(\.\d+)?\s*[a-z]{0,7})$")  # flags, numbers, durations

# Bounded time by default: a closed port or a dead host fails in seconds, not minutes.
DEFAULT_CLIENT = {"connect_timeout": "3s", "read_timeout": "60s", "timeout": "300s"}
DEFAULT_MAX_RETRIES = 2
DEFAULT_RETRY_TIMEOUT = timedelta(seconds=20)

AZURITE_ACCOUNT = "devstoreaccount1"


def _aliases(kind: str) -> dict[str, str]:
    """Every accepted spelling (lower-case) -> canonical name, for one kind of store."""
    out: dict[str, str] = {}
    prefix = _PREFIX[kind]
    for key, envs in _STORE_KEYS[kind].items():
        canonical = envs[0]
        for spelling in (key, f"{prefix.lower()}_{key}", *(e.lower() for e in envs)):
            out.setdefault(spelling, canonical)
    out.update(_SHORT_ALIASES[kind])
    for key in _CLIENT_KEYS:
        canonical = f"{prefix}_{key.upper()}"
        out[key] = canonical
        out[canonical.lower()] = canonical
        if kind == "azure":
            out[f"azure_storage_{key}"] = canonical
    for canonical, spellings in _GENERIC.items():
        for s in (canonical.lower(), *spellings):
            out[s] = canonical
    if kind == "s3":
        for canonical, spellings in _S3_EXTRA.items():
            for s in spellings:
                out[s] = canonical
    return out


_ALIASES = {kind: _aliases(kind) for kind in _STORE_KEYS}
_OBSTORE_KEY = {kind: {envs[0]: key for key, envs in keys.items()} for kind, keys in _STORE_KEYS.items()}


def _truthy(value: str | None) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def _duration(value: str, key: str) -> timedelta:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|msec|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?)?\s*", str(value))
    if not m:
        raise UsageError(f"storage option {key}={value!r} is not a duration (e.g. 20s, 500ms, 2min)")
    n = float(m.group(1))
    unit = (m.group(2) or "s").lower()
    if unit in ("ms", "msec"):
        return timedelta(milliseconds=n)
    if unit.startswith("m") and unit not in ("ms", "msec"):
        return timedelta(minutes=n)
    if unit.startswith("h"):
        return timedelta(hours=n)
    return timedelta(seconds=n)


# --------------------------------------------------------------------------------------
# Config file profiles
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    """One `[profiles.NAME]` table of the config file."""

    name: str
    path: Path
    storage_options: Mapping[str, str]
    spark_conf: Mapping[str, str]
    writer_conf: Mapping[str, str] = field(default_factory=dict)  # settings of the writer being modelled

    def __post_init__(self) -> None:
        for table in (self.storage_options, self.spark_conf, self.writer_conf):
            remember_settings(table)  # scrubbed from every message of this run (forensics.safe)

    def __repr__(self) -> str:
        keys = ", ".join(sorted(self.storage_options))
        conf = {k: masked_value(k, v) for k, v in self.spark_conf.items()}
        return f"Profile(name={self.name!r}, path={str(self.path)!r}, storage_options=[{keys}], spark_conf={conf!r})"


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """`$DELTA_FORENSICS_CONFIG`, else `<user config dir>/delta-forensics/config.toml`."""
    env = os.environ if environ is None else environ
    explicit = env.get("DELTA_FORENSICS_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    from platformdirs import user_config_dir

    return Path(user_config_dir("delta-forensics")) / "config.toml"


def _str_table(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UsageError(f"{where} must be a table of key = value")
    out = {}
    for k, v in value.items():
        if isinstance(v, (dict, list)):
            raise UsageError(f"{where}.{k} must be a string, number or boolean")
        out[str(k)] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out


def load_profile(name: str | None = None, *, environ: Mapping[str, str] | None = None, path: Path | None = None) -> Profile | None:
    """The named profile (or `$DELTA_FORENSICS_PROFILE`, else `default` if the file has one).

    A named profile that does not exist is a usage error; no name and no file is no profile.
    """
    env = os.environ if environ is None else environ
    chosen = name or env.get("DELTA_FORENSICS_PROFILE") or None
    path = path or config_path(env)
    if not path.is_file():
        if chosen:
            raise UsageError(f"profile {chosen!r} requested but the config file {path} does not exist")
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read config file {path}: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"config file {path} is not valid TOML: {e}") from None
    profiles = data.get("profiles", {})
    if not isinstance(profiles, dict):
        raise UsageError(f"config file {path}: [profiles] must be a table of [profiles.NAME] tables")
    if chosen is None:
        if "default" not in profiles:
            return None
        chosen = "default"
    if chosen not in profiles:
        known = ", ".join(sorted(profiles)) or "none"
        raise UsageError(f"no profile {chosen!r} in {path} (profiles: {known})")
    body = profiles[chosen]
    if not isinstance(body, dict):
        raise UsageError(f"config file {path}: profiles.{chosen} must be a table")
    unknown = sorted(set(body) - {"storage_options", "spark_conf", "writer_conf"})
    if unknown:
        raise UsageError(
            f"config file {path}: profiles.{chosen} has unknown keys {', '.join(unknown)} "
            "(expected storage_options, spark_conf, writer_conf)"
        )
    return Profile(
        name=chosen,
        path=path,
        storage_options=_str_table(body.get("storage_options"), f"profiles.{chosen}.storage_options"),
        spark_conf=_str_table(body.get("spark_conf"), f"profiles.{chosen}.spark_conf"),
        writer_conf=_str_table(body.get("writer_conf"), f"profiles.{chosen}.writer_conf"),
    )


# --------------------------------------------------------------------------------------
# ~/.aws profiles (object_store dropped its profile support; the AWS CLI and boto3 read these)
# --------------------------------------------------------------------------------------


def _aws_file(env: Mapping[str, str], var: str, default: str) -> Path:
    given = env.get(var)
    if given:
        return Path(given).expanduser()
    home = env.get("HOME") or os.path.expanduser("~")
    return Path(home) / ".aws" / default


def aws_profile_values(name: str, environ: Mapping[str, str] | None = None, *, required: bool = True) -> tuple[dict[str, str], str]:
    """Static keys, region and endpoint of one `~/.aws` profile, and where they came from.

    Reads `credentials` (`[name]`) and `config` (`[profile name]`, `[default]`), including the
    nested `s3 =` block (`endpoint_url`, `addressing_style`). Profiles that only name a role,
    SSO or a credential process give no keys here (object_store cannot run those flows).
    """
    env = os.environ if environ is None else environ
    creds_path = _aws_file(env, "AWS_SHARED_CREDENTIALS_FILE", "credentials")
    conf_path = _aws_file(env, "AWS_CONFIG_FILE", "config")
    values: dict[str, str] = {}
    found: list[str] = []

    def read(path: Path) -> configparser.RawConfigParser | None:
        if not path.is_file():
            return None
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError) as e:
            raise UsageError(f"cannot read AWS file {path}: {type(e).__name__}") from None
        return parser

    conf = read(conf_path)
    section = name if name == "default" else f"profile {name}"
    if conf is not None and (conf.has_section(section) or conf.has_section(name)):
        sec = conf[section] if conf.has_section(section) else conf[name]
        found.append(str(conf_path))
        for key, canonical in (
            ("aws_access_key_id", "AWS_ACCESS_KEY_ID"),
            ("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY"),
            ("aws_session_token", "AWS_SESSION_TOKEN"),
            ("region", "AWS_REGION"),
            ("endpoint_url", "AWS_ENDPOINT_URL"),
        ):
            if sec.get(key):
                values[canonical] = sec[key].strip()
        nested = sec.get("s3")
        if nested:
            for line in nested.splitlines():
                k, _, v = line.partition("=")
                k, v = k.strip().lower(), v.strip()
                if k == "endpoint_url" and v:
                    values["AWS_ENDPOINT_URL_S3"] = v
                elif k == "addressing_style" and v:
                    values["AWS_S3_ADDRESSING_STYLE"] = v
    creds = read(creds_path)
    if creds is not None and creds.has_section(name):
        found.append(str(creds_path))
        sec = creds[name]
        for key, canonical in (
            ("aws_access_key_id", "AWS_ACCESS_KEY_ID"),
            ("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY"),
            ("aws_session_token", "AWS_SESSION_TOKEN"),
        ):
            if sec.get(key):
                values[canonical] = sec[key].strip()
    if not found and required:
        raise UsageError(f"AWS profile {name!r} not found in {creds_path} or {conf_path}")
    flows = {"role_arn", "credential_process", "sso_session", "sso_start_url", "source_profile"}
    if required and "AWS_ACCESS_KEY_ID" not in values and conf is not None:
        sec = conf[section] if conf.has_section(section) else conf[name] if conf.has_section(name) else {}
        used = sorted(flows & set(sec))
        if used:
            raise UsageError(
                f"AWS profile {name!r} uses {', '.join(used)}, which delta-forensics cannot run: export temporary keys "
                f"first (aws configure export-credentials --profile {name} --format env) or pass them as storage options"
            )
    return values, " and ".join(found)


# --------------------------------------------------------------------------------------
# Layers
# --------------------------------------------------------------------------------------

Layer = dict[str, tuple[str, str]]  # canonical key -> (value, source)


def _canonical(kind: str, key: str) -> str | None:
    """Canonical name of `key` for this kind; None for another cloud's key or a write-side key."""
    lower = key.strip().lower()
    hit = _ALIASES[kind].get(lower)
    if hit:
        return hit
    upper = lower.upper()
    if _WRITE_SIDE.match(upper):
        return None
    for other, prefix in _PREFIX.items():
        if other != kind and upper.startswith(prefix + "_"):
            return None
    if kind != "azure" and upper.startswith("AZURITE_"):
        return None
    raise UsageError(f"unknown storage option {key!r} for a {kind} location")


def _explicit_layer(kind: str, given: Mapping[str, Any], source: str, ignored: list[str]) -> Layer:
    layer: Layer = {}
    for key, value in given.items():
        if value is None:
            continue
        canonical = _canonical(kind, str(key))
        if canonical is None:
            ignored.append(str(key))
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        layer[canonical] = (text, source)
    return layer


def _env_layer(kind: str, env: Mapping[str, str]) -> Layer:
    layer: Layer = {}
    prefix = _PREFIX[kind]
    for envs in _STORE_KEYS[kind].values():
        for name in envs:
            if env.get(name):
                layer[envs[0]] = (env[name], "environment")
                break
    for key in _CLIENT_KEYS:
        name = f"{prefix}_{key.upper()}"
        if env.get(name):
            layer[name] = (env[name], "environment")
    for canonical, names in (
        ("HTTPS_PROXY", ("HTTPS_PROXY", "https_proxy")),
        ("HTTP_PROXY", ("HTTP_PROXY", "http_proxy")),
        ("ALL_PROXY", ("ALL_PROXY", "all_proxy")),
        ("NO_PROXY", ("NO_PROXY", "no_proxy")),
        ("SSL_CERT_FILE", ("SSL_CERT_FILE",)),
    ):
        for name in names:
            if env.get(name):
                layer[canonical] = (env[name], "environment")
                break
    if kind == "s3":
        for name in ("AWS_PROFILE", "AWS_CA_BUNDLE", "AWS_S3_ADDRESSING_STYLE"):
            if env.get(name):
                layer[name] = (env[name], "environment")
    return layer


def _with_aws_profile(layer: Layer, env: Mapping[str, str], *, implicit_default: bool) -> Layer:
    """Put a layer's `AWS_PROFILE` (or `default`) keys under that layer's own keys."""
    named = layer.get("AWS_PROFILE", (None, ""))[0]
    name = named or ("default" if implicit_default else None)
    if not name:
        return layer
    values, where = aws_profile_values(name, env, required=bool(named))
    if not values:
        return layer
    base: Layer = {k: (v, f"AWS profile {name!r} ({where})") for k, v in values.items()}
    return _merge(base, layer, "s3")


def _merge(lower: Layer, higher: Layer, kind: str) -> Layer:
    """`higher` wins key by key; if it names any credential, lower credentials are dropped."""
    creds = _CREDENTIAL_KEYS.get(kind, set())
    out = dict(lower)
    if any(k in creds for k in higher):
        out = {k: v for k, v in out.items() if k not in creds}
    out.update(higher)
    return out


# --------------------------------------------------------------------------------------
# The resolved options
# --------------------------------------------------------------------------------------

_ENV_LOCK = threading.Lock()


@contextmanager
def _environment_hidden(prefix: str) -> Iterator[None]:
    """Hide `PREFIX_*` variables while a store is built: object_store reads the environment
    itself, which would mix a stray `AWS_SESSION_TOKEN` into explicit keys. Everything it should
    see is already in the resolved options."""
    with _ENV_LOCK:
        saved = {k: v for k, v in os.environ.items() if k.upper().startswith(prefix + "_")}
        for k in saved:
            del os.environ[k]
        try:
            yield
        finally:
            os.environ.update(saved)


@dataclass(frozen=True)
class StorageOptions:
    """Resolved settings for one kind of store; `repr`/`str` mask every secret value.

    `values` maps canonical (delta-rs style) keys to values, `sources` says where each came
    from ("explicit", "profile 'prod' (path)", "environment", "AWS profile ...", "uri").
    """

    kind: str
    values: Mapping[str, str] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    profile: str | None = None
    config_file: str | None = None
    ignored: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        remember_settings(self.values)  # scrubbed from every message of this run (forensics.safe)

    def by_store_key(self) -> dict[str, str]:
        """The values under object_store's own key names (`access_key_id`, `endpoint`, `allow_http`,
        `ssl_cert_file`): what a connector mapping reads (forensics/storage/connectors.py)."""
        prefix = _PREFIX[self.kind] + "_"
        out: dict[str, str] = {}
        for k, v in self.values.items():
            key = _OBSTORE_KEY[self.kind].get(k) or (k[len(prefix):] if k.startswith(prefix) else k).lower()
            out[key] = str(v)
        return out

    # ---- display -------------------------------------------------------------------
    def masked(self) -> dict[str, str]:
        """The values with every secret replaced by `***` (and proxy passwords removed)."""
        return {k: masked_value(k, v) for k, v in sorted(self.values.items())}

    def describe(self) -> list[tuple[str, str, str]]:
        """(key, masked value, source) rows, for `--show-options`-style output."""
        masked = self.masked()
        return [(k, masked[k], self.sources.get(k, "")) for k in masked]

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r} [{src}]" for k, v, src in self.describe())
        extra = f", profile={self.profile!r}" if self.profile else ""
        return f"StorageOptions(kind={self.kind!r}{extra}, {shown})" if shown else f"StorageOptions(kind={self.kind!r}{extra})"

    __str__ = __repr__

    def secret_values(self) -> tuple[str, ...]:
        """Every value a diagnostic must not contain: all but the showable ones, if longer than 3."""
        out = {v for k, v in self.values.items() if len(v) > 3 and (is_secret_key(k) or not (_SHOWABLE.match(k) or _PLAIN_VALUE.match(v)))}
        for v in self.values.values():  # a proxy's password, a SAS token's signature (shown alone)
            for part in uri_secrets(v):
                out.update({part, unquote(part), quote(unquote(part), safe="")})
        return tuple(sorted(out, key=len, reverse=True))

    def scrub(self, text: str) -> str:
        """`text` without any secret value (nor a piece of one) and without credentials in URLs."""
        return scrub(text, self.secret_values())

    # ---- what the store will talk to ----------------------------------------------
    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    def endpoint(self, location: StoreLocation | None = None) -> str:
        """The endpoint requests go to, for messages ("cannot reach <endpoint>")."""
        v = self.values
        if self.kind == "s3":
            if v.get("AWS_ENDPOINT_URL_S3") or v.get("AWS_ENDPOINT_URL"):
                return v.get("AWS_ENDPOINT_URL_S3") or v["AWS_ENDPOINT_URL"]
            region = v.get("AWS_REGION") or v.get("AWS_DEFAULT_REGION") or "us-east-1"
            return f"https://s3.{region}.amazonaws.com"
        if self.kind == "azure":
            if v.get("AZURE_STORAGE_ENDPOINT"):
                return v["AZURE_STORAGE_ENDPOINT"]
            if _truthy(v.get("AZURE_STORAGE_USE_EMULATOR")):
                return os.environ.get("AZURITE_BLOB_STORAGE_URL", "http://127.0.0.1:10000").rstrip("/") + f"/{AZURITE_ACCOUNT}"
            account = v.get("AZURE_STORAGE_ACCOUNT_NAME") or (location.account if location else "") or "<account>"
            return f"https://{account}.blob.core.windows.net"
        if self.kind == "gcs":
            return v.get("GOOGLE_BASE_URL") or "https://storage.googleapis.com"
        return location.uri if location else ""

    @property
    def endpoint_option(self) -> str:
        return {"s3": "AWS_ENDPOINT_URL", "azure": "AZURE_STORAGE_ENDPOINT", "gcs": "GOOGLE_BASE_URL"}.get(self.kind, "")

    def _split(self, location: StoreLocation) -> tuple[dict[str, str], dict[str, Any], dict[str, Any]]:
        """(store config, client options, retry config) as obstore's constructors take them."""
        kind = self.kind
        prefix = _PREFIX[kind]
        v = dict(self.values)
        config: dict[str, str] = {}
        client: dict[str, Any] = dict(DEFAULT_CLIENT)
        obstore_key = _OBSTORE_KEY[kind]
        for key, value in v.items():
            if key in obstore_key:
                config[obstore_key[key]] = value
            elif key.startswith(prefix + "_") and key[len(prefix) + 1 :].lower() in _CLIENT_KEYS:
                client[key[len(prefix) + 1 :].lower()] = value
        if kind == "s3":
            style = v.get("AWS_S3_ADDRESSING_STYLE", "").strip().lower()
            if style in ("path", "virtual") and "AWS_VIRTUAL_HOSTED_STYLE_REQUEST" not in v:
                config["virtual_hosted_style_request"] = "true" if style == "virtual" else "false"
            elif style not in ("", "auto", "path", "virtual"):
                raise UsageError(f"AWS_S3_ADDRESSING_STYLE={style!r}: expected path, virtual or auto")
        endpoint = self.endpoint(location)
        plain_http = endpoint.lower().startswith("http://")
        proxy = v.get("PROXY_URL") or (v.get("HTTP_PROXY") if plain_http else v.get("HTTPS_PROXY")) or v.get("ALL_PROXY")
        if proxy:
            client["proxy_url"] = proxy
            if v.get("NO_PROXY"):
                client["proxy_excludes"] = v["NO_PROXY"]
            if v.get("PROXY_CA_CERTIFICATE"):
                client["proxy_ca_certificate"] = _pem(v["PROXY_CA_CERTIFICATE"], "PROXY_CA_CERTIFICATE")
        ca_key = next((k for k in ("ROOT_CERTIFICATE", "AWS_CA_BUNDLE", "SSL_CERT_FILE") if v.get(k)), None)
        if ca_key and not plain_http:
            client["root_certificate"] = _pem(v[ca_key], ca_key)
        if plain_http and not _truthy(client.get("allow_http")):
            raise UsageError(
                f"the endpoint {scrub_uri_credentials(endpoint)} is plain HTTP: set {prefix}_ALLOW_HTTP=true "
                f"(--storage-option {prefix}_ALLOW_HTTP=true) to allow it"
            )
        for key in [k for k in client if k.endswith(("_timeout", "_interval"))] + ["timeout"]:
            if isinstance(client.get(key), str):
                client[key] = _duration(client[key], f"{prefix}_{key.upper()}")
        if "allow_http" in client:
            client["allow_http"] = _truthy(client["allow_http"])
        retries = v.get("MAX_RETRIES")
        try:
            max_retries = DEFAULT_MAX_RETRIES if retries is None else int(retries)
        except ValueError:
            raise UsageError(f"storage option MAX_RETRIES={retries!r} is not a whole number") from None
        retry = {
            "max_retries": max_retries,
            "retry_timeout": _duration(v["RETRY_TIMEOUT"], "RETRY_TIMEOUT") if v.get("RETRY_TIMEOUT") else DEFAULT_RETRY_TIMEOUT,
            "backoff": {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=2), "base": 2},
        }
        return config, client, retry

    def store(self, location: StoreLocation | str):
        """An obstore store rooted at the table (its prefix), built from these options only."""
        from obstore.exceptions import BaseError
        from obstore.store import AzureStore, GCSStore, LocalStore, S3Store

        loc = parse_location(location) if isinstance(location, str) else location
        if loc.kind == "catalog":
            raise UsageError(f"{loc.uri} is a catalog table name: resolve it to a storage location first")
        if loc.kind == "local":
            if not os.path.isdir(loc.prefix):
                raise UsageError(f"no such directory: {loc.prefix}")
            return LocalStore(loc.prefix)
        if loc.kind != self.kind:
            raise UsageError(f"options for {self.kind} cannot open a {loc.kind} location ({loc.uri})")
        config, client, retry = self._split(loc)
        prefix = loc.prefix or None
        try:
            with _environment_hidden(_PREFIX[loc.kind]):
                if loc.kind == "s3":
                    return S3Store(loc.bucket, prefix=prefix, config=config, client_options=client, retry_config=retry)
                if loc.kind == "azure":
                    return AzureStore(loc.bucket, prefix=prefix, config=config, client_options=client, retry_config=retry)
                return GCSStore(loc.bucket, prefix=prefix, config=config, client_options=client, retry_config=retry)
        except (BaseError, ValueError, TypeError) as e:
            detail = self.scrub(str(e).splitlines()[0] if str(e) else type(e).__name__)
            raise UsageError(f"cannot configure the {loc.kind} client for {loc.uri}: {detail}") from None


def _pem(value: str, key: str) -> str:
    """A certificate option is PEM text or a path to a PEM file."""
    if "-----BEGIN" in value:
        return value
    path = Path(value).expanduser()
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError as e:
        raise UsageError(f"{key}={value}: cannot read the certificate file ({e.strerror})") from None


def resolve_options(
    location: StoreLocation | str,
    explicit: Mapping[str, Any] | None = None,
    *,
    profile: str | None = None,
    environ: Mapping[str, str] | None = None,
    config_file: Path | None = None,
) -> StorageOptions:
    """Resolve the options for `location`: explicit > config-file profile > environment.

    `explicit` uses delta-rs key names (any case). `profile` names a `[profiles.NAME]` of the
    config file (default: `$DELTA_FORENSICS_PROFILE`, then a `default` profile if present).
    Credentials written into the URI (a SAS token) count as explicit. Keys meant for another
    cloud, or for writing (lock providers), are ignored and listed in `ignored`.
    """
    loc = parse_location(location) if isinstance(location, str) else location
    env = os.environ if environ is None else environ
    prof = load_profile(profile, environ=env, path=config_file)
    spark_conf = dict(prof.spark_conf) if prof else {}
    if loc.kind in ("local", "catalog"):
        return StorageOptions(
            kind=loc.kind,
            spark_conf=spark_conf,
            profile=prof.name if prof else None,
            config_file=str(prof.path) if prof else None,
        )
    kind = loc.kind
    ignored: list[str] = []
    env_layer = _env_layer(kind, env)
    if kind == "s3":
        env_layer = _with_aws_profile(env_layer, env, implicit_default=True)
    merged = env_layer
    if prof:
        layer = _explicit_layer(kind, prof.storage_options, f"profile {prof.name!r} ({prof.path})", ignored)
        if kind == "s3":
            layer = _with_aws_profile(layer, env, implicit_default=False)
        merged = _merge(merged, layer, kind)
    if loc.uri_credentials:
        merged = _merge(merged, {k: (v, "uri") for k, v in loc.uri_credentials}, kind)
    if explicit:
        layer = _explicit_layer(kind, explicit, "explicit options", ignored)
        if kind == "s3":
            layer = _with_aws_profile(layer, env, implicit_default=False)
        merged = _merge(merged, layer, kind)
    if kind == "azure":  # the URI's account names the table: it beats any option
        if loc.account:
            merged["AZURE_STORAGE_ACCOUNT_NAME"] = (loc.account, "uri")
        suffix = loc.host.split(".", 2)[2] if loc.host.count(".") >= 2 else ""
        if loc.account and suffix and suffix != "core.windows.net" and "AZURE_STORAGE_ENDPOINT" not in merged:
            merged["AZURE_STORAGE_ENDPOINT"] = (f"https://{loc.account}.blob.{suffix}", "uri")
        if _truthy(merged.get("AZURE_STORAGE_USE_EMULATOR", ("", ""))[0]) and "AZURE_STORAGE_ACCOUNT_NAME" not in merged:
            merged["AZURE_STORAGE_ACCOUNT_NAME"] = (AZURITE_ACCOUNT, "emulator default")
    return StorageOptions(
        kind=kind,
        values={k: v for k, (v, _) in merged.items()},
        sources={k: s for k, (_, s) in merged.items()},
        spark_conf=spark_conf,
        profile=prof.name if prof else None,
        config_file=str(prof.path) if prof else None,
        ignored=tuple(ignored),
    )
