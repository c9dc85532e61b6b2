"""Rule profiles: which engine and release band a replay models, and how it differs.

One `Profile` per engine/release band (conflict-rules §5.10 order table, §9 delta-rs, §10 Kernel,
§11 Databricks). A profile is plain data; `forensics.rules.checks` reads it. Within a band,
`release` pins the modelled release so the small per-release quirks the spec names
(pre-3.1 append check, v1.0-1.1 WriteSerializable, 3.3 identity tolerance, 4.4 message
table name) can be replayed exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from forensics.model import delta_release
from forensics.rules.writer_conf import NO_WRITER_CONF, WIDEN_NONDETERMINISTIC, WriterConf, active_writer_conf

Engine = Literal["delta-spark", "databricks", "delta-rs", "kernel"]
MessageStyle = Literal["plain", "error_class", "subclassed", "delta-rs", "kernel"]

OSS_DOCS = "https://docs.delta.io/latest/concurrency-control.html"  # conflict-rules §7
DATABRICKS_DOCS = "https://docs.databricks.com/delta/concurrency-control.html"  # conflict-rules §7 [observed]


@dataclass(frozen=True)
class Profile:
    name: str
    engine: Engine
    band: str  # human description of the modelled releases
    release: tuple[int, int]  # modelled release within the band (major, minor)
    order: tuple[str, ...]  # checks per winning commit, in order
    default_isolation: str  # table default when delta.isolationLevel is unset (conflict-rules §2)
    exact: bool  # rules read from this engine's source (True) or inferred (Databricks)
    docs_link: str
    message_style: MessageStyle
    row_level_concurrency: bool = False  # Databricks RLC on eligible tables (conflict-rules §11)
    notes: str = ""
    runtime: tuple[int, int] | None = None  # Databricks Runtime modelled (None: not known from the log)
    rs_release: tuple[int, int, int] | None = None  # deltalake (Python) release modelled; None: the newest observed
    writer: WriterConf = NO_WRITER_CONF  # the writer's session settings (conflict-rules §14)

    # ---- per-release quirks (conflict-rules §5.6, §5.2, §5.10, §7) -------------------------------

    def at_least(self, major: int, minor: int) -> bool:
        return self.release >= (major, minor)

    @property
    def spark_like(self) -> bool:
        return self.engine in ("delta-spark", "databricks")

    @property
    def reads_the_snapshot(self) -> bool:
        """delta-rs derives a transaction's read files from the files active at its read version
        (conflict-rules §9); the others' come from the predicates their commits record (forensics/sets).
        Only for delta-rs are those files worth listing."""
        return self.engine == "delta-rs"

    @property
    def append_shortcuts(self) -> bool:
        """§5.6 steps a/b (blind-append and unpartitioned shortcuts) exist from v3.1."""
        return self.spark_like and self.at_least(3, 1)

    @property
    def ws_counts_blind_when_metadata_changed(self) -> bool:
        """§5.6.1: v1.0-1.1 WriteSerializable always excluded blind appends (fixed in 1.2)."""
        return not self.spark_like or self.at_least(1, 2)

    @property
    def metadata_mode(self) -> str:
        """§5.2: 'any' (v1-3.2), 'tolerant' (3.3-4.0), 'allow_list' (4.1+), delta-rs, kernel."""
        if self.engine == "delta-rs":
            return "delta-rs"
        if self.engine == "kernel":
            return "kernel"
        if self.engine == "delta-spark" and self.at_least(4, 1):
            return "allow_list"
        if self.at_least(3, 3):
            return "tolerant"
        return "any"

    @property
    def checks_domain_metadata(self) -> bool:
        return self.engine == "kernel" or (self.spark_like and self.at_least(3, 0))

    @property
    def enforces_feature_enablement(self) -> bool:
        """§14.2: protocol check step 4, only with the writer setting on, from v4.2 (Databricks: inferred)."""
        return bool(self.writer.enforce_feature_enablement) and (
            self.engine == "databricks" or (self.engine == "delta-spark" and self.at_least(4, 2)))

    @property
    def widens_nondeterministic(self) -> bool:
        """§5.6.2 d / §14.3: non-deterministic read predicates widened to TRUE, from v3.2 unless switched off."""
        return self.spark_like and self.at_least(3, 2) and self.writer.widen_nondeterministic in (None, "on")

    def why_not_widened(self) -> str:
        """Why non-deterministic read predicates are evaluated as written (§14.3), for a verdict's why."""
        if not self.at_least(3, 2):
            return f"delta-spark {self.release[0]}.{self.release[1]} never widens them (widening exists from 3.2.0)"
        return f"the writer ran with {WIDEN_NONDETERMINISTIC}={self.writer.widen_nondeterministic}"

    def writer_notes(self) -> list[str]:
        """What each of the writer's stated settings does under this profile (conflict-rules §14)."""
        return self.writer.effects(self.engine, self.release)

    @property
    def metadata_message_names_table(self) -> bool:
        """§7.3: DELTA_METADATA_CHANGED names the table from v4.4."""
        return self.engine == "delta-spark" and self.at_least(4, 4)

    @property
    def concurrent_write_has_trailer(self) -> bool:
        """§7.2: DELTA_CONCURRENT_WRITE has no <conflictingCommit> in v3.2-3.3."""
        return self.message_style == "plain" or self.at_least(4, 0)

    def rs_at_least(self, *version: int) -> bool:
        """delta-rs: is the modelled deltalake release at least `version`? Unknown counts as newest."""
        return self.rs_release is None or self.rs_release >= version

    @property
    def rs_delete_read_counts_compaction(self) -> bool:
        """conflict-rules §9.4: before python-v1.3.0 delete-read counted dataChange=false removes too."""
        return self.engine == "delta-rs" and not self.rs_at_least(1, 3, 0)

    @property
    def rs_delete_delete_counts_compaction(self) -> bool:
        """conflict-rules §9.4: source up to python-v1.6.3 counts dataChange=false removes in delete-delete;
        deltalake 1.6.6 was observed not to (two compactions of the same files both commit)."""
        return self.engine == "delta-rs" and not self.rs_at_least(1, 6, 6)

    def runtime_at_least(self, major: int, minor: int) -> bool:
        """Databricks: is the modelled runtime at least major.minor? An unknown runtime counts as current."""
        return self.runtime is None or self.runtime >= (major, minor)

    def describe(self) -> str:
        kind = "exact (read from source)" if self.exact else "inferred (source not public)"
        if self.engine == "databricks":
            rel = f"; runtime {self.runtime[0]}.{self.runtime[1]}" if self.runtime else "; runtime unknown"
        elif self.engine == "delta-rs":
            rel = "; deltalake " + (".".join(map(str, self.rs_release)) if self.rs_release else "1.6.6 (newest observed)")
        else:
            rel = f"; modelled release {self.release[0]}.{self.release[1]}" if self.spark_like else ""
        return f"{self.name} [{self.band}{rel}; {kind}]"


