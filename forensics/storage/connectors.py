"""Object stores read by a cluster's executors, through Hadoop's connector for each store.

In local mode a remote table is read from the mirror of its `_delta_log` in the user's cache
(forensics/log/remote.py): pip's pyspark ships no object-store file system. A cluster's executors
run on other hosts, where that mirror does not exist, so with `--master` naming a cluster Spark
reads the log from the store itself (`s3://` as `s3a://`), and the mirror serves the driver alone
(the listing, the cache, evidence). This module says which URI Spark reads, which connector jars
the tool's own session asks for, and how the delta-rs storage-option names map to the connector's
`fs.*` keys. Credentials go only into the tool's own session's settings; Spark redacts settings
named like secrets in its UI and logs (`spark.redaction.regex`), and the tool never prints them.

The jars follow the Hadoop that pyspark ships: `org.apache.hadoop:hadoop-aws:<that version>`
through `spark.jars.packages` (Ivy, the user's settings, into the user's cache), or the jars in
`DELTA_FORENSICS_STORE_JARS=DIR` (tests and CI fetch a lean set with Maven: scripts/jvm/s3a.xml).
Tested: S3 (tests/test_cluster_store.py: a standalone worker that cannot see the driver's cache
reads a table from the local S3 server). Mapped but not tested (no emulator here serves the
connectors' APIs): `abfss://` (hadoop-azure's ABFS) and `gs://` (the GCS connector, which the
cluster must bring: it is not published per Hadoop release).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from forensics.storage.location import StoreLocation
from forensics.storage.options import StorageOptions

HADOOP_AWS = "org.apache.hadoop:hadoop-aws"
HADOOP_AZURE = "org.apache.hadoop:hadoop-azure"
STORE_JARS_ENV = "DELTA_FORENSICS_STORE_JARS"


@dataclass(frozen=True)
class StoreReadPlan:
    """Where a cluster's Spark reads a remote table, and the session settings that let it."""

    spark_root: str  # the table's URI in the connector's scheme (s3a://bucket/prefix)
    settings: dict[str, str] = field(default_factory=dict, repr=False)  # may hold credentials: never shown
    not_mapped: tuple[str, ...] = ()  # storage options the connector is not given (names only)


def is_cluster(master: str | None) -> bool:
    """A master whose executors may run on other hosts. `local`, `local[N]` and `local-cluster[...]`
    are not: their executors share this machine's disk, and the mirror with it."""
    return bool(master) and not master.startswith("local")


def hadoop_version() -> str | None:
    """The Hadoop release pyspark ships (from its `hadoop-client-api-X.jar`): the connector must match."""
    try:
        import pyspark
    except ImportError:
        return None
    for p in sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar")):
        m = re.fullmatch(r"hadoop-client-api-(\d[\w.]*)\.jar", p.name)
        if m:
            return m.group(1)
    return None


def plan(location: StoreLocation, options: StorageOptions, conf: dict[str, str] | None = None) -> StoreReadPlan:
    """The URI Spark reads `location` from on a cluster and the settings its session needs; the
    user's own settings (`--conf`, a profile's spark_conf) win over the mapped ones."""
    conf = conf or {}
    values = options.by_store_key()
    if location.kind == "s3":
        root, settings, used = _s3(location, values)
        package = HADOOP_AWS
    elif location.kind == "azure":
        root, settings, used = _azure(location, values)
        package = HADOOP_AZURE
    elif location.kind == "gcs":
        root, settings, used = _gcs(location, values)
        package = None
    else:
        raise ValueError(f"not an object store: {location.kind}")
    settings = {k: v for k, v in settings.items() if k not in conf}  # the user's own settings win
    settings.update({k: v for k, v in _jars(package, conf).items() if conf.get(k) != v})  # merged with the user's
    not_mapped = tuple(sorted(k for k in values if k not in used and k not in _CLIENT_ONLY))
    return StoreReadPlan(root, settings, not_mapped)


# Settings of the tool's own client (obstore) that say nothing the connector needs: the scheme of
# the endpoint says whether to use TLS, and writes never happen.
_CLIENT_ONLY = frozenset({"allow_http", "conditional_put", "copy_if_not_exists", "timeout", "connect_timeout",
                          "read_timeout", "pool_idle_timeout", "pool_max_idle_per_host", "user_agent", "http1_only",
                          "http2_only", "http2_keep_alive_interval", "http2_keep_alive_timeout",
                          "http2_keep_alive_while_idle", "randomize_addresses", "default_content_type",
                          "max_retries", "retry_timeout", "disable_tagging", "disable_bulk_delete"})


