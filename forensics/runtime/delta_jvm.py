"""Delta's JVM side (delta-spark's jars) for the tool's own local Spark session.

The rules model delta-spark from its source; with delta-spark's own classes on the classpath the
session can also open a table the way delta-spark does (`DeltaLog.forTable`), which the live
cross-checks use. The jars are found the way delta-spark's users find them: the installed
delta-spark Python package names its Maven coordinate (`delta.pip_utils.configure_spark_with_delta_pip`),
and Spark resolves it through `spark.jars.packages`, honouring the user's own
`spark.jars.ivySettings` / `spark.jars.repositories` / `spark.jars.ivy`, once, into the user's
Ivy cache; later starts use the jars Ivy left there as `spark.jars` and ask no repository.
`DELTA_FORENSICS_DELTA_JARS=DIR` uses jars already fetched into DIR instead (tests and CI fetch them
with Maven, scripts/jvm/pom.xml); `DELTA_FORENSICS_DELTA_PACKAGE` names another coordinate;
`DELTA_FORENSICS_DELTA=off` turns it all off.

Where Delta's side cannot be had (no delta-spark package, no network, a coordinate no repository
holds, a locked-down machine) the session starts without it, as before, and one line says so; a
coordinate that could not be resolved is not asked for again for a day.
A caller's session (`Table(spark=...)`), a cluster (`--master`) and Spark Connect keep their own jars.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
IVY_SETTINGS = ("spark.jars.packages", "spark.jars.ivySettings", "spark.jars.repositories", "spark.jars.ivy")
RETRY_AFTER_S = 24 * 3600  # a coordinate that could not be resolved is not asked for again before this
_said: set[str] = set()  # each "could not use" line is printed once per process


@dataclass(frozen=True)
class DeltaJvmPlan:
    """What this session start adds for Delta, and why (or why not)."""

    coordinate: str | None  # io.delta:delta-spark_<spark>_<scala>:<version>, as delta-spark names it
    settings: dict[str, str] = field(default_factory=dict)  # Spark settings to add at start ({}: none)
    reason: str = ""  # why nothing is added (empty when settings are)

    @property
    def active(self) -> bool:
        return bool(self.settings)


def delta_coordinate() -> str | None:
    """The Maven coordinate the installed delta-spark Python package asks for (None: not installed).
    Asked of delta-spark itself, so the naming (Spark and Scala suffixes) follows its release."""
    try:
        from pyspark.sql import SparkSession
        from delta.pip_utils import configure_spark_with_delta_pip
    except ImportError:
        return None
    try:
        builder = configure_spark_with_delta_pip(SparkSession.Builder())
        packages = str(builder._options.get("spark.jars.packages", ""))  # noqa: SLF001 - the one place it is stated
    except Exception:  # noqa: BLE001 - e.g. delta-spark installed without its metadata
        return None
    return next((p for p in packages.split(",") if p.startswith("io.delta:")), None)


def _jar_name(coordinate: str) -> str:
    _, artifact, version = coordinate.split(":")[:3]
    return f"{artifact}-{version}.jar"


def _jars_in(directory: Path) -> list[str]:
    return sorted(str(p) for p in directory.glob("*.jar")) if directory.is_dir() else []


def plan(master: str | None, conf: dict[str, str] | None) -> DeltaJvmPlan:
    """The Delta settings for a local session started by the tool; the user's settings win."""
    conf = conf or {}
    if os.environ.get("DELTA_FORENSICS_DELTA", "").lower() in ("0", "off", "false", "no"):
        return DeltaJvmPlan(None, reason="DELTA_FORENSICS_DELTA=off")
    if master and not master.startswith("local"):
        return DeltaJvmPlan(None, reason="a cluster keeps its own jars")
    coordinate = os.environ.get("DELTA_FORENSICS_DELTA_PACKAGE") or delta_coordinate()
    if coordinate is None:
        return DeltaJvmPlan(None, reason="the delta-spark Python package is not installed")
    settings: dict[str, str] = {}
    jar_dir = os.environ.get("DELTA_FORENSICS_DELTA_JARS")
    own_ivy = any(k in conf for k in IVY_SETTINGS)  # the user's Ivy setup: always asked afresh
    resolved = None if jar_dir or own_ivy else _resolved_before(coordinate)
    if not (jar_dir or own_ivy or resolved) and _failed_recently(coordinate):
        return DeltaJvmPlan(coordinate, reason=f"it could not be resolved the last time; it is tried again after a day, "
                                               f"or once {_record(coordinate, 'failed')} is removed")
    if resolved:
        settings["spark.jars"] = ",".join([*filter(None, conf.get("spark.jars", "").split(",")), *resolved])
    elif jar_dir:
        jars = _jars_in(Path(jar_dir))
        if not any(Path(j).name == _jar_name(coordinate) for j in jars):
            return DeltaJvmPlan(coordinate, reason=f"{_jar_name(coordinate)} is not in DELTA_FORENSICS_DELTA_JARS={jar_dir}")
        settings["spark.jars"] = ",".join([*filter(None, conf.get("spark.jars", "").split(",")), *jars])
    else:
        packages = [p for p in conf.get("spark.jars.packages", "").split(",") if p]
        if not any(p.startswith("io.delta:delta-spark") for p in packages):  # the user's own Delta wins
            packages.insert(0, coordinate)
        settings["spark.jars.packages"] = ",".join(packages)
    extensions = [e for e in conf.get("spark.sql.extensions", "").split(",") if e]
    settings["spark.sql.extensions"] = ",".join(extensions if EXTENSION in extensions else [*extensions, EXTENSION])
    settings["spark.sql.catalog.spark_catalog"] = conf.get("spark.sql.catalog.spark_catalog", CATALOG)
    return DeltaJvmPlan(coordinate, settings)