_SPARK_OLD_ORDER = ("protocol", "metadata", "appends", "deleteRead", "deleteDelete", "appIds", "rowIds", "domainMetadata")
_SPARK_32_ORDER = (
    "protocol", "metadata", "domainMetadata", "appIds", "rowTrackingBackfill", "rowIds",
    "rowCommitVersions", "typeWidening", "appends", "deleteRead", "deleteDelete", "ict",
)
_SPARK_41_ORDER = (
    "protocol", "metadata", "domainMetadata", "appIds", "rowTrackingBackfill", "rowTrackingUnbackfill",
    "rowIds", "rowCommitVersions", "typeWidening", "appends", "deleteRead", "deleteDelete", "ict",
)
_DELTA_RS_ORDER = ("protocol", "metadata", "appends", "deleteRead", "deleteDelete", "appIds")  # conflict-rules §9
_KERNEL_ORDER = ("protocol", "metadata", "appIds", "domainMetadata", "deleteDelete")  # conflict-rules §10

_BASE: dict[str, Profile] = {
    "delta-spark<=3.1": Profile(
        name="delta-spark<=3.1", engine="delta-spark", band="delta-spark v1.0-v3.1", release=(3, 1),
        order=_SPARK_OLD_ORDER, default_isolation="Serializable", exact=True, docs_link=OSS_DOCS,
        message_style="plain",
        notes="appIds checked last; plain messages with Conflicting-commit trailer (conflict-rules §7.1)",
    ),
    "delta-spark-3.2-4.0": Profile(
        name="delta-spark-3.2-4.0", engine="delta-spark", band="delta-spark v3.2-v4.0", release=(4, 0),
        order=_SPARK_32_ORDER, default_isolation="Serializable", exact=True, docs_link=OSS_DOCS,
        message_style="error_class",
        notes="error classes; appIds before file checks; checkNoMetadataUpdates (identity/row-tracking tolerance from 3.3)",
    ),
    "delta-spark-4.1+": Profile(
        name="delta-spark-4.1+", engine="delta-spark", band="delta-spark v4.1-HEAD", release=(4, 4),
        order=_SPARK_41_ORDER, default_isolation="Serializable", exact=True, docs_link=OSS_DOCS,
        message_style="subclassed",
        notes="attemptToResolveMetadataConflicts allow-list; sub-classed file-conflict messages naming the winner's version",
    ),
    "databricks": Profile(
        name="databricks", engine="databricks", band="Databricks Runtime (closed source)", release=(4, 0),
        order=_SPARK_32_ORDER, default_isolation="WriteSerializable", exact=False, docs_link=DATABRICKS_DOCS,
        message_style="error_class", row_level_concurrency=True,
        notes="modelled as delta-spark 3.3-4.0 rules + WriteSerializable default + row-level concurrency "
        "on unpartitioned DV tables ([doc], conflict-rules §11); every result is inferred",
    ),
    "delta-rs": Profile(
        name="delta-rs", engine="delta-rs", band="delta-rs (python-v1.0.0 .. 1.6.6)", release=(0, 0),
        order=_DELTA_RS_ORDER, default_isolation="Serializable", exact=True, docs_link="",
        message_style="delta-rs",
        notes="stats-based predicate matching; no predicate => reads every file; compaction removes ignored "
        "by delete-read; isolation downgrade tested on the winner's actions (conflict-rules §9, §2.2)",
    ),
    "kernel": Profile(
        name="kernel", engine="kernel", band="Delta Kernel Java (HEAD)", release=(0, 0),
        order=_KERNEL_ORDER, default_isolation="Serializable", exact=True, docs_link="",
        message_style="kernel",
        notes="only protocol, metadata, txn (version-aware), domain metadata, delete-delete (conflict-rules §10)",
    ),
}

