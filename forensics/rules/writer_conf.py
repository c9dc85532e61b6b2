"""Session settings of the writer being modelled (`--writer-conf KEY=VALUE`, conflict-rules §14).

A few Spark session settings change delta-spark's conflict rules. They belong to the writer
whose commit is replayed, not to this tool's own Spark session (`--conf`), and the log does
not record them, so the user states them. Each modelled key says from which release it exists
and what it changes; any other key is kept and reported as not modelled, never dropped silently.

The Table states them for the duration of a question (`writer_settings`); the profiles chosen
meanwhile carry them (`Profile.writer`), so the checks read them from the profile they run.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

# conflict-rules §14.2: DeltaSQLConf.DELTA_CONFLICT_CHECKER_ENFORCE_FEATURE_ENABLEMENT_VALIDATION (v4.2.0+)
ENFORCE_FEATURE_ENABLEMENT = "spark.databricks.delta.conflictChecker.enforceConcurrentFeatureEnablement.enabled"
# conflict-rules §14.3: DeltaSQLConf.DELTA_CONFLICT_DETECTION_WIDEN_NONDETERMINISTIC_PREDICATES (v3.2.0+)
WIDEN_NONDETERMINISTIC = ("spark.databricks.delta.conflictDetection.partitionLevelConcurrency."
                          "widenNonDeterministicPredicates")
# conflict-rules §14.4: DeltaConfigs.sqlConfPrefix + "isolationLevel" (the table default for new tables)
DEFAULT_ISOLATION = "spark.databricks.delta.properties.defaults.isolationLevel"

MODELLED = (ENFORCE_FEATURE_ENABLEMENT, WIDEN_NONDETERMINISTIC, DEFAULT_ISOLATION)
WIDENING_MODES = ("off", "logging", "on")


def spark_boolean(key: str, value: str) -> bool:
    """A boolean setting as Spark reads it: surrounding blanks ignored, `true`/`false` in any case."""
    v = value.strip().lower()
    if v not in ("true", "false"):
        raise ValueError(f"{key} takes true or false, not {value!r}")
    return v == "true"


@dataclass(frozen=True)
class WriterConf:
    """The writer's settings as given (in order) and the modelled ones parsed as Spark would."""

    settings: tuple[tuple[str, str], ...] = ()
    enforce_feature_enablement: bool | None = None
    widen_nondeterministic: str | None = None  # off | logging | on (lower-cased, as Spark does)
    default_isolation: str | None = None

    @classmethod
    def parse(cls, given: Mapping[str, str] | None) -> "WriterConf":
        """Raises ValueError, in one line, for a value the writer's Spark would have refused."""
        pairs = tuple((str(k), str(v)) for k, v in (given or {}).items())
        d = dict(pairs)
        enforce = spark_boolean(ENFORCE_FEATURE_ENABLEMENT, d[ENFORCE_FEATURE_ENABLEMENT]) \
            if ENFORCE_FEATURE_ENABLEMENT in d else None
        widen = d.get(WIDEN_NONDETERMINISTIC)
        if widen is not None:
            widen = widen.lower()  # the conf lower-cases its value, then checks it against the three modes
            if widen not in WIDENING_MODES:
                raise ValueError(f"{WIDEN_NONDETERMINISTIC} takes one of {', '.join(WIDENING_MODES)}, not {d[WIDEN_NONDETERMINISTIC]!r}")
        return cls(pairs, enforce, widen, d.get(DEFAULT_ISOLATION))

    def __bool__(self) -> bool:
        return bool(self.settings)

    @property
    def not_modelled(self) -> tuple[str, ...]:
        """The writer settings given that no replayed rule reads."""
        return tuple(k for k, _ in self.settings if k not in MODELLED)

    def not_modelled_notes(self) -> list[str]:
        """One note per setting that changes nothing here (the CLI prints them)."""
        return [f"writer setting {k} is not modelled: no conflict rule delta-forensics replays reads it, so "
                "verdicts are as if it were unset" for k in self.not_modelled]

    def effects(self, engine: str, release: tuple[int, int]) -> list[str]:
        """One line per given setting: what it does to the rules of this engine and release."""
        out: list[str] = []
        rel = f"{release[0]}.{release[1]}"
        spark = engine in ("delta-spark", "databricks")
        parsed = {ENFORCE_FEATURE_ENABLEMENT: str(self.enforce_feature_enablement).lower(),
                  WIDEN_NONDETERMINISTIC: self.widen_nondeterministic}
        for key, raw in self.settings:
            if key not in MODELLED:
                continue
            said = f"writer setting {key}={parsed.get(key, raw)}"
            if not spark:
                out.append(f"{said}: no effect, {engine} does not read Spark session settings")
            elif key == ENFORCE_FEATURE_ENABLEMENT:
                out.append(_enforce_effect(said, bool(self.enforce_feature_enablement), engine, release, rel))
            elif key == WIDEN_NONDETERMINISTIC:
                out.append(_widen_effect(said, self.widen_nondeterministic or "on", engine, release, rel))
            else:
                out.append(_isolation_effect(said, raw, engine, release, rel))
        return out + self.not_modelled_notes()

    def to_dict(self) -> dict[str, Any]:
        """The settings and which of them are not modelled, as JSON."""
        return {"settings": dict(self.settings), "not_modelled": list(self.not_modelled)}


