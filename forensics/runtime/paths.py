"""Where delta-forensics keeps its own files (never under a table path)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_root() -> Path:
    """Where the tool keeps its cache, spark.log and last-error.txt: `$DELTA_FORENSICS_CACHE_DIR`, else the
    user cache directory."""
    env = os.environ.get("DELTA_FORENSICS_CACHE_DIR")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("delta-forensics"))


def table_cache_dir(location: str) -> Path:
    """One cache directory per table location (a hash of the normalised URI)."""
    digest = hashlib.sha256(location.encode("utf-8")).hexdigest()[:20]
    return cache_root() / "tables" / digest


def mirror_dir(location: str) -> Path:
    """Where a remote table's `_delta_log` is mirrored (apart from the parsed-log cache, which is
    rebuilt wholesale when its format changes)."""
    digest = hashlib.sha256(location.encode("utf-8")).hexdigest()[:20]
    return cache_root() / "mirrors" / digest
