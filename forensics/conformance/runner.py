"""Conformance: scenarios from the engines' own test suites, replayed through our reader and rules.

Each scenario (format of ../shared/conformance/cases.json, spec §13) is written to disk as a
real `_delta_log` (setup at version 0, the winning commits after it), read back with the Spark
reader, and the current transaction is checked against the winning commits *as read from the
log* with the profile of the scenario's engine. Outcomes compare by Delta class name.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable

from forensics.log.delta_log import DeltaLog
from forensics.replay.windows import winning_commit
from forensics.rules import check_window
from forensics.conformance.cases import KNOWN_DIFFERENCES, case_to_inputs, expected_matches, load_cases, materialize_case


def run_conformance(cases_path: str | Path, *, spark_factory: Callable[[], Any] | None = None, workdir: str | None = None) -> dict[str, Any]:
    cases = load_cases(cases_path)
    results = []
    with tempfile.TemporaryDirectory(prefix="delta-forensics-conformance-", dir=workdir) as tmp:
        for i, case in enumerate(cases):
            results.append(_run_one(case, Path(tmp) / f"case-{i:03d}", spark_factory))
    return {"total": len(results), "agreed": sum(1 for r in results if r["agree"]), "cases": results}


def _run_one(case: dict[str, Any], where: Path, spark_factory) -> dict[str, Any]:
    inputs = case_to_inputs(case)
    table = materialize_case(case, where)
    log = DeltaLog.open(str(table), use_cache=False, spark_factory=spark_factory)
    winners_from_log = [winning_commit(log, v) for v in log.versions if v >= 1]
    # The case's own description of each winner carries what a log cannot (e.g. a commitInfo-less
    # winner); the log-read winner must agree with it on the actions the checks use.
    mismatch = _compare_winners(inputs.winners, winners_from_log)
    res = check_window(inputs.txn, winners_from_log, inputs.profile, read_snapshot_files=inputs.setup_files)
    agree = expected_matches(case["expected"], res.exception, res.error_class)
    out = {
        "name": case["name"],
        "engine": case.get("engine"),
        "expected": case["expected"],
        "got": res.exception or "commit",
        "agree": agree,
        "profile": res.profile,
        "rule": res.rule,
        "why": res.why if not mismatch else f"{mismatch}; {res.why}",
    }
    if case["name"] in KNOWN_DIFFERENCES:
        out["known_difference"] = KNOWN_DIFFERENCES[case["name"]]
    return out


def _compare_winners(stated, read) -> str | None:
    if len(stated) != len(read):
        return f"log holds {len(read)} winning commits, the case states {len(stated)}"
    for s, r in zip(stated, read):
        if sorted(f.path for f in s.adds) != sorted(f.path for f in r.adds) or sorted(f.path for f in s.removes) != sorted(f.path for f in r.removes):
            return f"winner v{r.version} read from the log differs from the case"
    return None