PROFILES: tuple[str, ...] = tuple(_BASE)


def _spark_band_for(major: int, minor: int) -> str:
    if (major, minor) < (3, 2):
        return "delta-spark<=3.1"
    if (major, minor) < (4, 1):
        return "delta-spark-3.2-4.0"
    return "delta-spark-4.1+"


def _with_release(p: Profile, major: int, minor: int) -> Profile:
    return replace(p, release=(major, minor))


def _as_written(p: Profile) -> Profile:
    """The profile with the writer settings stated for the current question (conflict-rules §14)."""
    conf = active_writer_conf()
    return replace(p, writer=conf) if conf else p


def get_profile(name: str) -> Profile:
    """Profile by name (the `--rules` override); `name@X.Y` pins the modelled release (for
    `databricks@X.Y`, the Databricks Runtime)."""
    return _as_written(_named_profile(name))


def _named_profile(name: str) -> Profile:
    base, _, rel = name.strip().partition("@")
    if base not in _BASE:
        raise KeyError(f"unknown rule profile {base!r}; known: {', '.join(PROFILES)}")
    p = _BASE[base]
    if rel:
        m3 = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", rel)
        if m3 and p.engine == "delta-rs":
            return replace(p, rs_release=(int(m3.group(1)), int(m3.group(2)), int(m3.group(3))))
        m = re.fullmatch(r"(\d+)\.(\d+)", rel)
        if not m:
            raise KeyError(f"bad release {rel!r} (want MAJOR.MINOR, or MAJOR.MINOR.PATCH for delta-rs)")
        ver = (int(m.group(1)), int(m.group(2)))
        if p.engine == "databricks":
            p = replace(p, runtime=ver)
        elif p.engine == "delta-rs":
            p = replace(p, rs_release=(*ver, 0))
        else:
            p = _with_release(p, *ver)
    return p