def _record(coordinate: str, kind: str) -> Path:
    """Where this machine remembers what Ivy resolved for `coordinate` (the user's cache, not a table's)."""
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("delta-forensics")) / "delta-jvm" / f"{coordinate.replace(':', '_')}.{kind}"


def _resolved_before(coordinate: str) -> list[str] | None:
    """The jars Ivy resolved for `coordinate` last time, when all are still in its cache: the next
    start uses them as `spark.jars` and asks no repository (resolved once)."""
    try:
        jars = [j for j in _record(coordinate, "jars").read_text(encoding="utf-8").split("\n") if j]
    except OSError:
        return None
    return jars if jars and all(Path(j.removeprefix("file:")).is_file() for j in jars) else None


def _failed_recently(coordinate: str) -> bool:
    try:
        return time.time() - _record(coordinate, "failed").stat().st_mtime < RETRY_AFTER_S
    except OSError:
        return False


def remember(delta: DeltaJvmPlan, spark: object, ok: bool) -> None:
    """After a start that asked Ivy: keep the jars it resolved (spark-submit lists them in
    `spark.jars`), or that it could not resolve them. Best effort: a read-only cache only costs time."""
    if not delta.coordinate or "spark.jars.packages" not in delta.settings:
        return
    try:
        jars_file, failed = _record(delta.coordinate, "jars"), _record(delta.coordinate, "failed")
        jars_file.parent.mkdir(parents=True, exist_ok=True)
        if not ok:
            failed.touch()
            return
        failed.unlink(missing_ok=True)
        listed = spark.sparkContext.getConf().get("spark.jars", "")  # type: ignore[attr-defined]
        ours = [j for j in listed.split(",") if j and "/jars/" in j and Path(j.removeprefix("file:")).is_file()]
        if any(Path(j).name.startswith(delta.coordinate.split(":")[0] + "_" + delta.coordinate.split(":")[1]) for j in ours):
            jars_file.write_text("\n".join(ours) + "\n", encoding="utf-8")
    except Exception:  # noqa: BLE001 - remembering is an optimisation
        pass


def say_once(what: str, why: str) -> None:
    """One line on stderr, once per process: the tool goes on without Delta's JVM side."""
    if what in _said:
        return
    _said.add(what)
    print(f"delta-forensics: Delta's JVM side ({what}) could not be used ({why}); "
          "continuing without it (the rules do not need it)", file=sys.stderr)


def loaded(spark: object) -> bool:
    """Whether delta-spark's classes are on this session's classpath."""
    try:
        jvm = spark._jvm  # type: ignore[attr-defined]  # noqa: SLF001
        loader = jvm.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName("org.apache.spark.sql.delta.DeltaLog", False, loader)
        return True
    except Exception:  # noqa: BLE001 - Connect sessions have no _jvm; absent classes raise
        return False


def main() -> int:
    """`python -m forensics.runtime.delta_jvm`: print the coordinate (for `make jars`); exit 1 without one."""
    coordinate = delta_coordinate()
    if coordinate is None:
        print("delta-forensics: the delta-spark Python package is not installed", file=sys.stderr)
        return 1
    print(coordinate)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