def _jars(package: str | None, conf: dict[str, str]) -> dict[str, str]:
    jar_dir = os.environ.get(STORE_JARS_ENV)
    if jar_dir:
        jars = sorted(str(p) for p in Path(jar_dir).glob("*.jar"))
        return {"spark.jars": ",".join([*filter(None, conf.get("spark.jars", "").split(",")), *jars])} if jars else {}
    version = hadoop_version()
    if package is None or version is None:
        return {}
    packages = [p for p in conf.get("spark.jars.packages", "").split(",") if p]
    if not any(p.startswith(package + ":") for p in packages):  # the user's own connector wins
        packages.append(f"{package}:{version}")
    return {"spark.jars.packages": ",".join(packages)}


def _truthy(v: str | None) -> bool:
    return str(v).strip().lower() in ("1", "true", "yes", "on")


def _s3(loc: StoreLocation, v: dict[str, str]) -> tuple[str, dict[str, str], set[str]]:
    root = f"s3a://{loc.bucket}" + (f"/{loc.prefix}" if loc.prefix else "")
    b = f"spark.hadoop.fs.s3a.bucket.{loc.bucket}."  # per-bucket keys: other buckets keep the cluster's own settings
    s: dict[str, str] = {}
    used: set[str] = set()

    def take(key: str) -> str | None:
        if key in v:
            used.add(key)
            return v[key]
        return None

    key_id, secret, token = take("access_key_id"), take("secret_access_key"), take("session_token")
    if key_id and secret:
        s[b + "access.key"], s[b + "secret.key"] = key_id, secret
        if token:
            s[b + "session.token"] = token
            s[b + "aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
        else:
            s[b + "aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
    elif _truthy(take("skip_signature")):
        s[b + "aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
    region = take("region") or take("default_region")
    if region:
        s[b + "endpoint.region"] = region
    endpoint = take("aws_endpoint_url_s3") or take("endpoint")
    if endpoint:
        s[b + "endpoint"] = endpoint
        s[b + "connection.ssl.enabled"] = "false" if endpoint.lower().startswith("http://") else "true"
    # object_store (delta-rs) addresses buckets path-style unless told otherwise; so does the connector then
    s[b + "path.style.access"] = "false" if _truthy(take("virtual_hosted_style_request")) else "true"
    return root, s, used


def _azure(loc: StoreLocation, v: dict[str, str]) -> tuple[str, dict[str, str], set[str]]:
    account = loc.account or v.get("account_name", "")
    host = f"{account}.dfs.core.windows.net"
    root = f"abfss://{loc.bucket}@{host}" + (f"/{loc.prefix}" if loc.prefix else "")
    s: dict[str, str] = {}
    used: set[str] = {"account_name"} if "account_name" in v else set()
    if "account_key" in v:
        used.add("account_key")
        s[f"spark.hadoop.fs.azure.account.key.{host}"] = v["account_key"]
    elif "sas_key" in v:
        used.add("sas_key")
        s[f"spark.hadoop.fs.azure.account.auth.type.{host}"] = "SAS"
        s[f"spark.hadoop.fs.azure.sas.fixed.token.{host}"] = v["sas_key"].lstrip("?")
    elif {"client_id", "client_secret", "tenant_id"} <= set(v):
        used |= {"client_id", "client_secret", "tenant_id"}
        s[f"spark.hadoop.fs.azure.account.auth.type.{host}"] = "OAuth"
        s[f"spark.hadoop.fs.azure.account.oauth.provider.type.{host}"] = \
            "org.apache.hadoop.fs.azurebfs.oauth2.ClientCredsTokenProvider"
        s[f"spark.hadoop.fs.azure.account.oauth2.client.id.{host}"] = v["client_id"]
        s[f"spark.hadoop.fs.azure.account.oauth2.client.secret.{host}"] = v["client_secret"]
        s[f"spark.hadoop.fs.azure.account.oauth2.client.endpoint.{host}"] = \
            f"https://login.microsoftonline.com/{v['tenant_id']}/oauth2/token"
    return root, s, used


def _gcs(loc: StoreLocation, v: dict[str, str]) -> tuple[str, dict[str, str], set[str]]:
    root = f"gs://{loc.bucket}" + (f"/{loc.prefix}" if loc.prefix else "")
    s: dict[str, str] = {}
    used: set[str] = set()
    keyfile = v.get("service_account") or v.get("application_credentials")
    if keyfile:
        used |= {k for k in ("service_account", "application_credentials") if k in v}
        s["spark.hadoop.google.cloud.auth.type"] = "SERVICE_ACCOUNT_JSON_KEYFILE"
        s["spark.hadoop.google.cloud.auth.service.account.json.keyfile"] = keyfile
    return root, s, used
