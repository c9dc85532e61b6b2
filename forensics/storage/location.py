"""Where a table lives: one parsed, secret-free description of a table URI.

Every other storage module starts from a `StoreLocation`, so URI quirks (s3a, abfss hosts, SAS
tokens in query strings, `user:password@`) are handled once here. The `uri` it carries is safe
to print: credentials found in the text are moved to a field that is never shown.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from forensics.errors import UsageError
from forensics.safe import scrub_uri_credentials  # the one definition; re-exported for forensics.storage

Kind = Literal["local", "s3", "azure", "gcs", "catalog"]

_SCHEMES: dict[str, Kind] = {
    "s3": "s3",
    "s3a": "s3",
    "az": "azure",
    "azure": "azure",
    "abfs": "azure",
    "abfss": "azure",
    "gs": "gcs",
    "file": "local",
}
_AZURE_HOST = re.compile(
    r"^([a-z0-9-]+)\.(blob|dfs)\.(core\.windows\.net|core\.chinacloudapi\.cn|core\.usgovcloudapi\.net|fabric\.microsoft\.com)$"
)
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
# `catalog.schema.table` or `schema.table`: identifiers (optionally back-quoted), no slash.
_CATALOG = re.compile(r"^(`[^`/\\]+`|[A-Za-z_][\w-]*)(\.(`[^`/\\]+`|[A-Za-z_][\w-]*)){1,2}$")
# Characters kept as they are when a prefix is written back into a URI.
_SAFE_PATH = "/!$&'()*+,;=:@-._~"


@dataclass(frozen=True)
class StoreLocation:
    """A table's place: `kind` says which store, `bucket`/`account`/`prefix` say where in it.

    `uri` is normalised (lower-case scheme, host, container and GCS bucket; S3 buckets keep
    their case; no empty path segments, no trailing slash) and never holds a credential. Credentials that were written into the URI (a SAS
    token, `key:secret@`) are kept in `uri_credentials`, which repr/str/== never show.
    """

    uri: str
    scheme: str  # as written, lower-case: "s3a" stays "s3a" ("" for a catalog name)
    kind: Kind
    bucket: str = ""  # bucket (S3, GCS) or container (Azure)
    account: str = ""  # Azure storage account, when the URI names it
    prefix: str = ""  # table path inside the bucket, no leading/trailing slash; local: absolute path
    host: str = ""  # Azure https/abfs host as written (blob vs dfs, sovereign clouds)
    uri_credentials: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False, hash=False)

    def __str__(self) -> str:
        return self.uri

    @property
    def is_remote(self) -> bool:
        return self.kind in ("s3", "azure", "gcs")

    @property
    def bucket_uri(self) -> str:
        """The bucket/container part alone, for messages like "no such bucket"."""
        if self.kind == "azure":
            if self.host:
                return (
                    f"{self.scheme}://{self.bucket}@{self.host}"
                    if self.scheme.startswith("abf")
                    else f"{self.scheme}://{self.host}/{self.bucket}"
                )
            return f"{self.scheme}://{self.bucket}"
        if self.kind in ("s3", "gcs"):
            return f"{self.scheme}://{self.bucket}"
        return self.uri

    def child(self, relative: str) -> str:
        """The URI (or local path) of `relative` under the table root."""
        relative = relative.strip("/")
        if self.kind == "local":
            return os.path.join(self.prefix, *relative.split("/"))
        return f"{self.uri}/{quote(relative, safe=_SAFE_PATH)}"


def _clean_prefix(path: str) -> str:
    """Decode %-escapes and drop empty segments: `/a//b/` -> `a/b`."""
    return "/".join(p for p in unquote(path).split("/") if p)


def _join_uri(head: str, prefix: str) -> str:
    return f"{head}/{quote(prefix, safe=_SAFE_PATH)}" if prefix else head


def _credentials_from_query(query: str) -> tuple[tuple[str, str], ...]:
    """A query string carrying a SAS signature (`sig=`) is the token itself; anything else is dropped."""
    if not query:
        return ()
    pairs = parse_qsl(query, keep_blank_values=True)
    if any(k.lower() == "sig" for k, _ in pairs):
        return (("AZURE_STORAGE_SAS_TOKEN", query),)
    return ()


def _local(uri: str) -> StoreLocation:
    path = os.path.abspath(os.path.expanduser(uri))
    if len(path) > 1:
        path = path.rstrip("/\\") or path
    return StoreLocation(uri=path, scheme="file", kind="local", prefix=path)


def parse_location(uri: str) -> StoreLocation:
    """Parse a table URI or path into a `StoreLocation` (raises `UsageError` for an unknown scheme).

    `s3://b/t`, `s3a://b/t`, `gs://b/t`, `az://container/t`, `azure://container/t`,
    `abfs[s]://container@account.dfs.core.windows.net/t`,
    `https://account.blob.core.windows.net/container/t[?SAS]`, `file:///t`, plain paths, and
    `catalog.schema.table` names (kind "catalog": resolving them is someone else's job).
    """
    if not isinstance(uri, str) or not uri.strip():
        raise UsageError("empty table location")
    text = uri.strip()
    m = _SCHEME.match(text)
    if m is None or len(m.group(1)) == 1:  # no scheme, or a Windows drive letter (C:\...)
        if "/" not in text and "\\" not in text and _CATALOG.match(text) and not os.path.exists(text):
            return StoreLocation(uri=text, scheme="", kind="catalog", prefix=text)
        return _local(text)
    scheme = m.group(1).lower()
    if scheme == "file":
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            raise UsageError(f"file: URIs must name a local path, not host {parts.netloc.rpartition('@')[2]!r}")
        return _local(unquote(parts.path) or "/")
    parts = urlsplit(text)
    creds = list(_credentials_from_query(parts.query))
    netloc = parts.netloc
    userinfo, _, hostport = netloc.rpartition("@")
    user, has_password, password = userinfo.partition(":")
    if scheme in ("http", "https"):
        host = hostport.lower()
        am = _AZURE_HOST.match(host)
        if not am:
            raise UsageError(
                f"unsupported table location {scheme}://{host}/...: use s3://, gs://, az:// or abfss:// "
                "(https:// is understood only for Azure storage account hosts)"
            )
        segments = [p for p in unquote(parts.path).split("/") if p]
        if not segments:
            raise UsageError(f"{scheme}://{host} names no container: add /<container>/<table path>")
        container, prefix = segments[0].lower(), "/".join(segments[1:])
        return StoreLocation(
            uri=_join_uri(f"{scheme}://{host}/{container}", prefix),
            scheme=scheme,
            kind="azure",
            bucket=container,
            account=am.group(1),
            prefix=prefix,
            host=host,
            uri_credentials=tuple(creds),
        )
    kind = _SCHEMES.get(scheme)
    if kind is None:
        raise UsageError(f"unsupported scheme {scheme}:// (supported: s3, s3a, gs, az, azure, abfs, abfss, file, or a local path)")
    prefix = _clean_prefix(parts.path)
    if kind == "azure" and (scheme in ("abfs", "abfss") or userinfo):
        host = hostport.lower()
        container = user.lower()
        if not container:
            raise UsageError(
                f"{scheme}:// URIs name the container before '@': {scheme}://<container>@<account>.dfs.core.windows.net/<path>"
            )
        am = _AZURE_HOST.match(host)
        account = am.group(1) if am else host.split(".", 1)[0]
        return StoreLocation(
            uri=_join_uri(f"{scheme}://{container}@{host}", prefix),
            scheme=scheme,
            kind="azure",
            bucket=container,
            account=account,
            prefix=prefix,
            host=host,
            uri_credentials=tuple(creds),
        )
    # GCS buckets are lower-case by rule; legacy S3 buckets may not be, and their case matters.
    bucket = hostport if kind == "s3" else hostport.lower()
    if not bucket:
        raise UsageError(f"{scheme}:// URI names no bucket: {scheme}://<bucket>/<table path>")
    if userinfo and kind == "s3" and has_password:  # Hadoop-era s3a://KEY:SECRET@bucket
        creds += [("AWS_ACCESS_KEY_ID", unquote(user)), ("AWS_SECRET_ACCESS_KEY", unquote(password))]
    return StoreLocation(
        uri=_join_uri(f"{scheme}://{bucket}", prefix),
        scheme=scheme,
        kind=kind,
        bucket=bucket,
        prefix=prefix,
        uri_credentials=tuple(creds),
    )
