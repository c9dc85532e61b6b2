"""Table features a protocol supports, and which ones fail concurrent transactions when a winner adds them.

delta-spark compares features, not versions, when a winner carries a Protocol: a legacy
`(minReaderVersion, minWriterVersion)` pair supports some features implicitly. From v4.2.0 each
feature also says whether adding it must abort concurrent transactions
(`failConcurrentTransactionsAtUpgrade`, enforced only with a writer setting, conflict-rules §14.2).
"""

from __future__ import annotations

from forensics.model import Protocol

# Legacy features and the versions that imply them (TableFeature.scala, the `Legacy*Feature` objects).
LEGACY_FEATURES: dict[str, tuple[int, int]] = {
    "appendOnly": (1, 2), "invariants": (1, 2), "checkConstraints": (1, 3), "changeDataFeed": (1, 4),
    "generatedColumns": (1, 4), "columnMapping": (2, 5), "identityColumns": (1, 6),
}

# Features whose `failConcurrentTransactionsAtUpgrade` is false, per release (every other feature
# inherits true from TableFeature). Read at delta-io/delta v4.2.0, v4.3.0, v4.3.1, v4.4.0 and
# master bb1057f; 4.3.1 = 4.3.0 and master = 4.4.0 (conflict-rules §14.2).
_SAFE_42 = frozenset({
    "appendOnly", "changeDataFeed", "columnMapping", "timestampNtz", "deletionVectors", "rowTracking",
    "domainMetadata", "icebergCompatV1", "icebergCompatV2", "typeWidening", "typeWidening-preview",
    "inCommitTimestamp",
})
_SAFE_43 = _SAFE_42 | {"icebergCompatV3", "v2Checkpoint"}
_SAFE_44 = _SAFE_43 | {"catalogManaged", "vacuumProtocolCheck"}


def supported_features(p: Protocol) -> set[str]:
    """`implicitlyAndExplicitlySupportedFeatures`: the listed features, plus (only while the protocol
    does not use both feature lists) the legacy features its versions imply."""
    listed = set(p.reader_features or ()) | set(p.writer_features or ())
    reader_lists, writer_lists = p.min_reader_version >= 3, p.min_writer_version >= 7
    if reader_lists and writer_lists:
        return listed
    implied = {name for name, (r, w) in LEGACY_FEATURES.items()
               if not reader_lists and r <= p.min_reader_version and not writer_lists and w <= p.min_writer_version}
    return listed | implied


def fails_concurrent_at_upgrade(feature: str, release: tuple[int, int]) -> bool:
    """Does adding `feature` abort concurrent transactions at this delta-spark release (4.2+)?"""
    safe = _SAFE_44 if release >= (4, 4) else _SAFE_43 if release >= (4, 3) else _SAFE_42
    return feature not in safe
