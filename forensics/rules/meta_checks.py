"""Non-file checks: protocol, metadata, domain metadata, app ids, row-tracking rebase steps.

delta-spark §5.1-§5.5 (per release via the profile), delta-rs §9, Kernel §10.
Each function checks ONE winning commit and returns one CheckOutcome.
"""

from __future__ import annotations

from forensics.model import ROW_TRACKING_BACKFILL, ROW_TRACKING_UNBACKFILL, Protocol, WinningCommit
import forensics.rules.metadata as md
from forensics.rules.features import fails_concurrent_at_upgrade, supported_features
from forensics.rules.isolation import ROW_TRACKING_DOMAIN
from forensics.rules.results import CheckOutcome
from forensics.rules.state import CheckState
from forensics.rules.writer_conf import ENFORCE_FEATURE_ENABLEMENT

BACKFILL, UNBACKFILL = ROW_TRACKING_BACKFILL, ROW_TRACKING_UNBACKFILL
UNBACKFILL_ERROR = "DELTA_ROW_TRACKING_BACKFILL_RUNNING_CONCURRENTLY_WITH_UNBACKFILL"


def _ok(name: str, w: WinningCommit, reason: str, **kw) -> CheckOutcome:
    return CheckOutcome(name, "passed", reason, winner_version=w.version, **kw)


def _fail(name: str, w: WinningCommit, exc: str, reason: str, **kw) -> CheckOutcome:
    return CheckOutcome(name, "failed", reason, exception=exc, winner_version=w.version, **kw)


def _features(p: Protocol) -> set[str]:
    return set(p.reader_features or ()) | set(p.writer_features or ())


def check_protocol(st: CheckState, w: WinningCommit) -> CheckOutcome:
    name, p, txn = "protocol", w.protocol, st.txn
    if p is None:
        return _ok(name, w, f"winner v{w.version} has no protocol action")
    eng = st.profile.engine
    if eng == "kernel":  # conflict-rules §10: any winning Protocol
        return _fail(name, w, "ProtocolChangedException", f"winner v{w.version} changed the protocol (Kernel aborts on any)")
    if eng == "delta-rs":  # conflict-rules §9.2, §9.4
        cur = txn.read_protocol
        # up to python-v1.6.3 the writer version is compared the wrong way round (delta-rs #3665);
        # deltalake 1.6.6 aborts on any raised reader or writer version
        raised_writer = (cur.min_writer_version < p.min_writer_version if st.profile.rs_at_least(1, 6, 6)
                         else p.min_writer_version < cur.min_writer_version) if cur is not None else False
        if cur is not None and (cur.min_reader_version < p.min_reader_version or raised_writer):
            detail = (f"required read/write {p.min_reader_version}/{p.min_writer_version}, "
                      f"current read/write {cur.min_reader_version}/{cur.min_writer_version}")
            return _fail(name, w, "ProtocolChangedException", f"winner v{w.version}: {detail}", detail=detail)
        if txn.write.protocol is not None:
            return _fail(name, w, "ProtocolChangedException", "both this transaction and the winner change the protocol")
        return _ok(name, w, f"winner v{w.version} protocol compatible (versions only; features not compared)")
    # delta-spark / Databricks, conflict-rules §5.1
    st.protocol = p
    if txn.write.protocol is not None:
        extra = " (both created the table)" if w.version == 0 else ""
        return _fail(name, w, "ProtocolChangedException",
                     f"both this transaction and winner v{w.version} carry a Protocol action{extra}")
    read = txn.read_protocol
    if read is not None:
        dropped = sorted(_features(read) - _features(p))
        lowered = p.min_reader_version < read.min_reader_version or p.min_writer_version < read.min_writer_version
        if dropped or lowered:
            what = f"drops table feature(s) {', '.join(dropped)}" if dropped else "lowers the protocol versions"
            return _fail(name, w, "ProtocolChangedException", f"winner v{w.version} {what}")
    else:
        st.inferred.append("read protocol unknown: a feature drop by a winner could not be ruled out")
    if st.profile.enforces_feature_enablement:
        return _check_feature_enablement(st, w, p, read)
    return _ok(name, w, f"winner v{w.version} protocol adopted (no drop, this transaction has no Protocol action)")


def _check_feature_enablement(st: CheckState, w: WinningCommit, p: Protocol, read: Protocol | None) -> CheckOutcome:
    """conflict-rules §14.2 (§5.1 step 4): with the writer setting on (v4.2+), a winner that adds a feature
    marked failConcurrentTransactionsAtUpgrade aborts the transaction."""
    name, prof = "protocol", st.profile
    if read is None:
        st.inferred.append("read protocol unknown: whether the winner added a table feature could not be decided")
        return _ok(name, w, f"winner v{w.version} protocol adopted; the features it adds are unknown")
    release = prof.release if prof.engine == "delta-spark" else (4, 4)  # Databricks: newest OSS list [inferred]
    if prof.engine == "databricks":
        st.inferred.append("Databricks: failConcurrentTransactionsAtUpgrade taken from delta-spark 4.4 [inferred]")
    added = sorted(supported_features(p) - supported_features(read))
    failing = [f for f in added if fails_concurrent_at_upgrade(f, release)]
    if failing:
        return _fail(name, w, "ProtocolChangedException",
                     f"winner v{w.version} adds table feature(s) {', '.join(failing)}, marked "
                     f"failConcurrentTransactionsAtUpgrade, and this transaction aborts because the writer ran with "
                     f"{ENFORCE_FEATURE_ENABLEMENT}=true")
    return _ok(name, w, f"winner v{w.version} protocol adopted; " + (
        f"the feature(s) it adds ({', '.join(added)}) are not marked failConcurrentTransactionsAtUpgrade"
        if added else "it adds no table feature"))


