"""Turn an object-store failure into one line that says what to check, with its own exit code.

obstore's messages are long Rust debug dumps that can hold request URLs with SAS signatures;
none of that text reaches the user. We read the HTTP status, the store's error code and the
connection failure kind out of it, and write our own sentence naming the (secret-free) URI.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from forensics.errors import (
    ForensicsError,
    StoreAccessDenied,
    StoreNotFound,
    StoreThrottled,
    StoreUnreachable,
    UnreadableLog,
    UsageError,
)
from forensics.storage.location import StoreLocation, scrub_uri_credentials
from forensics.storage.options import StorageOptions

_STATUS = re.compile(r"(?:status code: |status: )(\d{3})")
_CODE = re.compile(r"<Code>\s*([A-Za-z][\w.]*)\s*</Code>")
_NO_BUCKET_CODES = {"NoSuchBucket", "ContainerNotFound", "BucketNotFound", "ContainerBeingDeleted"}
_DENIED_CODES = {
    "AccessDenied",
    "AllAccessDisabled",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "InvalidToken",
    "TokenRefreshRequired",
    "AuthorizationFailure",
    "AuthenticationFailed",
    "AuthorizationPermissionMismatch",
    "AuthorizationResourceTypeMismatch",
    "InsufficientAccountPermissions",
    "AccountIsDisabled",
    "InvalidAuthenticationInfo",
    "NoAuthenticationInformation",
    "UserProjectAccountProblem",
}
# Throttling replies: S3 (503 SlowDown), Azure (503 ServerBusy), GCS and others (429).
_THROTTLE_CODES = {"SlowDown", "ServerBusy", "TooManyRequests", "Throttling", "ThrottlingException", "RequestLimitExceeded",
                   "RequestThrottled", "rateLimitExceeded"}
_RETRIED = re.compile(r" in ([\d.]+\s*[a-zµ]*), after (\d+) retries")
_REGION_CODES = {"PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException"}
_CREDENTIAL_HINT = {
    "s3": "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN or AWS_PROFILE",
    "azure": "AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_TOKEN or AZURE_CLIENT_ID/AZURE_CLIENT_SECRET/AZURE_TENANT_ID",
    "gcs": "GOOGLE_APPLICATION_CREDENTIALS or GOOGLE_SERVICE_ACCOUNT",
}
_CREDENTIAL_KEYS = {
    "s3": ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_SKIP_SIGNATURE"),
    "azure": (
        "AZURE_STORAGE_ACCOUNT_KEY",
        "AZURE_STORAGE_SAS_TOKEN",
        "AZURE_STORAGE_TOKEN",
        "AZURE_STORAGE_CLIENT_ID",
        "AZURE_STORAGE_USE_EMULATOR",
    ),
    "gcs": (
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_SERVICE_ACCOUNT",
        "GOOGLE_SERVICE_ACCOUNT_KEY",
        "GOOGLE_BEARER_TOKEN",
        "GOOGLE_SKIP_SIGNATURE",
    ),
}


def _reason_unreachable(text: str) -> str | None:
    """Why a request never got an answer, or None if it did get one."""
    low = text.lower()
    if "dns error" in low or "failed to lookup address" in low or "name or service not known" in low:
        return "DNS lookup failed"
    if "connection refused" in low:
        return "connection refused"
    if "timed out" in low or "timeout" in low and ("kind: timeout" in low or "operation timed out" in low or "deadline" in low):
        return "timed out"
    if "certificate" in low or "tls handshake" in low or "invalidcertificate" in low:
        return "TLS certificate not trusted"
    if "connection reset" in low or "broken pipe" in low or "connection closed" in low:
        return "connection dropped"
    if "cut short" in low or "incompletebody" in low or "unexpectedeof" in low or "response body error" in low:
        return "transfer cut short"
    if "kind: connect" in low or "tcp connect error" in low or "error sending request" in low:
        return "connection failed"
    if "kind: timeout" in low:
        return "timed out"
    return None


def _seconds(elapsed: str) -> str:
    """object_store's `265.8ms` / `3.2s` as `0.3 s` / `3.2 s`."""
    m = re.fullmatch(r"([\d.]+)\s*([a-zµ]*)", elapsed.strip())
    if not m:
        return elapsed
    scale = {"ms": 1e-3, "µs": 1e-6, "us": 1e-6, "ns": 1e-9}.get(m.group(2), 1.0)
    return f"{float(m.group(1)) * scale:.1f} s"


def _credential_source(options: StorageOptions) -> str:
    used = [(k, options.sources.get(k, "")) for k in _CREDENTIAL_KEYS.get(options.kind, ()) if options.get(k)]
    if not used:
        return "no credentials were configured"
    return "using " + ", ".join(f"{k} from {src}" for k, src in used)