def _enforce_effect(said: str, on: bool, engine: str, release: tuple[int, int], rel: str) -> str:
    if engine == "delta-spark" and release < (4, 2):
        return f"{said}: no effect on delta-spark {rel}, the setting exists from 4.2.0 (conflict-rules §14.2)"
    inferred = " [inferred: Databricks modelled as delta-spark 4.4]" if engine == "databricks" else ""
    if on:
        return (f"{said}: a winner that adds a table feature marked failConcurrentTransactionsAtUpgrade aborts "
                f"the transaction (conflict-rules §14.2){inferred}")
    return f"{said}: the default, winners that add table features are not checked for it{inferred}"


def _widen_effect(said: str, mode: str, engine: str, release: tuple[int, int], rel: str) -> str:
    if release < (3, 2) and engine == "delta-spark":
        return (f"{said}: no effect on delta-spark {rel}, the setting exists from 3.2.0; this release evaluates "
                "non-deterministic read predicates as written (conflict-rules §14.3)")
    if mode == "on":
        return f"{said}: the default, non-deterministic parts of read predicates are widened to TRUE (conflict-rules §14.3)"
    how = " (the widened result is only logged)" if mode == "logging" else ""
    return (f"{said}: read predicates are evaluated as written{how}, so a non-deterministic part (rand(), a UDF, "
            "a subquery) decides at commit time (conflict-rules §14.3)")


def _isolation_effect(said: str, raw: str, engine: str, release: tuple[int, int], rel: str) -> str:
    if engine == "delta-spark" and release < (2, 1):
        return (f"{said}: no effect on delta-spark {rel}, which has no delta.isolationLevel property (from 2.1.0); "
                "its transactions run Serializable or SnapshotIsolation (conflict-rules §14.4)")
    refused = ("; delta-spark refuses any value but Serializable when it creates a table"
               if engine == "delta-spark" and raw.strip() != "Serializable" else "")
    inferred = " [inferred: as in delta-spark]" if engine == "databricks" else ""
    return (f"{said}: no effect on a transaction against an existing table, whose level comes from its own "
            f"delta.isolationLevel or the engine default; the setting only seeds that property in tables this "
            f"writer creates (conflict-rules §14.4){refused}{inferred}")


NO_WRITER_CONF = WriterConf()
_ACTIVE: ContextVar[WriterConf] = ContextVar("delta_forensics_writer_conf", default=NO_WRITER_CONF)


def active_writer_conf() -> WriterConf:
    """The writer settings stated for the question being answered (none outside a Table question)."""
    return _ACTIVE.get()


@contextmanager
def writer_settings(conf: WriterConf) -> Iterator[None]:
    """State the writer's settings for every rule profile chosen inside the block (this thread only)."""
    token = _ACTIVE.set(conf)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