def check_metadata(st: CheckState, w: WinningCommit) -> CheckOutcome:
    name = "metadata"
    if w.metadata is None:
        return _ok(name, w, f"winner v{w.version} has no metadata action")
    mode = st.profile.metadata_mode
    exc = "MetadataChangedException"
    if mode in ("any", "delta-rs", "kernel"):
        return _fail(name, w, exc, f"winner v{w.version} changed metadata (any winning Metadata aborts in {st.profile.name})")
    if mode == "tolerant":
        ok, why = md.tolerate_33(st.metadata_changed, w)
        if ok and md.is_rt_enablement_only(w):
            st.metadata = w.metadata
        return _ok(name, w, why) if ok else _fail(name, w, exc, why)
    ok, why = md.resolve_41(st.metadata_changed, st.metadata, w, st.protocol, st.profile.release)  # T.metadata, possibly adopted
    if ok:
        if not md.is_identity_only(w):
            st.metadata = w.metadata  # conflict-rules §5.2.6: T.metadata := w.metadata
        return _ok(name, w, why)
    return _fail(name, w, exc, why)


def check_domain_metadata(st: CheckState, w: WinningCommit) -> CheckOutcome:
    """conflict-rules §5.3 / §10: a domain both write aborts, except row tracking (high-water mark reassigned)."""
    name = "domainMetadata"
    if not st.profile.checks_domain_metadata:
        return CheckOutcome(name, "skipped", "no domain-metadata check before v3.0", winner_version=w.version)
    both = sorted(set(st.txn.write.domains) & set(w.domains))
    clash = [d for d in both if d != ROW_TRACKING_DOMAIN]
    if clash:
        return _fail(name, w, "ConcurrentTransactionException",
                     f"winner v{w.version} also wrote metadata domain {clash[0]}", file=None, domain=clash[0])
    if both:
        return _ok(name, w, "both wrote delta.rowTracking; exempt, high-water mark reassigned")
    return _ok(name, w, "no common metadata domain")


def check_app_ids(st: CheckState, w: WinningCommit) -> CheckOutcome:
    name, txn = "appIds", st.txn
    eng = st.profile.engine
    if eng == "kernel":  # conflict-rules §10: version-aware
        mine = dict(txn.write.app_txns)
        for app in txn.read.app_ids:
            mine.setdefault(app, -1)
        hits = sorted(a for a, v in w.app_txns.items() if a in mine and v >= mine[a])
        if hits:
            return _fail(name, w, "ConcurrentTransactionException",
                         f"winner v{w.version} committed appId {hits[0]} at version {w.app_txns[hits[0]]} >= ours")
        return _ok(name, w, "no appId committed at a version >= ours")
    # delta-rs: the transaction's OWN txn actions; Spark: the appIds it read (conflict-rules §4.4, §9)
    mine = set(txn.write.app_txns) if eng == "delta-rs" else set(txn.read.app_ids)
    hits = sorted(mine & set(w.app_txns))
    if hits:
        return _fail(name, w, "ConcurrentTransactionException",
                     f"winner v{w.version} committed appId {hits[0]} that this transaction depends on")
    return _ok(name, w, "no common appId" if w.app_txns else f"winner v{w.version} has no txn action")


def check_backfill(st: CheckState, w: WinningCommit) -> CheckOutcome:
    """conflict-rules §5.5 (v3.3+): a backfill drops paths the winner added/removed; a winning backfill's
    baseRowIds are copied into our re-added/removed files."""
    name = "rowTrackingBackfill"
    if not st.profile.at_least(3, 3):
        return CheckOutcome(name, "skipped", "no backfill resolution before v3.3", winner_version=w.version)
    if (st.txn.operation or "") == BACKFILL:
        touched = {f.path for f in (*w.adds, *w.removes)}
        dropped = sorted({f.path for f in st.adds if f.path in touched} | {f.path for f in (st.read_files or []) if f.path in touched})
        st.adds = [f for f in st.adds if f.path not in touched]
        st.removes = [f for f in st.removes if f.path not in touched]
        if st.read_files is not None:
            st.read_files = [f for f in st.read_files if f.path not in touched]
        return _ok(name, w, f"backfill dropped {len(dropped)} path(s) touched by winner v{w.version}"
                   + (f" (e.g. {dropped[0]})" if dropped else ""))
    if (w.operation or "") == BACKFILL:
        return _ok(name, w, f"winner v{w.version} is a backfill; its baseRowId/defaultRowCommitVersion copied")
    return _ok(name, w, "neither side is a row-tracking backfill")


def check_unbackfill(st: CheckState, w: WinningCommit) -> CheckOutcome:
    name = "rowTrackingUnbackfill"
    if (st.txn.operation or "") == UNBACKFILL and (w.operation or "") == BACKFILL:
        return _fail(name, w, "DeltaIllegalStateException",
                     f"winner v{w.version} is a row-tracking backfill running concurrently with this unbackfill",
                     error_class=UNBACKFILL_ERROR)
    return _ok(name, w, "no backfill/unbackfill clash")


def check_rebase_noop(name: str):
    """Rebase steps that never throw a concurrency exception (conflict-rules §5.5, §5.9): recorded for completeness."""
    reasons = {
        "rowIds": "row IDs of new files reassigned above the winner's high-water mark if needed",
        "rowCommitVersions": "default row commit versions equal to the winner's moved to the next version",
        "typeWidening": "type-widening version metadata bumped if needed",
        "ict": "in-commit timestamp raised above the winner's if ICT is enabled",
    }

    def run(st: CheckState, w: WinningCommit) -> CheckOutcome:
        return _ok(name, w, f"rebase only: {reasons[name]}")

    return run