def classify(exc: BaseException, location: StoreLocation, options: StorageOptions, *, listing: bool = True) -> ForensicsError:
    """The `ForensicsError` for a store failure. `listing`: the request listed the bucket (a 404
    on a list means the bucket itself is missing, a 404 on a GET only that one object is)."""
    if isinstance(exc, ForensicsError):
        return exc
    text = str(exc)
    uri = location.uri
    endpoint = scrub_uri_credentials(options.endpoint(location))
    status_m = _STATUS.search(text)
    status = int(status_m.group(1)) if status_m else None
    code_m = _CODE.search(text)
    code = code_m.group(1) if code_m else None
    low = text.lower()
    name = type(exc).__name__
    what = "container" if location.kind == "azure" else "bucket"
    detail = " ".join(x for x in (f"HTTP {status}" if status else "", code or "") if x)

    if "169.254.169.254" in text or "metadata" in low and ("credential" in low or "token" in low):
        err: ForensicsError = StoreAccessDenied(
            f"no credentials for {uri}: none in the options, profile or environment, and no instance metadata "
            f"service answered: set {_CREDENTIAL_HINT.get(location.kind, 'credentials')}"
        )
    elif (
        code in _NO_BUCKET_CODES
        or "no bucket named" in low
        or "bucket does not exist" in low
        or "container does not exist" in low
        or (status == 404 and listing)
    ):
        where = (
            f" in account {options.get('AZURE_STORAGE_ACCOUNT_NAME')}"
            if location.kind == "azure" and options.get("AZURE_STORAGE_ACCOUNT_NAME")
            else ""
        )
        err = StoreNotFound(
            f"no such {what} {location.bucket_uri}{where} (for {uri}): check the {what} name"
            + (", the account" if location.kind == "azure" else "")
            + f" and the endpoint {endpoint}"
        )
    elif status in (401, 403) or code in _DENIED_CODES or name in ("PermissionDeniedError", "UnauthenticatedError"):
        err = StoreAccessDenied(
            f"access denied to {uri}"
            + (f" ({detail})" if detail else "")
            + f": check credentials ({_CREDENTIAL_HINT.get(location.kind, 'credentials')}; {_credential_source(options)}) "
            f"and that they may list and read the {what}"
        )
    elif status == 429 or code in _THROTTLE_CODES or (status == 503 and "performing head" in low):  # HEAD: no body, no code
        retried = _RETRIED.search(text)
        after = f"; {retried.group(2)} retries over {_seconds(retried.group(1))}" if retried else ""
        err = StoreThrottled(
            f"the store at {endpoint} kept throttling requests for {uri} ({detail}{after}): nothing is wrong with the "
            f"table; run again later (storage options MAX_RETRIES and RETRY_TIMEOUT allow more retries)"
        )
    elif code in _REGION_CODES or status == 301 or "incorrectly configured region" in low:
        err = UsageError(f"the bucket of {uri} is in another region ({detail or 'redirect'}): set AWS_REGION to the bucket's region")
    elif status is None and (reason := _reason_unreachable(text)):
        hint = ", the account name" if location.kind == "azure" and reason == "DNS lookup failed" else ""
        if reason == "TLS certificate not trusted":
            hint += "; for a private CA set AWS_CA_BUNDLE / SSL_CERT_FILE"
        if any(options.get(k) for k in ("PROXY_URL", "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")):
            hint += ", the proxy (HTTPS_PROXY / NO_PROXY)"
        what_failed = "lost the connection to" if reason in ("connection dropped", "transfer cut short") else "cannot reach"
        err = StoreUnreachable(
            f"{what_failed} {endpoint} for {uri} ({reason}): check the endpoint "
            f"({options.endpoint_option} / --storage-option {options.endpoint_option}=...){hint} and the network"
        )
    elif status is not None and (status >= 500 or status in (408, 429)):
        err = StoreUnreachable(
            f"the store at {endpoint} failed for {uri} ({detail}) after retries: try again later, or check the endpoint "
            f"({options.endpoint_option})"
        )
    elif name == "UnknownConfigurationKeyError" or isinstance(exc, ValueError) and status is None:
        err = UsageError(f"cannot configure the {location.kind} client for {uri}: {text.splitlines()[0] if text else name}")
    else:
        err = UnreadableLog(f"reading {uri} failed ({detail or name}): {text.splitlines()[0] if text else name}")
    return _scrubbed(err, options)


def _scrubbed(err: ForensicsError, options: StorageOptions) -> ForensicsError:
    """One line, no secret: option values and URL credentials are removed from the message."""
    message = options.scrub(" ".join(err.message.split()))
    if len(message) > 400:
        message = message[:397] + "..."
    out = type(err)(message)
    return out


@contextmanager
def store_errors(location: StoreLocation, options: StorageOptions, *, listing: bool = True) -> Iterator[None]:
    """Re-raise any store failure inside the block as its classified `ForensicsError`.

    The original exception is not chained: its text can hold signed URLs.
    """
    try:
        yield
    except ForensicsError:
        raise
    except Exception as e:  # noqa: BLE001 - every store failure becomes one line
        raise classify(e, location, options, listing=listing) from None