_DBR = re.compile(r"Databricks-Runtime/(\d+)\.(\d+)")
_DELTALAKE_PY = re.compile(r"delta-rs:py-(\d+)\.(\d+)\.(\d+)")


def profile_for_engine_info(engine_info: str | None, commit_info_present: bool = True, *,
                            cluster_id: str | None = None) -> tuple[Profile | None, str]:
    """Pick the profile that models the writer named by commitInfo.engineInfo, and say why.

    The `why` says whether the choice is exact (release parsed from engineInfo, rules read
    from that engine's source) or inferred. None, with what is known, for a writer no profile
    models (Trino, Flink, Fabric, ...): a verdict for it would be a guess.
    """
    p, why = _profile_for_engine_info(engine_info, commit_info_present, cluster_id)
    return (_as_written(p) if p is not None else None), why


def _profile_for_engine_info(engine_info: str | None, commit_info_present: bool,
                             cluster_id: str | None) -> tuple[Profile | None, str]:
    if not commit_info_present:
        p = _with_release(_BASE["delta-spark<=3.1"], 1, 0)
        return p, ("inferred: the commit has no commitInfo (old or hand-built writer); "
                   "modelled as early delta-spark (v1.0 rules)")
    ei = (engine_info or "").strip()
    if (not ei or ei == "<unknown>") and cluster_id:
        return _BASE["databricks"], (f"inferred: no engineInfo, but a clusterId ({cluster_id!r}): a Databricks runtime "
                                     "too old to record engineInfo; the documented Databricks rules are used, "
                                     "runtime unknown")
    if not ei or ei == "<unknown>":
        p = _BASE["delta-spark-4.1+"]
        return p, (f"inferred: engineInfo is {'missing' if not ei else ei!r}; "
                   "modelled as current OSS delta-spark")
    m = _DBR.search(ei)
    if m or ei.startswith("Databricks-Runtime"):
        rel = f"DBR {m.group(1)}.{m.group(2)}" if m else "DBR (version unreadable)"
        p = replace(_BASE["databricks"], runtime=(int(m.group(1)), int(m.group(2))) if m else None)
        if m and int(m.group(1)) < 14:
            # [observed] corpus/errors 03 (DBR 13.3) prints plain messages; 12 (DBR 15.3) error classes
            p = replace(p, message_style="plain")
        return p, (f"inferred: engineInfo {ei!r} is {rel}; Databricks source is not public, so the "
                   "OSS rules plus the documented Databricks differences are used")
    rel = delta_release(ei)
    if rel:
        major, minor = rel
        p = _with_release(_BASE[_spark_band_for(major, minor)], major, minor)
        return p, f"exact: engineInfo {ei!r} names Delta Lake {major}.{minor}, rules of {p.band}"
    if ei.startswith("delta-rs"):
        m = _DELTALAKE_PY.search(ei)
        if m:
            ver = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
            how = "exact" if ver >= (1, 0, 0) else "inferred"
            older = "" if ver >= (1, 0, 0) else " (older than python-v1.0.0, the first release whose rules were read)"
            return replace(_BASE["delta-rs"], rs_release=ver), (
                f"{how}: engineInfo {ei!r} names deltalake {'.'.join(map(str, ver))}{older}; the delta-rs rules of that "
                "release (conflict-rules §9.4; 1.6.6 and later as observed)")
        return _BASE["delta-rs"], (f"inferred: engineInfo {ei!r} is delta-rs without a deltalake (Python) release; "
                                    "modelled as the newest observed (1.6.6)")
    if ei.startswith("Kernel-") or "Kernel" in ei.split("/")[0]:
        return _BASE["kernel"], (f"inferred: engineInfo {ei!r} is Delta Kernel; rules read at Kernel HEAD "
                                  "and this writer's release was not checked against them")
    if "Delta-Standalone" in ei:
        p = _with_release(_BASE["delta-spark<=3.1"], 1, 0)
        return p, (f"inferred: engineInfo {ei!r} is Delta Standalone, whose ConflictChecker follows "
                   "early delta-spark (v1.0 rules)")
    return None, (f"no model for this writer: engineInfo {ei!r} names none of the engines whose conflict rules "
                  "delta-forensics models (delta-spark, Databricks, delta-rs, Delta Kernel); pass --rules to "
                  "replay it with one of them")
