"""Metadata conflict resolution by release (conflict-rules §5.2).

v1.x-3.2: any winning Metadata aborts. v3.3-4.0 (`checkNoMetadataUpdates`): identity-only
and row-tracking-enablement-only winners are tolerated when the transaction has no
metadata change. v4.1+ (`attemptToResolveMetadataConflicts`): an allow-list of
configuration keys with per-key validators, plus column-mapping-only schema changes.
"""

from __future__ import annotations

import json
from typing import Any

from forensics.model import Metadata, Protocol, WinningCommit

IDENTITY_TAG = "delta.identity.schemaUpdate"  # conflict-rules §3 / §8.3
RT_ENABLEMENT_TAG = "rowTrackingEnablementOnly"  # conflict-rules §8.3

RT_MATERIALIZED_KEYS = ("delta.rowTracking.materializedRowIdColumnName",
                        "delta.rowTracking.materializedRowCommitVersionColumnName")
COLUMN_MAPPING_FIELD_KEYS = ("delta.columnMapping.id", "delta.columnMapping.physicalName")


def winner_tags(w: WinningCommit) -> dict[str, str]:
    tags = dict(w.commit.tags or {}) if w.commit is not None and w.commit.tags else {}
    tags.update(w.tags or {})
    return tags


def is_identity_only(w: WinningCommit) -> bool:
    return str(winner_tags(w).get(IDENTITY_TAG, "")).lower() == "true"


def is_rt_enablement_only(w: WinningCommit) -> bool:
    return str(winner_tags(w).get(RT_ENABLEMENT_TAG, "")).lower() == "true"


def supports(protocol: Protocol | None, feature: str) -> bool:
    """Does the protocol support a table feature (writer features, or legacy versions)?"""
    if protocol is None:
        return False
    feats = set(protocol.writer_features or ()) | set(protocol.reader_features or ())
    if feature in feats:
        return True
    if feature == "catalogOwned":
        return bool(feats & {"catalogOwned-preview", "catalogManaged"})
    if protocol.writer_features is None and feature == "columnMapping":
        return protocol.min_writer_version >= 5 and protocol.min_reader_version >= 2
    return False


def _is_true(v: Any) -> bool:
    return str(v).lower() == "true"


# `ConflictChecker.metadataConfigurationChangeAllowList` as each delta-spark release ships it
# (conflict-rules §5.2.4; delta-io/delta tags v4.1.0, v4.2.0, v4.3.0, v4.4.0).
_ALLOW_41 = frozenset({"delta.enableRowTracking", *RT_MATERIALIZED_KEYS, "delta.columnMapping.mode",
                       "delta.columnMapping.maxColumnId", "delta.enableDeletionVectors"})
_ALLOW_43 = _ALLOW_41 | {"delta.checkpointPolicy", "delta.enableInCommitTimestamps",
                         "delta.inCommitTimestampEnablementVersion", "delta.inCommitTimestampEnablementTimestamp"}
_ALLOW_44 = _ALLOW_43 | {"io.unitycatalog.tableId"}


def allow_list(release: tuple[int, int]) -> frozenset[str]:
    """The configuration keys a v4.1+ release can reconcile: 4.1 = 4.2 < 4.3 < 4.4 (and later)."""
    if release >= (4, 4):
        return _ALLOW_44
    if release >= (4, 3):
        return _ALLOW_43
    return _ALLOW_41


def _validate_key(key: str, old: str | None, new: str, winner_cfg: dict[str, str],
                  protocol: Protocol | None, release: tuple[int, int]) -> str | None:
    """None if the change of one configuration key is resolvable, else the reason (conflict-rules §5.2.4)."""
    if key not in allow_list(release):
        return f"{key} is not on the allow-list of delta-spark {release[0]}.{release[1]}"
    if key == "delta.enableRowTracking":
        if not _is_true(new):
            return f"{key} may only change to true"
        return None if supports(protocol, "rowTracking") else "protocol does not support rowTracking"
    if key in RT_MATERIALIZED_KEYS:
        return None if _is_true(winner_cfg.get("delta.enableRowTracking")) else f"{key} without row tracking enabled"
    if key == "delta.columnMapping.mode":
        if (old or "none") != "none" or new != "name":
            return "column mapping mode may only change none -> name"
        return None if supports(protocol, "columnMapping") else "protocol does not support columnMapping"
    if key == "delta.columnMapping.maxColumnId":
        return None
    if key == "delta.enableDeletionVectors":
        if not _is_true(new):
            return f"{key} may only change to true"
        return None if supports(protocol, "deletionVectors") else "protocol does not support deletionVectors"
    if key == "delta.checkpointPolicy":
        if new != "v2":
            return f"{key} may only change to v2"
        return None if supports(protocol, "v2Checkpoint") else "protocol does not support v2Checkpoint"
    if key == "delta.enableInCommitTimestamps":
        if not _is_true(new):
            return f"{key} may only change to true"
        return None if supports(protocol, "inCommitTimestamp") else "protocol does not support inCommitTimestamp"
    if key in ("delta.inCommitTimestampEnablementVersion", "delta.inCommitTimestampEnablementTimestamp"):
        return None if old is None else f"{key} may only be newly added"
    if key == "io.unitycatalog.tableId":
        # Validated only on catalog-managed tables; elsewhere the key passes unchecked (v4.4.0).
        if supports(protocol, "catalogOwned") and old is not None:
            return f"{key} may only be newly added on a catalog-managed table"
        return None
    return f"{key} is not on the allow-list"


