"""How a cluster's Spark is told to read a remote table from the store: the URI it reads, the
connector settings mapped from the delta-rs storage-option names, and the jars asked for
(forensics/storage/connectors.py). The read itself, on a worker that cannot see the
driver's cache, is tests/test_cluster_store.py (live)."""

from __future__ import annotations

from pathlib import Path

import pyspark
import pytest

from forensics.storage.connectors import hadoop_version, is_cluster, plan
from forensics.storage import parse_location, resolve_options

S3 = {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "s3cr3t-value", "aws_region": "eu-west-1",
      "aws_endpoint_url": "http://127.0.0.1:9000", "aws_allow_http": "true"}


def _plan(uri: str, opts: dict[str, str], conf: dict[str, str] | None = None, monkeypatch=None):
    loc = parse_location(uri)
    return plan(loc, resolve_options(loc, opts), conf)


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    for k in ("DELTA_FORENSICS_STORE_JARS", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
              "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_CA_BUNDLE", "SSL_CERT_FILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")


def test_only_a_cluster_reads_the_store():
    assert is_cluster("spark://host:7077") and is_cluster("yarn") and is_cluster("k8s://https://api:6443")
    assert not any(is_cluster(m) for m in (None, "", "local", "local[2]", "local[*]"))


def test_hadoop_version_is_the_one_pyspark_ships():
    v = hadoop_version()
    assert v and (Path(pyspark.__file__).parent / "jars" / f"hadoop-client-api-{v}.jar").is_file()


def test_s3_maps_delta_rs_names_to_per_bucket_s3a_keys():
    p = _plan("s3://sales-bkt/warehouse/orders", S3)
    assert p.spark_root == "s3a://sales-bkt/warehouse/orders"
    b = "spark.hadoop.fs.s3a.bucket.sales-bkt."
    assert {k: v for k, v in p.settings.items() if k.startswith(b)} == {
        b + "access.key": "AKIDEXAMPLE", b + "secret.key": "s3cr3t-value",
        b + "aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        b + "endpoint.region": "eu-west-1", b + "endpoint": "http://127.0.0.1:9000",
        b + "connection.ssl.enabled": "false", b + "path.style.access": "true",
    }
    assert p.settings["spark.jars.packages"] == f"org.apache.hadoop:hadoop-aws:{hadoop_version()}"
    assert p.not_mapped == ()
    assert "s3cr3t-value" not in repr(p)  # the settings hold credentials: never in a repr


def test_s3_session_token_virtual_hosts_and_what_is_not_passed():
    p = _plan("s3a://b-1/t", {**S3, "aws_session_token": "tok", "aws_virtual_hosted_style_request": "true",
                              "aws_endpoint_url": "https://s3.eu-west-1.amazonaws.com", "aws_role_arn": "arn:aws:iam::1:role/r"})
    b = "spark.hadoop.fs.s3a.bucket.b-1."
    assert p.settings[b + "session.token"] == "tok"
    assert p.settings[b + "aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")
    assert p.settings[b + "path.style.access"] == "false" and p.settings[b + "connection.ssl.enabled"] == "true"
    assert p.not_mapped == ("role_arn",)  # said by name, never by value


def test_the_users_own_settings_and_connector_win():
    conf = {"spark.hadoop.fs.s3a.bucket.b-1.endpoint": "http://mine:9000",
            "spark.jars.packages": "org.apache.hadoop:hadoop-aws:3.3.4,com.example:x:1"}
    p = _plan("s3://b-1/t", S3, conf)
    assert "spark.hadoop.fs.s3a.bucket.b-1.endpoint" not in p.settings
    assert "spark.jars.packages" not in p.settings  # the user's hadoop-aws, untouched


def test_jars_from_a_directory(tmp_path, monkeypatch):
    for name in ("hadoop-aws-3.5.0.jar", "s3-2.35.4.jar"):
        (tmp_path / name).write_bytes(b"")
    monkeypatch.setenv("DELTA_FORENSICS_STORE_JARS", str(tmp_path))
    p = _plan("s3://b-1/t", S3, {"spark.jars": "/opt/other.jar"})
    assert p.settings["spark.jars"].split(",") == ["/opt/other.jar", *(str(tmp_path / n) for n in ("hadoop-aws-3.5.0.jar", "s3-2.35.4.jar"))]
    assert "spark.jars.packages" not in p.settings


def test_azure_and_gcs_mappings():
    a = _plan("abfss://cont@acct.dfs.core.windows.net/t", {"azure_storage_account_key": "a2V5"})
    assert a.spark_root == "abfss://cont@acct.dfs.core.windows.net/t"
    assert a.settings["spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net"] == "a2V5"
    assert a.settings["spark.jars.packages"] == f"org.apache.hadoop:hadoop-azure:{hadoop_version()}"
    sas = _plan("az://cont/t", {"azure_storage_account_name": "acct", "azure_storage_sas_token": "?sv=1&sig=x"})
    assert sas.spark_root == "abfss://cont@acct.dfs.core.windows.net/t"
    assert sas.settings["spark.hadoop.fs.azure.account.auth.type.acct.dfs.core.windows.net"] == "SAS"
    g = _plan("gs://bkt/t", {"google_service_account": "/keys/sa.json"})
    assert g.spark_root == "gs://bkt/t"
    assert g.settings["spark.hadoop.google.cloud.auth.service.account.json.keyfile"] == "/keys/sa.json"
    assert "spark.jars.packages" not in g.settings  # the GCS connector is the cluster's to bring
