"""Conformance: scenarios from the engines' own test suites, replayed through our reader and rules.

Each scenario (the shipped set, or a file in our format: scenarios/README.md) is written to disk
as a real `_delta_log` (setup at version 0, the winning commits after it), read back with the
Spark reader, and the current transaction is checked against the winning commits *as read from
the log* with the profile of the scenario's engine. Outcomes compare by Delta class name.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from forensics.conformance.cases import (
    load_scenarios,
    materialize_scenario,
    outcome_agrees,
    scenario_inputs,
)
from forensics.log.delta_log import DeltaLog
from forensics.replay.windows import winning_commit
from forensics.rules import check_window


def run_conformance(cases_path: str | Path | None = None, *, spark_factory: Callable[[], Any] | None = None,
                    master: str | None = None, remote: str | None = None,
                    workdir: str | None = None) -> dict[str, Any]:
    """Replay every scenario of the shipped set (`cases_path` None) or of a scenario file/folder.

    Returns {"total", "agreed", "known_differences", "cases": [...]}; a case agrees when the
    checker's outcome matches the expected one and the log read back holds the stated winners.
    `spark_factory` (or `master`/`remote`) chooses the Spark session the reader uses.
    """
    scenarios = load_scenarios(cases_path)
    if spark_factory is None and (master or remote):
        def spark_factory() -> Any:
            from forensics.runtime.spark import get_spark

            return get_spark(master=master, remote=remote)
    results = []
    with tempfile.TemporaryDirectory(prefix="delta-forensics-conformance-", dir=workdir) as tmp:
        for i, s in enumerate(scenarios):
            results.append(_run_one(s, Path(tmp) / f"case-{i:03d}", spark_factory))
    return {"total": len(results), "agreed": sum(1 for r in results if r["agree"]),
            "known_differences": sum(1 for r in results if not r["agree"] and r.get("known_difference")),
            "cases": results}


def _run_one(s: dict[str, Any], where: Path, spark_factory) -> dict[str, Any]:
    inputs = scenario_inputs(s)
    table = materialize_scenario(s, where)
    log = DeltaLog.open(str(table), use_cache=False, spark_factory=spark_factory)
    winners_from_log = [winning_commit(log, v) for v in log.versions if v >= 1]
    # The scenario's own description of each winner carries what a log cannot (e.g. a
    # commitInfo-less winner); the log-read winner must agree with it on the files the checks use.
    mismatch = _compare_winners(inputs.winners, winners_from_log)
    res = check_window(inputs.txn, winners_from_log, inputs.profile, read_snapshot_files=inputs.setup_files)
    expected = s["expected"]
    agree = mismatch is None and outcome_agrees(expected, res.exception, res.error_class, res.message)
    out = {
        "id": s["id"],
        "title": s["title"],
        "engine": s["engine"],
        "source": dict(s["source"]),
        "expected": expected["outcome"],
        "expected_error_class": expected.get("error_class"),
        "got": res.exception or "commit",
        "got_error_class": res.error_class,
        "agree": agree,
        "profile": res.profile,
        "rule": res.rule,
        "why": res.why if not mismatch else f"{mismatch}; {res.why}",
    }
    if s.get("known_difference"):
        out["known_difference"] = s["known_difference"]
    return out


def _compare_winners(stated, read) -> str | None:
    if len(stated) != len(read):
        return f"log holds {len(read)} winning commits, the scenario states {len(stated)}"
    for s, r in zip(stated, read):
        if sorted(f.key for f in s.adds) != sorted(f.key for f in r.adds) or \
                sorted(f.key for f in s.removes) != sorted(f.key for f in r.removes):
            return f"winner v{r.version} read from the log differs from the scenario"
    return None
