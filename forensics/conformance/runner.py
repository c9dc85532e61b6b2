"""Conformance: scenarios from the engines' own test suites, answered by the code users run.

Each scenario (the shipped set, or a file in our format: scenarios/README.md) is written to disk
as the log its engine would leave (`cases.materialize_scenario`: setup, winning commits, then the
current transaction as the commit it would have written), opened with `forensics.Table`, and
answered twice:

- **explain**: `Table.explain(V)` for the transaction's version V. The read set comes from the
  commit's commitInfo (forensics/sets/commit_sets.py), the window from its readVersion, the
  profile from its engineInfo. An expected abort must be the verdict `anomaly` with that exception
  and winner (the log says it committed; the rules say it could not have); an expected commit
  `clean` or `reordered`.
- **whatif**: `Table.whatif(read_version=0, until=<last winner>, operation=…, predicate=…)`, the
  question a user would ask about the same transaction; `abort` with that exception and winner,
  or `commit`.

A path that cannot state the engine test's transaction says why in the scenario's
`not_expressible`; a path whose answer is known to differ says why in `known_difference` (and
must still differ). Everything else must agree.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from forensics.conformance.cases import (
    ENGINES,
    PATHS,
    expected_winner,
    load_scenarios,
    materialize_scenario,
    outcome_agrees,
    scenario_commits,
    transaction_version,
    whatif_request,
)
from forensics.errors import ForensicsError
from forensics.schemas import camel_keys

# status of one path of one scenario
AGREE = "agree"
DISAGREE = "disagree"  # a finding: our answer differs and no reason is on record
NOT_EXPRESSIBLE = "not expressible"  # documented: the path cannot state the engine test's transaction
KNOWN_DIFFERENCE = "known difference"  # documented: our answer differs, for the recorded reason
FIXED = "known difference no longer reproduces"  # a finding: the record is stale
DOCUMENTED = (NOT_EXPRESSIBLE, KNOWN_DIFFERENCE)
FINDINGS = (DISAGREE, FIXED)


def run_conformance(cases_path: str | Path | None = None, *, spark_factory: Callable[[], Any] | None = None,
                    master: str | None = None, remote: str | None = None,
                    workdir: str | None = None) -> dict[str, Any]:
    """Answer every scenario of the shipped set (`cases_path` None) or of a scenario file/folder.

    Returns {"total", "explainAgree", "whatifAgree", "documented", "findings", "byEngine", "summary",
    "cases": [...]}: per case the engine, the expected outcome, explain's and whatif's answers, and
    each path's status (agree / disagree / not expressible / known difference / known difference
    no longer reproduces) with its reason. `spark_factory` (or `master`/`remote`) chooses the
    Spark session the reader uses.
    """
    scenarios = load_scenarios(cases_path)
    spark = spark_factory() if spark_factory is not None else None
    results = []
    with tempfile.TemporaryDirectory(prefix="delta-forensics-conformance-", dir=workdir) as tmp:
        for i, s in enumerate(scenarios):
            results.append(run_scenario(s, Path(tmp) / f"case-{i:03d}", spark=spark, master=master, remote=remote))
    return summarise(results)


def summarise(cases: list[dict[str, Any]]) -> dict[str, Any]:
    def counts(cs: list[dict[str, Any]]) -> dict[str, int]:
        return {
            "total": len(cs),
            "explainAgree": sum(1 for c in cs if c["explain"]["status"] == AGREE),
            "whatifAgree": sum(1 for c in cs if c["whatif"]["status"] == AGREE),
            "documented": sum(1 for c in cs if any(c[p]["status"] in DOCUMENTED for p in PATHS)),
            "findings": sum(1 for c in cs if any(c[p]["status"] in FINDINGS for p in PATHS)),
        }

    out: dict[str, Any] = counts(cases)
    engines = [e for e in ENGINES if any(c["engine"] == e for c in cases)]
    out["byEngine"] = {e: counts([c for c in cases if c["engine"] == e]) for e in engines}
    out["summary"] = summary_line(out)
    out["cases"] = cases
    return out


def summary_line(c: dict[str, int]) -> str:
    m = c["total"]
    return (f"{c['explainAgree']} of {m} agree through explain, {c['whatifAgree']} of {m} through whatif, "
            f"{c['documented']} with a documented reason")


def run_scenario(s: dict[str, Any], where: Path, *, spark: Any = None, master: str | None = None,
                 remote: str | None = None) -> dict[str, Any]:
    """One scenario through both paths (see the module docstring)."""
    from forensics.table import Table

    expected = s["expected"]
    out: dict[str, Any] = {
        "id": s["id"], "title": s["title"], "engine": s["engine"], "source": dict(s["source"]),
        "expected": expected["outcome"], "expectedErrorClass": expected.get("error_class"),
        "expectedWinner": expected_winner(s), "version": transaction_version(s),
    }
    root = materialize_scenario(s, where)
    try:
        table = Table(root, use_cache=False, spark=spark, master=master, remote=remote)
        problem = _log_problem(s, table)
    except ForensicsError as e:
        table, problem = None, f"the log could not be read back: {e.one_line()}"
    out["explain"] = _explain(s, table, problem)
    out["whatif"] = _whatif(s, table, problem)
    out["agree"] = all(out[p]["status"] not in FINDINGS for p in PATHS)
    return out


def _log_problem(s: dict[str, Any], table: Any) -> str | None:
    """The log read back must hold every version written, with the file actions written."""
    written = scenario_commits(s)
    if table.versions != list(range(len(written))):
        return f"the log read back holds versions {table.versions}, {len(written)} were written"
    for v, objs in enumerate(written[1:], start=1):
        w = table.commit_sets(v).write
        want = (sorted(next(iter(o.values()))["path"] for o in objs if "add" in o),
                sorted(next(iter(o.values()))["path"] for o in objs if "remove" in o))
        if (sorted(f.path for f in w.adds), sorted(f.path for f in w.removes)) != want:
            return f"v{v} read back holds other file actions than were written"
    return None


def _reasons(s: dict[str, Any], path: str) -> tuple[str | None, str | None]:
    return (s.get("not_expressible") or {}).get(path), (s.get("known_difference") or {}).get(path)


def _status(agrees: bool, not_expressible: str | None, known: str | None) -> tuple[str, str | None]:
    if not_expressible:
        return NOT_EXPRESSIBLE, not_expressible
    if known:
        return (FIXED, known) if agrees else (KNOWN_DIFFERENCE, known)
    return (AGREE, None) if agrees else (DISAGREE, None)


def _explain(s: dict[str, Any], table: Any, problem: str | None) -> dict[str, Any]:
    nx, known = _reasons(s, "explain")
    if table is None or problem:
        status, reason = _status(False, nx, known)
        return {"answer": f"error: {problem}", "status": status, "reason": reason or problem}
    version = transaction_version(s)
    try:
        ex = table.explain(version, use_evidence=False)
    except ForensicsError as e:
        status, reason = _status(False, nx, known)
        return {"answer": f"error: {e.one_line()}", "status": status, "reason": reason}
    v, res = ex.verdict, ex.verdict.result
    if v.verdict == "anomaly":
        answer = f"anomaly {v.exception} v{v.winning_version}"
    elif v.verdict == "skipped":
        answer = "skipped"
    else:
        answer = v.verdict
    exp_ = s["expected"]
    if exp_["outcome"] == "commit":
        agrees = v.verdict in ("clean", "reordered")
    else:
        agrees = (v.verdict == "anomaly" and v.winning_version == expected_winner(s)
                  and outcome_agrees(exp_, v.exception, res.error_class if res else None, v.message))
    status, reason = _status(agrees, nx, known)
    return {
        "answer": answer, "status": status, "reason": reason, "verdict": v.verdict, "exception": v.exception,
        "winningVersion": v.winning_version, "errorClass": res.error_class if res else None, "rule": v.rule,
        "profile": v.profile, "isolationLevel": v.isolation_level, "why": v.why,
        "read": ex.sets.to_dict()["read"],
    }


def _whatif(s: dict[str, Any], table: Any, problem: str | None) -> dict[str, Any]:
    nx, known = _reasons(s, "whatif")
    req = whatif_request(s)
    if req is None:
        return {"answer": "not asked", "status": NOT_EXPRESSIBLE, "reason": nx, "request": None}
    request = camel_keys(req, keep=("partitions",))
    if table is None or problem:
        status, reason = _status(False, nx, known)
        return {"answer": f"error: {problem}", "status": status, "reason": reason or problem, "request": request}
    try:
        wi = table.whatif(**req)
    except ForensicsError as e:
        status, reason = _status(False, nx, known)
        return {"answer": f"error: {e.one_line()}", "status": status, "reason": reason, "request": request}
    r = wi.result
    answer = f"abort {r.exception} v{r.winning_version}" if r.verdict == "abort" else r.verdict
    exp_ = s["expected"]
    if exp_["outcome"] == "commit":
        agrees = r.verdict == "commit"
    else:
        agrees = (r.verdict == "abort" and r.winning_version == expected_winner(s)
                  and outcome_agrees(exp_, r.exception, r.error_class, r.message))
    status, reason = _status(agrees, nx, known)
    return {
        "answer": answer, "status": status, "reason": reason, "request": request, "verdict": r.verdict,
        "exception": r.exception, "winningVersion": r.winning_version, "errorClass": r.error_class, "rule": r.rule,
        "profile": r.profile, "isolationLevel": wi.isolation_level, "why": r.why, "read": wi.read_summary,
        "write": wi.write_summary,
    }
