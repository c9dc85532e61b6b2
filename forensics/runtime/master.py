"""The Spark master of the tool's own session, chosen in one place: the caller's `--master`,
else `$DELTA_FORENSICS_MASTER`, else local mode on two cores."""

from __future__ import annotations

import os

DEFAULT_MASTER = "local[2]"


def chosen_master(master: str | None = None) -> str:
    return master or os.environ.get("DELTA_FORENSICS_MASTER") or DEFAULT_MASTER


def is_local(master: str | None = None) -> bool:
    """Whether the chosen master runs its executors in this process (`local`, `local[N]`)."""
    return chosen_master(master).startswith("local")
