"""stats: counts checked against counts computed here straight from the commit JSON files."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from forensics.schemas import SCHEMA_VERSION


def actions(table: Path) -> dict[int, list[dict]]:
    out = {}
    for f in sorted((table / "_delta_log").glob("*.json")):
        if re.fullmatch(r"\d{20}\.json", f.name):
            out[int(f.name[:20])] = [json.loads(x) for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]
    return out


def ci_of(acts: list[dict]) -> dict:
    return next((a["commitInfo"] for a in acts if "commitInfo" in a), {})


def partitions(acts: list[dict]) -> set[str]:
    out = set()
    for a in acts:
        for k in ("add", "remove"):
            if k in a and a[k].get("partitionValues"):
                out.add("/".join(f"{c}={v}" for c, v in a[k]["partitionValues"].items()))
    return out or {"(table)"}


@pytest.fixture(scope="module")
def busy(spark, sample_logs):
    from forensics.log.delta_log import DeltaLog

    return DeltaLog.open(str(sample_logs / "busy" / "table"), use_cache=False)


@pytest.fixture(scope="module")
def reorder(spark, sample_logs):
    from forensics.log.delta_log import DeltaLog

    return DeltaLog.open(str(sample_logs / "b-writeserializable-reorder" / "table"), use_cache=False)


def _stats(log, window="1h", evidence=False):
    from forensics.replay.windows import replay_table
    from forensics.analysis.stats import parse_window, table_stats
    from forensics.analysis.timeline import build_timeline

    ev = None
    if evidence:
        from forensics.evidence import collect_evidence

        ev = collect_evidence(log)
    tl = build_timeline(log, replay_table(log), ev)
    return table_stats(log, tl, parse_window(window), window, top=1000).to_dict()


def test_stale_windows_and_overlaps_per_partition(busy, sample_logs):
    acts = actions(sample_logs / "busy" / "table")
    stale, overlaps, commits = Counter(), Counter(), Counter()
    for v, a in acts.items():
        mine = partitions(a)
        for p in mine:
            commits[p] += 1
        rv = ci_of(a).get("readVersion")
        if rv is None or rv >= v - 1:
            continue
        winners = set().union(*(partitions(acts[w]) for w in range(rv + 1, v)))
        for p in mine:
            stale[p] += 1
            overlaps[p] += p in winners
    st = _stats(busy)
    assert st["totals"]["staleWindows"] == sum(1 for v, a in acts.items()
                                                if ci_of(a).get("readVersion") is not None and ci_of(a)["readVersion"] < v - 1)
    got = {p["partition"]: p for p in st["partitions"]}
    assert {k: v["staleWindows"] for k, v in got.items() if v["staleWindows"]} == {k: n for k, n in stale.items() if n}
    assert {k: v["overlaps"] for k, v in got.items() if v["overlaps"]} == {k: n for k, n in overlaps.items() if n}
    assert {k: v["commits"] for k, v in got.items()} == dict(commits)
    # per time window: the buckets add up to the whole range
    per_bucket = Counter()
    for b in _stats(busy, "1s")["buckets"]:
        for p in b["partitions"]:
            per_bucket[p["partition"]] += p["staleWindows"]
    assert {k: n for k, n in per_bucket.items() if n} == {k: n for k, n in stale.items() if n}


def test_retry_metrics_and_concurrency(busy, sample_logs):
    acts = actions(sample_logs / "busy" / "table")
    retries = sum(int(ci_of(a).get("operationMetrics", {}).get("num_retries", 0) or 0) for a in acts.values())
    n_retried = sum(1 for a in acts.values() if int(ci_of(a).get("operationMetrics", {}).get("num_retries", 0) or 0) > 0)
    st = _stats(busy, "1d")
    assert st["retries"]["metricTotals"].get("num_retries", 0) == retries
    assert sum(1 for m in st["retries"]["metrics"] if m["key"] == "num_retries") == n_retried
    # one bucket of a day: every transaction whose start is known (recorded readVersion, or version 0) is in it
    known = sum(1 for v, a in acts.items() if ci_of(a).get("readVersion") is not None or v == 0)
    conc = st["concurrency"]
    assert sum(c["commits"] for c in conc) == len(acts)
    assert max(c["transactions"] for c in conc) <= known
    if len(conc) == 1:
        assert conc[0]["transactions"] == known
    # max at once, computed here by a sweep over [read snapshot time, commit time)
    ts = {v: ci_of(a)["timestamp"] for v, a in acts.items()}
    iv = [(ts[ci_of(a)["readVersion"]], ts[v]) for v, a in acts.items() if ci_of(a).get("readVersion") is not None]
    iv += [(ts[0], ts[0])] if ci_of(acts[0]).get("readVersion") is None else []
    if len(conc) == 1:
        assert conc[0]["maxConcurrent"] == max_open(iv)


def max_open(iv: list[tuple[int, int]]) -> int:
    """Most windows open at one instant; [start, end) (an instant window is its one millisecond)."""
    best = cur = 0
    for _, kind in sorted([(a, 1) for a, _ in iv] + [(max(b, a + 1), 0) for a, b in iv]):
        cur += 1 if kind == 1 else -1
        best = max(best, cur)
    return best


def write_touching_log(t: Path) -> dict[int, tuple[int | None, int]]:
    """v1 read v0 and committed at T1; v2 and v3 read v1 (T1) and committed later: v1's window only
    touches theirs at T1. Returns version -> (readVersion, commit time)."""
    T = 1_718_870_000_000
    plan = {0: (None, T), 1: (0, T + 1000), 2: (1, T + 2000), 3: (1, T + 3000)}
    schema = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
    (t / "_delta_log").mkdir(parents=True)
    for v, (rv, ts) in plan.items():
        info = {"timestamp": ts, "operation": "WRITE", "operationParameters": {"mode": "Append", "partitionBy": "[]"},
                "isolationLevel": "Serializable", "isBlindAppend": True, "engineInfo": "Apache-Spark/3.5.1 Delta-Lake/3.2.0",
                "txnId": f"00000000-0000-0000-0000-00000000000{v}"}
        if rv is not None:
            info["readVersion"] = rv
        acts = [{"commitInfo": info}]
        if v == 0:
            acts += [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
                     {"metaData": {"id": "00000000-0000-0000-0000-0000000000c1", "format": {"provider": "parquet", "options": {}},
                                   "schemaString": schema, "partitionColumns": [], "configuration": {}, "createdTime": T}}]
        acts.append({"add": {"path": f"part-{v:05d}.parquet", "partitionValues": {}, "size": 100, "modificationTime": ts,
                             "dataChange": True}})
        (t / "_delta_log" / f"{v:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in acts))
    return plan


def test_windows_that_only_touch_do_not_overlap(tmp_path, spark, capsys):
    """Half-open windows: v1 ends at the instant v2 and v3 start, so at most two are open at once
    (closed intervals would say three)."""
    from forensics.cli.main import main

    plan = write_touching_log(tmp_path / "t")
    iv = [(plan[rv][1] if rv is not None else ts, ts) for rv, ts in plan.values()]
    closed = max(sum(1 for a, b in iv if a <= x <= b) for x, _ in iv)
    assert (max_open(iv), closed) == (2, 3)  # the log tells the two definitions apart
    assert main(["stats", str(tmp_path / "t"), "--window", "1d", "--json", "-q"]) == 0
    conc = json.loads(capsys.readouterr().out)["concurrency"]
    assert len(conc) == 1
    assert conc[0]["maxConcurrent"] == max_open(iv)
    assert conc[0]["transactions"] == len(plan)


def test_reorder_counts_and_operation_matrix(reorder, sample_logs):
    acts = actions(sample_logs / "b-writeserializable-reorder" / "table")
    delete = next(v for v, a in acts.items() if ci_of(a).get("operation") == "DELETE")
    rv = ci_of(acts[delete])["readVersion"]
    winners = list(range(rv + 1, delete))
    blind = [w for w in winners if ci_of(acts[w]).get("isBlindAppend")]
    st = _stats(reorder)
    assert st["totals"]["reorders"] == len(blind) == 1
    got = {p["partition"]: p["reorders"] for p in st["partitions"] if p["reorders"]}
    assert got == {p: 1 for p in partitions(acts[blind[0]])}
    added = {a["add"]["path"] for a in acts[blind[0]] if "add" in a}
    assert {f["file"] for f in st["files"] if f["reorders"]} == added
    cells = {(c["current"], c["winner"]): c for c in st["operationMatrix"]["cells"]}
    cell = cells[("UPDATE/DELETE/MERGE", "INSERT")]
    assert cell["pairs"] == len(winners) and cell["reordered"] == 1 and cell["conflict"] == 0


def test_attempts_counted_per_partition(sample_logs, spark):
    from forensics.log.delta_log import DeltaLog

    log = DeltaLog.open(str(sample_logs / "f-delta-rs-aborted" / "table"), use_cache=False)
    attempts = json.loads((sample_logs / "f-delta-rs-aborted" / "attempts.json").read_text())
    st = _stats(log, evidence=True)
    assert st["totals"]["abortedAttempts"] == len(attempts)
    got = {p["partition"]: p["abortedAttempts"] for p in st["partitions"] if p["abortedAttempts"]}
    assert got == dict(Counter(a["partition"] for a in attempts))


def test_parse_window_and_cli(sample_logs, capsys):
    from forensics.cli.main import main
    from forensics.errors import ForensicsError
    from forensics.analysis.stats import parse_window

    assert parse_window("1h") == 3_600_000 and parse_window("15m") == 900_000 and parse_window("500ms") == 500
    with pytest.raises(ForensicsError):
        parse_window("soon")
    assert main(["stats", str(sample_logs / "b-writeserializable-reorder" / "table"), "--window", "1 fortnight"]) == 2
    assert main(["stats", str(sample_logs / "b-writeserializable-reorder" / "table"), "--json", "-q"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["schema_version"] == SCHEMA_VERSION and {"partitions", "files", "buckets", "operationMatrix", "concurrency", "retries"} <= set(d)