def _schema_change_ok(old: str | None, new: str | None, old_mode: str, new_mode: str) -> str | None:
    """conflict-rules §5.2.5: only column-mapping metadata may change, and only with mode none -> name."""
    if old == new:
        return None
    try:
        a, b = json.loads(old or "{}"), json.loads(new or "{}")
    except ValueError:
        return "schemaString is not readable"
    fa, fb = a.get("fields") or [], b.get("fields") or []
    if len(fa) != len(fb):
        return "schema has a different number of top-level fields"
    for x, y in zip(fa, fb):
        if (x.get("name"), x.get("type"), x.get("nullable")) != (y.get("name"), y.get("type"), y.get("nullable")):
            return f"column {x.get('name')!r} changed name, type or nullability"
        mx = {k: v for k, v in (x.get("metadata") or {}).items() if k not in COLUMN_MAPPING_FIELD_KEYS}
        my = {k: v for k, v in (y.get("metadata") or {}).items() if k not in COLUMN_MAPPING_FIELD_KEYS}
        if mx != my:
            return f"column {x.get('name')!r} metadata changed beyond column mapping"
    if not (old_mode == "none" and new_mode == "name"):
        return "schema changed without a column mapping none -> name transition"
    return None


def resolve_41(txn_metadata_changed: bool, read_md: Metadata | None, w: WinningCommit,
               protocol_after: Protocol | None, release: tuple[int, int] = (4, 4)) -> tuple[bool, str]:
    """delta-spark v4.1+ attemptToResolveMetadataConflicts (conflict-rules §5.2), for one release: (accepted, reason)."""
    if txn_metadata_changed:
        return False, "both this transaction and the winner change metadata (no merging)"
    if is_identity_only(w):
        return True, f"winner v{w.version} is an identity-only metadata update; tolerated"
    wm = w.metadata
    assert wm is not None
    if read_md is None:
        return False, "read metadata unknown, cannot compare with the winner's (assumed conflicting)"
    for field in ("id", "name", "description", "format_provider", "partition_columns", "created_time"):
        if getattr(read_md, field) != getattr(wm, field):
            return False, f"winner changed metadata field {field}"
    old, new = read_md.configuration, wm.configuration
    removed = sorted(set(old) - set(new))
    if removed:
        return False, f"winner removed configuration key {removed[0]}"
    changed = sorted(k for k in new if old.get(k) != new[k])
    for k in changed:
        why = _validate_key(k, old.get(k), new[k], new, protocol_after, release)
        if why:
            return False, why
    why = _schema_change_ok(read_md.schema_string, wm.schema_string,
                            old.get("delta.columnMapping.mode", "none"), new.get("delta.columnMapping.mode", "none"))
    if why:
        return False, why
    keys = ", ".join(changed) if changed else "no configuration keys"
    return True, f"winner v{w.version} metadata change ({keys}) is on the allow-list; adopted"


def tolerate_33(txn_metadata_changed: bool, w: WinningCommit) -> tuple[bool, str]:
    """delta-spark v3.3-4.0 checkNoMetadataUpdates matrix (conflict-rules §5.2)."""
    if txn_metadata_changed:
        return False, "both this transaction and the winner change metadata"
    if is_identity_only(w):
        return True, f"winner v{w.version} is an identity-only metadata update; tolerated (v3.3+)"
    if is_rt_enablement_only(w):
        return True, f"winner v{w.version} only enables row tracking; resolved and adopted (v3.3+)"
    return False, f"winner v{w.version} changed metadata"
