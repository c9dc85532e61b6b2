"""How the tool starts a Python child of its own (`python -m forensics....`): with this package
importable even when the caller put it on `sys.path` by hand (a notebook's checkout, not
installed), where a bare child would fail to import it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])  # the directory holding forensics/


def with_this_package(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) with this package's directory first on PYTHONPATH."""
    out = dict(os.environ if env is None else env)
    out["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, out.get("PYTHONPATH", "")) if p)
    return out
