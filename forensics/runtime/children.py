"""The environment the tool starts a Python child of its own with (`python -m forensics....`):
this package importable even when the caller put it on `sys.path` by hand (a notebook's
checkout, not installed), where a bare child would fail to import it; and no storage
credentials, because no child needs them (the halves decode text they are fed, the bundle's
copiers read the local mirror, the replay's second process reads files this process wrote, the
warm engine reads the mirror too) and a secret a child never holds is one it cannot leak into a
log, a core dump or `/proc/PID/environ`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from forensics.safe import is_secret_key

PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])  # the directory holding forensics/

# Settings the cloud SDKs and Hadoop's connectors read credentials or identities from, whatever
# the rest of the name says (AWS_PROFILE, AZURE_CLIENT_ID, GOOGLE_APPLICATION_CREDENTIALS, ...).
CLOUD_PREFIXES = ("AWS_", "AZURE_", "AZURITE_", "GOOGLE_", "GCS_", "GCP_", "CLOUDSDK_", "ARM_", "MSI_", "IDENTITY_")


def holds_credentials(key: str) -> bool:
    """Whether an environment setting may carry a credential: secret-named or a cloud SDK's."""
    return is_secret_key(key) or key.upper().startswith(CLOUD_PREFIXES)


def child_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) without credentials, with this package's directory first
    on PYTHONPATH."""
    out = {k: v for k, v in (os.environ if env is None else env).items() if not holds_credentials(k)}
    out["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, out.get("PYTHONPATH", "")) if p)
    return out
