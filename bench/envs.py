"""Environments for racing other delta-spark releases than the dev extra's (bench/envs/<name>.txt).

Each is a virtual environment under .cache/envs/<name> holding that release's pyspark and
delta-spark, the tool installed from this checkout without its own dependency pins (it asks for
delta-spark>=3.2 by default) and the rest of its dependencies, plus the release's Delta jars
fetched with the machine's Maven client (scripts/jvm/pom.xml) into .cache/jars. It prints the
command that runs the race harness there:

    python bench/envs.py delta-3.1
    DELTA_FORENSICS_DELTA_JARS=... .cache/envs/delta-3.1/bin/python bench/differential_spark.py --scenarios N --seed S
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _pin(requirements: Path, name: str) -> str:
    m = re.search(rf"^{re.escape(name)}==(\S+)", requirements.read_text(), re.M)
    if not m:
        raise SystemExit(f"{requirements} pins no {name}")
    return m.group(1)


def _run(cmd: list[str]) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def build(name: str) -> tuple[Path, Path]:
    """(the environment's python, the directory of its Delta jars), built once."""
    req = REPO / "bench" / "envs" / f"{name}.txt"
    if not req.is_file():
        raise SystemExit(f"no {req}")
    env = REPO / ".cache" / "envs" / name
    py = env / "bin" / "python"
    if not py.exists():
        _run([sys.executable, "-m", "venv", str(env)])
        _run([str(py), "-m", "pip", "install", "-q", "-r", str(req)])
        _run([str(py), "-m", "pip", "install", "-q", "--no-deps", "-e", str(REPO)])
    spark, delta = _pin(req, "pyspark"), _pin(req, "delta-spark")
    scala = "2.12" if spark.startswith("3.") else "2.13"
    artifact = f"delta-spark_{scala}" if spark.startswith("3.") else f"delta-spark_{'.'.join(spark.split('.')[:2])}_{scala}"
    jars = REPO / ".cache" / "jars" / f"{artifact}-{delta}"
    if not (jars / f"{artifact}-{delta}.jar").is_file():
        _run(["mvn", "-q", "-f", str(REPO / "scripts" / "jvm" / "pom.xml"), "dependency:copy-dependencies",
              f"-Ddelta.artifact={artifact}", f"-Ddelta.version={delta}", f"-DoutputDirectory={jars}"])
    return py, jars


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name", help="bench/envs/<name>.txt")
    a = ap.parse_args()
    py, jars = build(a.name)
    print(f"DELTA_FORENSICS_DELTA_JARS={jars} {py} bench/differential_spark.py --scenarios N --seed S")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
