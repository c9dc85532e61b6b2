"""Differential testing of delta-forensics against a live delta-rs engine.

A generator of random concurrent workloads through `deltalake` (delta-rs): appends, predicate and
full overwrites, DELETE, UPDATE, MERGE with real source rows (with and without a partition literal,
upsert / update / delete / insert-only / NOT MATCHED BY SOURCE), OPTIMIZE compact and Z-order,
SET TBLPROPERTIES, ADD COLUMNS, ADD CONSTRAINT; partitioned and unpartitioned tables, a table
isolation level now and then, blind-append winners (isBlindAppend through custom metadata), one to
three winners, and retries (the loser re-run after its abort, sometimes raced once more).

Each scenario builds a real table, pins the loser's `DeltaTable` at read version R, commits the
winners on fresh handles, then runs the loser's operation on the stale handle so that delta-rs runs
its own conflict checker (default `max_commit_retries`, default post-commit hooks) against them.
The loser's commit carries `readVersion=R` as custom commit metadata (delta-rs records it itself
for DELETE/UPDATE/MERGE/OPTIMIZE, not for writes; `--no-read-version` turns this off) so `replay`
can see its window. Every real outcome (commit at V, no-op, or `CommitFailedError` and its text)
is then checked against the tool:

1. `Table(path, rules="delta-rs").whatif(read_version=R, operation=..., predicate=..., until=U)`
   predicts it: commit vs abort, the exception, and the winning version. The real winning version
   is measured, not guessed: the loser is re-run on copies of the table truncated after each
   winner (delta-rs checks the winners in order against the same read snapshot and stops at the
   first conflict, so the first prefix that aborts names the winner). A MERGE's whatif predicate
   is the one delta-rs derives and conflict-checks (`operationParameters.predicate`), measured by
   running the same MERGE alone on a copy of the table at R. A no-op (delta-rs commits nothing when
   the operation has no actions) is recorded but not compared: no conflict check ran.
2. For an abort, `Table(path).explain_error(text)` recognises the text, names the same exception,
   and names the real winner (or an ambiguity whose candidates include it); when two aborted
   attempts of one table printed the same text, either one's winner is accepted.
   2b. The same, told what the failed job knows (`read_version=R, operation=..., predicate=...`):
   it must name the real winner (or an ambiguity including it).
3. For a loser that committed at V with readVersion R < V-1, `Table(path).replay()` must not call
   V an anomaly (nor any other commit of the scenario).

Concurrency is deterministic (no threads): the stale handle is what makes the race. Scenarios are
deterministic by (seed, index): the spec is generated from the seed first (`--print-spec`), then
executed; a spec can be run alone with `--spec`. The tool is opened once per scenario with Spark
(the SparkSession is shared by the process) and its cache lives in the scenario's temp directory,
which is deleted afterwards (kept under `--keep DIR` when the scenario disagrees).

    python bench/differential.py --scenarios N --seed S [--out results.jsonl] [--keep DIR] [--jobs J]
    python bench/differential.py --seed S --index I [--index J ...]    # some scenarios of a batch
    python bench/differential.py --spec '{"partitioned": true, ...}'     # one scenario from its spec
    python bench/differential.py ... --tool-root DIR                    # test a `git archive` of the tool

One JSON line per scenario goes to --out (default bench/out/differential.jsonl): the spec, the
winners, each loser's real outcome and measured winner, the tool's answers, and the reasons of any
disagreement. The summary (outcomes per loser kind and per operation pair, disagreement classes
with their count and examples as seed/index, resident memory, scenarios per minute, the engine and
tool versions) goes to stdout and to <out>.summary.json.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

PARTS = ("a", "b", "c")
BLOCK = 10  # setup batches hold ids [k*BLOCK, (k+1)*BLOCK)

# ---------------------------------------------------------------------------------------------
# delta-rs conflict texts -> Delta exception names, kept independent of forensics.errortext so a
# bug there cannot hide one here (crates/core/src/kernel/transaction/conflict_checker.rs,
# `enum CommitConflictError`, python-v1.6.3; conflict-rules §7.5).
# ---------------------------------------------------------------------------------------------
DELTA_RS_TEXTS = (
    ("a concurrent transactions added new data", "ConcurrentAppendException"),
    ("a concurrent transaction deleted data this operation read", "ConcurrentDeleteReadException"),
    ("a concurrent transaction deleted the same data your transaction deletes", "ConcurrentDeleteDeleteException"),
    ("Metadata changed since last commit", "MetadataChangedException"),
    ("Protocol changed since last commit", "ProtocolChangedException"),
    ("Concurrent transaction failed", "ConcurrentTransactionException"),
)

# Operation kinds of the generator, and how each maps onto a whatif request.
KINDS = ("append", "overwrite", "overwrite_all", "delete", "update", "merge", "compact", "zorder",
         "set_props", "add_columns", "add_constraint")
WHATIF_OP = {
    "append": "INSERT", "overwrite": "OVERWRITE", "overwrite_all": "OVERWRITE", "delete": "DELETE",
    "update": "UPDATE", "merge": "MERGE", "compact": "OPTIMIZE", "zorder": "OPTIMIZE",
    "set_props": "SET TBLPROPERTIES", "add_columns": "ADD COLUMNS", "add_constraint": "ALTER",
}
DATA_KINDS = {"append", "overwrite", "overwrite_all", "merge"}  # ops that write a source batch
ISOLATION_VALUES = (None, None, None, None, None, None, "Serializable", "WriteSerializable", "writeSerializable",
                    "snapshotIsolation")


# =============================================================================================
# Scenario specs (pure data, generated from the seed before anything runs)
# =============================================================================================


def scenario_rng(seed: int, index: int) -> random.Random:
    return random.Random(f"delta-forensics-differential:{seed}:{index}")


def _pred(rng: random.Random, partitioned: bool, allow_none: bool = False) -> str | None:
    if allow_none and rng.random() < 0.06:
        return None
    k = rng.choice([5, 15, 25, 35, 45, 55])
    p = rng.choice(PARTS)
    if not partitioned:
        return rng.choice([f"id > {k}", f"id < {k}", f"id = {k + 1}", f"v > {3 * k}",
                           f"id > {k} AND id < {k + 20}"])
    q = rng.choice([x for x in PARTS if x != p])
    form = rng.choice(["part", "part", "mixed", "mixed", "data", "in", "or"])
    return {
        "part": f"p = '{p}'",
        "mixed": f"p = '{p}' AND id > {k}",
        "data": rng.choice([f"id > {k}", f"id < {k}"]),
        "in": f"p IN ('{p}', '{q}')",
        "or": f"p = '{p}' OR id < {k}",
    }[form]


def _ids(rng: random.Random, n: int, lo: int = 0, hi: int = 80) -> list[int]:
    return sorted(rng.sample(range(lo, hi), n))


def gen_op(rng: random.Random, partitioned: bool, seq: int, role: str, kinds: tuple[str, ...] | None = None) -> dict:
    """One operation. `seq` numbers the operation in its scenario (unique column/constraint names)."""
    weights = {
        "append": 4, "overwrite": 2, "overwrite_all": 1, "delete": 4, "update": 3, "merge": 4, "compact": 2,
        "zorder": 1, "set_props": 1, "add_columns": 1, "add_constraint": 1,
    }
    pool = [k for k in (kinds or KINDS)]
    kind = rng.choices(pool, [weights[k] for k in pool])[0]
    part = rng.choice(PARTS) if partitioned else None
    op: dict[str, Any] = {"kind": kind}
    if kind == "append":
        op.update(part=part, ids=_ids(rng, rng.choice([2, 3])))
        if role == "winner" and rng.random() < 0.3:
            op["blind"] = True  # commitInfo.isBlindAppend=true through custom metadata (conflict-rules §2.2)
    elif kind == "overwrite":
        if partitioned and rng.random() < 0.75:
            op.update(part=part, predicate=f"p = '{part}'", ids=_ids(rng, 2))
        else:
            k = rng.choice([15, 25, 35, 45])
            gt = rng.random() < 0.5
            pred = f"id > {k}" if gt else f"id < {k}"
            if partitioned:
                pred = f"p = '{part}' AND {pred}"
            op.update(part=part, predicate=pred, ids=_ids(rng, 2, k + 1, 90) if gt else _ids(rng, 2, 0, k))
    elif kind == "overwrite_all":
        op.update(part=part, ids=_ids(rng, 2))
    elif kind == "delete":
        op.update(predicate=_pred(rng, partitioned, allow_none=True))
    elif kind == "update":
        op.update(predicate=_pred(rng, partitioned, allow_none=True), set=rng.choice(["v + 1", "0"]))
    elif kind == "merge":
        n_old, n_new = rng.choice([(1, 1), (2, 1), (1, 0), (0, 2), (2, 2)])
        old = _ids(rng, n_old, 0, 50)
        new = [900 + seq * 10 + i for i in range(n_new)]
        clauses = rng.choice(["upsert", "upsert", "update", "delete", "insert", "upsert_nmbs"])
        if partitioned:
            cond = rng.choice(["literal", "literal", "none", "source"])
            rows_parts = [part] * (len(old) + len(new))
            if cond != "literal" and rng.random() < 0.5:
                rows_parts = [rng.choice(PARTS) for _ in rows_parts]
            on = {"literal": f"t.id = s.id AND t.p = '{part}'", "none": "t.id = s.id", "source": "t.id = s.id AND t.p = s.p"}[cond]
        else:
            rows_parts = [None] * (len(old) + len(new))
            k = rng.choice([15, 25, 35])
            on = rng.choice(["t.id = s.id", "t.id = s.id", f"t.id = s.id AND t.id > {k}"])
        op.update(on=on, ids=old + new, parts=rows_parts, clauses=clauses)
        if clauses == "upsert_nmbs":
            op["nmbs_predicate"] = f"t.p = '{part}'" if partitioned and rng.random() < 0.6 else None
    elif kind == "zorder":
        op.update(columns=rng.choice([["id"], ["id", "v"]]))
    elif kind == "set_props":
        op.update(properties={rng.choice(["delta.logRetentionDuration", "delta.deletedFileRetentionDuration"]):
                              f"interval {rng.randint(8, 60)} days"})
    elif kind == "add_columns":
        op.update(column=f"w{seq}")
    elif kind == "add_constraint":
        op.update(name=f"c{seq}", expr=rng.choice(["id >= 0", "v >= 0"]))
    return op


def gen_spec(seed: int, index: int) -> dict:
    """The whole scenario as data: table layout, the loser, the winners, an optional retry."""
    rng = scenario_rng(seed, index)
    partitioned = rng.random() < 0.65
    n_setup = rng.choice([3, 4, 4, 5])
    if partitioned:
        parts = ["a"] + [rng.choice(PARTS) for _ in range(n_setup - 1)]
    else:
        parts = [None] * n_setup
    iso = rng.choice(ISOLATION_VALUES)
    setup = [{"part": p, "block": k} for k, p in enumerate(parts)]
    loser = gen_op(rng, partitioned, 0, "loser")
    n_w = rng.choice([1, 1, 2, 2, 3])
    winners = []
    for i in range(n_w):
        last = i == n_w - 1
        kinds = KINDS if last else tuple(k for k in KINDS if k != "add_columns")  # schema change only last
        winners.append(gen_op(rng, partitioned, i + 1, "winner", kinds))
    retry = None
    if rng.random() < 0.5:
        retry = {"interleave": gen_op(rng, partitioned, 9, "winner", tuple(k for k in KINDS if k != "add_columns"))
                 if rng.random() < 0.6 else None}
    return {"seed": seed, "index": index, "partitioned": partitioned, "isolation": iso, "setup": setup,
            "loser": loser, "winners": winners, "retry": retry}


# =============================================================================================
# Executing a spec against delta-rs
# =============================================================================================


def _deltalake():
    import deltalake

    return deltalake


def _batch(ids: list[int], parts: list[str | None] | str | None, partitioned: bool):
    import pyarrow as pa

    cols = {"id": pa.array(ids, pa.int64()), "v": pa.array([3 * i for i in ids], pa.int64())}
    if partitioned:
        ps = parts if isinstance(parts, list) else [parts] * len(ids)
        cols["p"] = pa.array(ps, pa.string())
    return pa.table(cols)


def _align(tbl, dt):
    """Add the table's extra (nullable, added-by-ALTER) columns to a batch as nulls."""
    import pyarrow as pa

    have = set(tbl.column_names)
    for f in dt.schema().fields:
        if f.name not in have:
            t = str(f.type).lower()
            typ = pa.int32() if "integer" in t else pa.int64() if "long" in t else pa.string()
            tbl = tbl.append_column(f.name, pa.nulls(tbl.num_rows, typ))
    return tbl


def data_files(path: str) -> set[str]:
    """Every Parquet data file under the table root (relative, `/`-separated), the log left out."""
    root = Path(path)
    return {p.relative_to(root).as_posix() for p in root.rglob("*.parquet") if "_delta_log" not in p.parts}


def latest_version(path: str) -> int:
    log = Path(path) / "_delta_log"
    vs = [int(p.name.split(".")[0]) for p in log.iterdir() if p.name.endswith(".json") and p.name.split(".")[0].isdigit()]
    return max(vs) if vs else -1


def truncate_copy(src: str, dst: str, keep_upto: int) -> str:
    """A copy of the table whose log stops at `keep_upto` (later data files stay, unreferenced)."""
    shutil.copytree(src, dst)
    log = Path(dst) / "_delta_log"
    for p in list(log.iterdir()):
        head = p.name.split(".")[0]
        if (head.isdigit() and int(head) > keep_upto) or p.name == "_last_checkpoint":
            p.unlink()
    return dst


def setup_table(path: str, spec: dict) -> int:
    from deltalake import write_deltalake

    cfg = {"delta.isolationLevel": spec["isolation"]} if spec.get("isolation") else None
    for i, s in enumerate(spec["setup"]):
        ids = list(range(s["block"] * BLOCK, (s["block"] + 1) * BLOCK))
        b = _batch(ids, s["part"], spec["partitioned"])
        if i == 0:
            write_deltalake(path, b, partition_by=["p"] if spec["partitioned"] else None, configuration=cfg)
        else:
            write_deltalake(path, b, mode="append")
    return latest_version(path)


def run_op(op: dict, dt, path: str, partitioned: bool, custom: dict | None = None) -> dict:
    """Run one operation through delta-rs on handle `dt`: {"outcome": commit|noop|abort|error, ...}."""
    from deltalake import CommitProperties, Field, write_deltalake
    from deltalake.exceptions import CommitFailedError

    cp = CommitProperties(custom_metadata=custom) if custom else None
    kind = op["kind"]
    before = latest_version(path)

    def go() -> None:
        if kind in ("append", "overwrite", "overwrite_all"):
            b = _align(_batch(op["ids"], op.get("part"), partitioned), dt)
            mode = "append" if kind == "append" else "overwrite"
            write_deltalake(dt, b, mode=mode, predicate=op.get("predicate"), commit_properties=cp)
        elif kind == "delete":
            dt.delete(op.get("predicate"), commit_properties=cp)
        elif kind == "update":
            dt.update(updates={"v": op["set"]}, predicate=op.get("predicate"), commit_properties=cp)
        elif kind == "merge":
            src = _align(_batch(op["ids"], op.get("parts"), partitioned), dt)
            m = dt.merge(src, op["on"], source_alias="s", target_alias="t", commit_properties=cp)
            c = op["clauses"]
            if c in ("upsert", "upsert_nmbs"):
                m = m.when_matched_update_all().when_not_matched_insert_all()
            elif c == "update":
                m = m.when_matched_update_all()
            elif c == "delete":
                m = m.when_matched_delete()
            elif c == "insert":
                m = m.when_not_matched_insert_all()
            if c == "upsert_nmbs":
                m = m.when_not_matched_by_source_delete(op.get("nmbs_predicate"))
            m.execute()
        elif kind == "compact":
            dt.optimize.compact(commit_properties=cp)
        elif kind == "zorder":
            dt.optimize.z_order(op["columns"], commit_properties=cp)
        elif kind == "set_props":
            dt.alter.set_table_properties(op["properties"], commit_properties=cp)
        elif kind == "add_columns":
            dt.alter.add_columns([Field(op["column"], "integer", nullable=True)], commit_properties=cp)
        elif kind == "add_constraint":
            dt.alter.add_constraint({op["name"]: op["expr"]}, commit_properties=cp)
        else:
            raise ValueError(f"unknown operation kind {kind!r}")

    try:
        go()
    except CommitFailedError as e:
        text = str(e)
        return {"outcome": "abort", "exception": classify_text(text), "error_type": type(e).__name__, "message": text}
    except Exception as e:  # noqa: BLE001 - any other engine error: recorded, not checked
        return {"outcome": "error", "error_type": type(e).__name__, "message": str(e)[:2000]}
    after = latest_version(path)
    if after > before:
        return {"outcome": "commit", "version": after, "versions": list(range(before + 1, after + 1))}
    return {"outcome": "noop"}


def classify_text(text: str) -> str:
    for needle, name in DELTA_RS_TEXTS:
        if needle in text:
            return name
    if text.strip().startswith("Failed to commit transaction:") and text.split(":", 1)[1].strip().isdigit():
        return "MaxCommitAttempts"
    return "unrecognised"


def commit_info(path: str, version: int) -> dict:
    f = Path(path) / "_delta_log" / f"{version:020d}.json"
    out: dict = {"adds": 0, "removes": 0, "removes_dc": 0, "metadata": False}
    for line in f.read_text().splitlines():
        if not line.strip():
            continue
        a = json.loads(line)
        if "commitInfo" in a:
            ci = a["commitInfo"]
            out.update(operation=ci.get("operation"), parameters=ci.get("operationParameters"),
                       readVersion=ci.get("readVersion"))
        elif "add" in a:
            out["adds"] += 1
        elif "remove" in a:
            out["removes"] += 1
            out["removes_dc"] += bool(a["remove"].get("dataChange", True))
        elif "metaData" in a:
            out["metadata"] = True
    return out


def whatif_request(op: dict, partitioned: bool, solo: dict | None) -> dict:
    """The whatif fields a user would give for this operation (MERGE: the predicate delta-rs derives,
    measured by running the same MERGE alone on a copy of the table at R)."""
    kind = op["kind"]
    req: dict[str, Any] = {"operation": WHATIF_OP[kind]}
    if kind in ("append", "overwrite", "overwrite_all"):
        if partitioned:
            req["partitions"] = [{"p": op["part"]}]
        if op.get("predicate"):
            req["predicate"] = op["predicate"]
    elif kind in ("delete", "update"):
        if op.get("predicate"):
            req["predicate"] = op["predicate"]
    elif kind == "merge":
        derived = ((solo or {}).get("parameters") or {}).get("predicate")
        if derived:
            req["predicate"] = derived
        if partitioned:
            req["partitions"] = [{"p": p} for p in sorted(set(op["parts"]))]
    return req


def solo_run(path: str, tmp: Path, op: dict, partitioned: bool, R: int) -> dict:
    """The loser alone on a copy at R: what it would commit without concurrency (and MERGE's derived
    predicate, which is its read predicate in delta-rs)."""
    from deltalake import DeltaTable

    dst = str(tmp / "solo")
    truncate_copy(path, dst, R)
    r = run_op(op, DeltaTable(dst, version=R), dst, partitioned)
    if r["outcome"] == "commit":
        r.update(commit_info(dst, r["version"]))
    r.pop("versions", None)
    shutil.rmtree(dst, ignore_errors=True)
    return r


def measure_winner(path: str, tmp: Path, op: dict, partitioned: bool, R: int, window: list[int]) -> dict:
    """Which winner delta-rs stopped at: re-run the loser against each prefix of the window."""
    from deltalake import DeltaTable

    runs = []
    for j, v in enumerate(window[:-1]):
        dst = str(tmp / f"prefix{v}")
        truncate_copy(path, dst, v)
        r = run_op(op, DeltaTable(dst, version=R), dst, partitioned)
        shutil.rmtree(dst, ignore_errors=True)
        runs.append({"until": v, "outcome": r["outcome"], "exception": r.get("exception")})
        if r["outcome"] == "abort":
            return {"winner": v, "how": f"loser aborts against v{R + 1}..v{v} already", "exception": r.get("exception"), "runs": runs}
        if r["outcome"] == "error":
            return {"winner": None, "how": f"prefix run until v{v} failed: {r.get('message', '')[:200]}", "runs": runs}
    return {"winner": window[-1] if window else None,
            "how": "only winner" if len(window) == 1 else f"commits against every shorter prefix; v{window[-1] if window else '-'} is the one",
            "runs": runs}


# =============================================================================================
# The tool's answers, and the comparison
# =============================================================================================


def _short_whatif(d: dict) -> dict:
    keys = ("verdict", "exception", "winningVersion", "rule", "isolationLevel", "certainty", "why", "read", "write", "notes")
    return {k: d.get(k) for k in keys}


def _short_explain(d: dict) -> dict:
    keys = ("recognized", "exception", "family", "rule", "winningVersion", "winnerMatch", "hypothesis", "reproduced", "why")
    out = {k: d.get(k) for k in keys}
    rp = d.get("replay")
    out["replay_verdict"] = (rp or {}).get("verdict")
    out["replay_exception"] = (rp or {}).get("exception")
    return out


def real_label(real: dict) -> str:
    if real["outcome"] == "abort":
        return f"abort {real['exception']}"
    return real["outcome"]


def _err(e: BaseException) -> str:
    one = getattr(e, "one_line", None)
    text = one() if callable(one) else str(e)
    return f"{type(e).__name__}: {text}"[:600]


def _err_class(check: str, e: BaseException) -> str:
    from forensics.errors import ForensicsError

    if isinstance(e, ForensicsError):
        return f"{check} refused ({type(e).__name__})"
    tb = traceback.extract_tb(e.__traceback__)
    where = next((f"{Path(f.filename).name}:{f.name}" for f in reversed(tb) if "/forensics/" in f.filename), "?")
    return f"{check} crashed ({type(e).__name__} in {where})"


def check_loser(L: dict, t_rs, t_default, replay_rows: dict[int, dict], same_text_winners: dict[str, set[int]]) -> None:
    """Fill L["whatif"], L["explain_error"], L["replay"], L["reasons"], L["agree"]."""
    real = L["real"]
    reasons: list[dict] = list(L.pop("pre_reasons", []))
    L["reasons"] = reasons
    if real["outcome"] == "error":
        L["agree"] = None
        L["skipped"] = "the engine failed for a reason other than a conflict"
        return
    # 1. whatif
    req = dict(L["whatif_request"], read_version=L["read_version"], until=L["until"])
    try:
        w = t_rs.whatif(**req).to_dict()
        L["whatif"] = _short_whatif(w)
    except Exception as e:  # noqa: BLE001 - a ForensicsError is an answer; anything else a crash
        L["whatif"] = {"error": _err(e)}
        reasons.append({"check": "whatif", "class": _err_class("whatif", e), "detail": L["whatif"]["error"]})
        w = None
    if w is not None and real["outcome"] == "noop":
        # delta-rs commits nothing when the operation has no actions (a MERGE or DELETE that matched no
        # rows, an OPTIMIZE with nothing to compact): no conflict check ran, so there is nothing to predict.
        L["note"] = f"no-op: the engine attempted no commit; whatif said {w['verdict']} (not compared)"
    elif w is not None:
        real_winner = L.get("real_winner")
        if real["outcome"] == "commit":
            if w["verdict"] != "commit":
                reasons.append({"check": "whatif", "class": f"whatif abort {w['exception']} / engine {real['outcome']}",
                                "detail": f"tool: abort {w['exception']} against v{w['winningVersion']} ({(w.get('why') or '')[:300]})"})
        else:
            if w["verdict"] != "abort":
                reasons.append({"check": "whatif", "class": f"whatif commit / engine abort {real['exception']}",
                                "detail": f"engine aborted against v{real_winner}; tool: commit ({(w.get('why') or '')[:300]})"})
            else:
                if w["exception"] != real["exception"]:
                    reasons.append({"check": "whatif", "class": f"whatif {w['exception']} / engine {real['exception']}",
                                    "detail": f"engine v{real_winner}; tool v{w['winningVersion']}: {(w.get('why') or '')[:300]}"})
                if real_winner is not None and w["winningVersion"] != real_winner:
                    reasons.append({"check": "whatif", "class": "whatif names another winner",
                                    "detail": f"engine stopped at v{real_winner}, tool at v{w['winningVersion']}"})
    # 2. explain_error
    if real["outcome"] == "abort":
        try:
            e = t_default.explain_error(real["message"]).to_dict()
            L["explain_error"] = _short_explain(e)
        except Exception as ex:  # noqa: BLE001
            e = None
            L["explain_error"] = {"error": _err(ex)}
            reasons.append({"check": "explain_error", "class": _err_class("explain_error", ex), "detail": L["explain_error"]["error"]})
        if e is not None:
            if e.get("exception") != real["exception"]:
                reasons.append({"check": "explain_error", "class": f"explain_error {e.get('exception')} / engine {real['exception']}",
                                "detail": f"text parsed as {e.get('exception')}"})
            acceptable = same_text_winners.get(real["message"], set()) or ({L.get("real_winner")} - {None})
            wm = e.get("winnerMatch") or {}
            named = e.get("winningVersion")
            cands = set(wm.get("candidates") or [])
            # right: the real winner named, or an ambiguity whose candidates include it
            if acceptable and named not in acceptable and not (wm.get("ambiguous") and acceptable & cands):
                cls = "explain_error names another winner" if named is not None else "explain_error's candidates miss the winner"
                reasons.append({"check": "explain_error", "class": cls,
                                "detail": f"engine v{sorted(acceptable)}; tool v{named}, candidates {sorted(cands)}, "
                                          f"ambiguous={wm.get('ambiguous')} ({wm.get('how')}: {(wm.get('why') or '')[:200]})"})
    # 2b. explain_error told what the user of the failed job knows: its read version, operation and condition
    if real["outcome"] == "abort":
        req = L["whatif_request"]
        facts = {"read_version": L["read_version"], "operation": req["operation"], "predicate": req.get("predicate")}
        try:
            e = t_default.explain_error(real["message"], **facts).to_dict()
            L["explain_error_facts"] = _short_explain(e)
        except TypeError as ex:
            e = None
            if "unexpected keyword" in str(ex):  # a tool without the facts parameters
                L["explain_error_facts"] = {"unsupported": True}
            else:
                L["explain_error_facts"] = {"error": _err(ex)}
                reasons.append({"check": "explain_error+facts", "class": _err_class("explain_error+facts", ex), "detail": _err(ex)})
        except Exception as ex:  # noqa: BLE001
            e = None
            L["explain_error_facts"] = {"error": _err(ex)}
            reasons.append({"check": "explain_error+facts", "class": _err_class("explain_error+facts", ex), "detail": _err(ex)})
        if e is not None:
            real_winner = L.get("real_winner")
            wm = e.get("winnerMatch") or {}
            named, cands = e.get("winningVersion"), set(wm.get("candidates") or [])
            if e.get("exception") != real["exception"]:
                reasons.append({"check": "explain_error+facts", "class": f"explain_error+facts {e.get('exception')} / engine {real['exception']}",
                                "detail": f"text parsed as {e.get('exception')}"})
            elif real_winner is not None and named != real_winner and not (wm.get("ambiguous") and real_winner in cands):
                cls = "explain_error+facts names another winner" if named is not None else "explain_error+facts's candidates miss the winner"
                reasons.append({"check": "explain_error+facts", "class": cls,
                                "detail": f"told readVersion {L['read_version']}, {req['operation']} {req.get('predicate') or ''}: "
                                          f"engine v{real_winner}; tool v{named}, candidates {sorted(cands)}, ambiguous={wm.get('ambiguous')} "
                                          f"({wm.get('how')}: {(wm.get('why') or '')[:200]})"})
    # 3. replay of a committed loser
    if real["outcome"] == "commit":
        V, R = real["version"], L["read_version"]
        row = replay_rows.get(V)
        L["replay"] = None if row is None else {k: row.get(k) for k in ("verdict", "readVersion", "exception", "winningVersion", "why")}
        if R < V - 1:
            if row is None:
                L["replay_note"] = f"v{V} not replayed (readVersion not recorded?)"
            elif row.get("verdict") == "anomaly":
                reasons.append({"check": "replay", "class": f"replay calls a real commit an anomaly ({row.get('exception')})",
                                "detail": f"v{V} (read v{R}) replayed as anomaly: {(row.get('why') or '')[:300]}"})
    L["agree"] = not reasons


def check_blame(losers: list[dict], t_default) -> None:
    """4. Blame from the orphan files alone: the aborted loser's attempt in `evidence`, its ranked
    candidates against the engine's winner and exception (first, among, how many)."""
    aborted = [L for L in losers if L["real"]["outcome"] == "abort" and L.get("files_written")]
    if not aborted:
        return
    try:
        ev = t_default.evidence()
    except Exception as e:  # noqa: BLE001
        for L in aborted:
            L["blame"] = {"error": _err(e)}
            L["reasons"].append({"check": "blame", "class": _err_class("evidence", e), "detail": _err(e)})
            L["agree"] = False
        return
    for L in aborted:
        mine = set(L["files_written"])
        att = next((a for a in ev.attempts if mine & {f.path for f in a.files}), None)
        if att is None:
            L["blame"] = {"found": False}
            L["reasons"].append({"check": "blame", "class": "blame: the attempt's files are not an attempt",
                                 "detail": f"files {sorted(mine)[:3]}"})
            L["agree"] = False
            continue
        want, exc = L.get("real_winner"), L["real"]["exception"]
        cands = [(c.winning_version, c.exception) for c in att.candidates]
        # the ranking's inputs, so another ranking can be scored offline on the same records (calibration)
        feats = [{"w": c.winning_version, "e": c.exception, "content": c.from_content, "late": c.late, "h": c.hypothesis_rank,
                  "support": c.support, "stale": c.stale, "reads": list(c.read_versions),
                  "weight": c.weight, "spans": [list(x) for x in c.spans] if c.spans is not None else None,
                  "lag_ms": c.lag_ms} for c in att.candidates]
        b = {"found": True, "candidates": cands, "n": len(cands), "ambiguous": att.ambiguous,
             "first": bool(cands) and cands[0] == (want, exc), "among": (want, exc) in cands,
             "winner_first": bool(cands) and cands[0][0] == want,
             "winner_among": want in {w for w, _ in cands}, "content": att.content.kind if att.content else None,
             "shared_files": len(att.files) != len(mine), "features": feats}
        L["blame"] = b
        if want is None:
            continue
        if not b["among"] and not b["shared_files"]:
            cls = "blame: one wrong answer" if len(cands) == 1 else (
                "blame: no candidate" if not cands else "blame: the candidates miss the winner")
            L["reasons"].append({"check": "blame", "class": cls,
                                 "detail": f"engine v{want} {exc}; tool {cands[:6]} ({(att.why or '')[:300]})"})
            L["agree"] = False


def tool_checks(path: str, losers: list[dict], cache_dir: Path) -> dict:
    """Open the table once with Spark (cache in a scenario-private dir), then from the cache."""
    from forensics import Table

    saved = os.environ.get("DELTA_FORENSICS_CACHE_DIR")
    os.environ["DELTA_FORENSICS_CACHE_DIR"] = str(cache_dir)
    try:
        return _tool_checks(path, losers, Table)
    finally:
        if saved is None:
            os.environ.pop("DELTA_FORENSICS_CACHE_DIR", None)
        else:
            os.environ["DELTA_FORENSICS_CACHE_DIR"] = saved


def _tool_checks(path: str, losers: list[dict], Table) -> dict:
    t0 = time.time()
    try:
        t_default = Table(path)  # the per-commit engine profile (delta-rs for every commit here)
        t_rs = Table(path, rules="delta-rs")
    except Exception as e:  # noqa: BLE001 - the tool cannot read the table: every loser disagrees
        for L in losers:
            L["reasons"] = [{"check": "open", "class": _err_class("Table()", e), "detail": _err(e)}]
            L["agree"] = False
        return {"open_error": _err(e), "replay_anomalies": [], "other_anomalies": []}
    out = {"open_s": round(time.time() - t0, 3), "second_open_from_cache": t_rs.read_from_cache}
    try:
        rows = {r["version"]: r for r in t_default.replay().to_dicts()} if t_default.latest_version else {}
    except Exception as e:  # noqa: BLE001
        rows = {}
        out["replay_error"] = _err(e)
        for L in losers:
            if L["real"]["outcome"] == "commit" and L["read_version"] < L["real"]["version"] - 1:
                L.setdefault("pre_reasons", []).append({"check": "replay", "class": _err_class("replay", e), "detail": _err(e)})
    out["replay_anomalies"] = sorted(v for v, r in rows.items() if r.get("verdict") == "anomaly")
    same: dict[str, set[int]] = defaultdict(set)
    for L in losers:
        if L["real"]["outcome"] == "abort" and L.get("real_winner") is not None:
            same[L["real"]["message"]].add(L["real_winner"])
    for L in losers:
        check_loser(L, t_rs, t_default, rows, same)
    check_blame(losers, t_default)
    # a committed winner (its readVersion is V-1) must never be an anomaly either
    loser_versions = {L["real"].get("version") for L in losers}
    stray = [v for v in out["replay_anomalies"] if v not in loser_versions]
    out["other_anomalies"] = stray
    out["tool_s"] = round(time.time() - t0, 3)
    del t_default, t_rs
    return out


# =============================================================================================
# One scenario
# =============================================================================================


def run_scenario(spec: dict, workdir: str | Path | None = None, keep: str | Path | None = None,
                 read_version_metadata: bool = True) -> dict:
    """Execute a spec against delta-rs, ask the tool, compare. Returns the JSON-lines record."""
    _deltalake()
    from deltalake import DeltaTable

    t0 = time.time()
    base = Path(tempfile.mkdtemp(prefix="dfdiff-", dir=str(workdir) if workdir else None))
    path = str(base / "table")
    partitioned = spec["partitioned"]
    rec: dict[str, Any] = {"seed": spec.get("seed"), "index": spec.get("index"), "spec": spec}
    try:
        R = setup_table(path, spec)
        stale = DeltaTable(path, version=R)
        solo = solo_run(path, base, spec["loser"], partitioned, R)
        winners = []
        for w in spec["winners"]:
            custom = {"isBlindAppend": True} if w.get("blind") else None
            r = run_op(w, DeltaTable(path), path, partitioned, custom)
            winners.append({"kind": w["kind"], "outcome": r["outcome"], "version": r.get("version"),
                            "exception": r.get("exception"), "message": r.get("message") if r["outcome"] != "commit" else None})
        until = latest_version(path)
        custom = {"readVersion": R} if read_version_metadata else None
        before = data_files(path)
        real = run_op(spec["loser"], stale, path, partitioned, custom)
        written = sorted(data_files(path) - before)
        window = list(range(R + 1, until + 1))
        kind_at = {w["version"]: w["kind"] for w in winners if w["version"] is not None}
        L0 = {"role": "loser", "kind": spec["loser"]["kind"], "op": spec["loser"], "read_version": R, "until": until,
              "window": [{"version": v, "kind": kind_at.get(v)} for v in window], "real": real, "solo": solo,
              "whatif_request": whatif_request(spec["loser"], partitioned, solo), "files_written": written}
        if real["outcome"] == "commit":
            L0["real"]["commit"] = commit_info(path, real["version"])
        losers = [L0]
        # retry: the same operation re-run on a fresh handle after its abort (optionally raced once more)
        if real["outcome"] == "abort" and spec.get("retry") is not None:
            R2 = latest_version(path)
            h2 = DeltaTable(path, version=R2)
            inter = spec["retry"].get("interleave")
            iw = None
            if inter is not None:
                custom_w = {"isBlindAppend": True} if inter.get("blind") else None
                r = run_op(inter, DeltaTable(path), path, partitioned, custom_w)
                iw = {"kind": inter["kind"], "outcome": r["outcome"], "version": r.get("version")}
                winners.append(iw)
            until2 = latest_version(path)
            solo2 = solo_run(path, base, spec["loser"], partitioned, R2) if spec["loser"]["kind"] == "merge" else None
            before2 = data_files(path)
            r2 = run_op(spec["loser"], h2, path, partitioned, {"readVersion": R2} if read_version_metadata else None)
            written2 = sorted(data_files(path) - before2)
            if r2["outcome"] == "commit":
                r2["commit"] = commit_info(path, r2["version"])
            L1 = {"role": "retry", "kind": spec["loser"]["kind"], "op": spec["loser"], "read_version": R2, "until": until2,
                  "window": [{"version": v, "kind": inter["kind"] if inter else None} for v in range(R2 + 1, until2 + 1)],
                  "real": r2, "solo": solo2, "whatif_request": whatif_request(spec["loser"], partitioned, solo2 or solo),
                  "files_written": written2}
            if r2["outcome"] == "abort":
                L1["real_winner"] = until2 if until2 > R2 else None
                L1["real_winner_how"] = "only winner"
            losers.append(L1)
        if real["outcome"] == "abort":
            m = measure_winner(path, base, spec["loser"], partitioned, R, window)
            L0["real_winner"], L0["real_winner_how"] = m["winner"], m["how"]
            L0["prefix_runs"] = m["runs"]
        rec["winners"] = winners
        rec["losers"] = losers
        rec["tool"] = tool_checks(path, losers, base / "cache")
        if rec["tool"]["other_anomalies"]:
            losers[0].setdefault("reasons", []).append({
                "check": "replay", "class": "replay calls a winner an anomaly",
                "detail": f"anomalies at {rec['tool']['other_anomalies']}"})
            losers[0]["agree"] = False
        rec["agree"] = all(L.get("agree") is not False for L in losers)
        rec["engine_error"] = any(L["real"]["outcome"] == "error" for L in losers)
    except Exception as e:  # noqa: BLE001 - a harness failure is recorded, not fatal to the batch
        rec["agree"] = None
        rec["harness_error"] = f"{type(e).__name__}: {e}"[:2000]
        rec["traceback"] = traceback.format_exc()[-4000:]
    rec["elapsed_s"] = round(time.time() - t0, 3)
    if keep and rec.get("agree") is not True:
        dst = Path(keep) / f"s{spec.get('seed')}-{spec.get('index')}"
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(base, dst, ignore=shutil.ignore_patterns("cache"))
        (dst / "record.json").write_text(json.dumps(rec, indent=1, default=str))
        rec["kept"] = str(dst)
    shutil.rmtree(base, ignore_errors=True)
    return rec


# =============================================================================================
# Summary
# =============================================================================================


def pair_key(L: dict) -> str:
    kinds = [w["kind"] for w in L.get("window", []) if w.get("kind")]
    return f"{L['kind']} <- {'+'.join(kinds) if kinds else '(none)'}"


class Summary:
    def __init__(self) -> None:
        self.scenarios = 0
        self.agree = 0
        self.disagree = 0
        self.harness_errors: list[dict] = []
        self.outcomes: Counter = Counter()
        self.by_kind: dict[str, Counter] = defaultdict(Counter)
        self.pairs: dict[str, Counter] = defaultdict(Counter)
        self.checks: Counter = Counter()
        self.classes: dict[str, dict] = {}
        self.disagreements: list[dict] = []
        self.rss: list[tuple[int, float]] = []  # (scenarios done, MB resident in this process tree, JVM included)
        # blame calibration (aborts only): from the orphan files alone, and from the error text with the table
        self.blame: dict[str, dict[str, Any]] = {k: {"aborts": 0, "first": 0, "among": 0, "winner_first": 0, "winner_among": 0, "lengths": []}
                                                 for k in ("files", "text")}

    def add(self, rec: dict) -> None:
        self.scenarios += 1
        if rec.get("harness_error"):
            self.harness_errors.append({"seed": rec.get("seed"), "index": rec.get("index"), "error": rec["harness_error"]})
            return
        if rec.get("agree"):
            self.agree += 1
        else:
            self.disagree += 1
        for L in rec.get("losers", []):
            lab = real_label(L["real"])
            self.outcomes[lab] += 1
            self.by_kind[L["kind"]][lab] += 1
            self.pairs[pair_key(L)][lab] += 1
            if L["real"]["outcome"] == "noop":
                self.checks["noop (not compared)"] += 1
            if L["real"]["outcome"] in ("commit", "abort"):
                self.checks["whatif"] += 1
                if L["real"]["outcome"] == "abort":
                    self.checks["explain_error"] += 1
                    self.checks["explain_error+facts"] += 1
                if L["real"]["outcome"] == "commit" and L["read_version"] < L["real"]["version"] - 1:
                    self.checks["replay"] += 1
            self._blame(L)
            for r in L.get("reasons", []):
                key = f"{r['check']}: {L['kind']} <- {'/'.join(sorted({w['kind'] for w in L.get('window', []) if w.get('kind')})) or '-'}: {r['class']}"
                c = self.classes.setdefault(key, {"count": 0, "examples": []})
                c["count"] += 1
                if len(c["examples"]) < 3:
                    c["examples"].append({"seed": rec.get("seed"), "index": rec.get("index"), "role": L["role"], "detail": r["detail"]})
                if len(self.disagreements) < 500:
                    self.disagreements.append({"seed": rec.get("seed"), "index": rec.get("index"), "role": L["role"],
                                               "pair": pair_key(L), "real": lab, "check": r["check"], "class": r["class"],
                                               "detail": r["detail"]})

    def _blame(self, L: dict) -> None:
        want = L.get("real_winner")
        if L["real"]["outcome"] != "abort" or want is None:
            return
        b = L.get("blame")
        if b and b.get("found") and not b.get("shared_files"):
            f = self.blame["files"]
            f["aborts"] += 1
            f["first"] += bool(b["first"])
            f["among"] += bool(b["among"])
            f["winner_first"] += bool(b["candidates"]) and b["candidates"][0][0] == want
            f["winner_among"] += bool(b["winner_among"])
            f["lengths"].append(b["n"])
        e = L.get("explain_error") or {}
        if "winningVersion" in e:
            t = self.blame["text"]
            t["aborts"] += 1
            wm = e.get("winnerMatch") or {}
            cands = (wm.get("candidates") or []) if wm.get("ambiguous") else (
                [e["winningVersion"]] if e.get("winningVersion") is not None else [])
            t["first"] += e.get("winningVersion") == want  # the text's basis names versions: winner alone
            t["among"] += want in cands
            t["winner_first"] += e.get("winningVersion") == want
            t["winner_among"] += want in cands
            t["lengths"].append(len(cands))

    def blame_figures(self) -> dict:
        """Per basis: aborts, how often the first candidate is the engine's winner (from the files: with
        the engine's exception; `winner_*`: the winning version alone), how often it is among them,
        and the median and 90th-percentile length of the list."""
        out = {}
        for k, b in self.blame.items():
            ls = sorted(b["lengths"])
            pct = (lambda q: ls[min(len(ls) - 1, int(q * len(ls)))] if ls else None)
            out[k] = {"aborts": b["aborts"], "first": b["first"], "among": b["among"],
                      "first_pct": round(100 * b["first"] / b["aborts"], 1) if b["aborts"] else None,
                      "among_pct": round(100 * b["among"] / b["aborts"], 1) if b["aborts"] else None,
                      "winner_first": b["winner_first"], "winner_among": b["winner_among"],
                      "winner_first_pct": round(100 * b["winner_first"] / b["aborts"], 1) if b["aborts"] else None,
                      "winner_among_pct": round(100 * b["winner_among"] / b["aborts"], 1) if b["aborts"] else None,
                      "median_length": pct(0.5), "p90_length": pct(0.9)}
        return out

    def to_dict(self, elapsed: float) -> dict:
        return {
            "scenarios": self.scenarios, "agree": self.agree, "disagree": self.disagree,
            "harness_errors": self.harness_errors,
            "elapsed_s": round(elapsed, 1),
            "scenarios_per_minute": round(60 * self.scenarios / elapsed, 2) if elapsed else None,
            "checks_run": dict(self.checks),
            "blame": self.blame_figures(),
            "rss_mb_by_scenario": self.rss,
            "outcomes": dict(self.outcomes.most_common()),
            "by_loser_kind": {k: dict(v) for k, v in sorted(self.by_kind.items())},
            "pairs": {k: dict(v) for k, v in sorted(self.pairs.items())},
            "disagreement_classes": dict(sorted(self.classes.items(), key=lambda kv: -kv[1]["count"])),
            "disagreements": self.disagreements,
        }


def print_summary(s: dict, out=sys.stdout) -> None:
    p = lambda *a: print(*a, file=out)
    if s.get("versions"):
        p(f"versions: {s['versions']}")
    p(f"scenarios: {s['scenarios']}  agree: {s['agree']}  disagree: {s['disagree']}  harness errors: {len(s['harness_errors'])}")
    for k, b in (s.get("blame") or {}).items():
        p(f"blame from {k}: {b['aborts']} aborts; first candidate the engine's winner {b['first']} ({b['first_pct']}%), "
          f"among the candidates {b['among']} ({b['among_pct']}%); the winning version alone first {b.get('winner_first')} "
          f"({b.get('winner_first_pct')}%), among {b.get('winner_among')} ({b.get('winner_among_pct')}%); "
          f"list length median {b['median_length']}, p90 {b['p90_length']}")
    p(f"elapsed: {s['elapsed_s']} s  ({s['scenarios_per_minute']} scenarios/minute)")
    p(f"checks run: {s['checks_run']}")
    if s.get("rss_mb_by_scenario"):
        p("resident MB (process tree) after n scenarios: " + ", ".join(f"{n}:{m}" for n, m in s["rss_mb_by_scenario"]))
    p("real outcomes (losers and retries): " + ", ".join(f"{k}={v}" for k, v in s["outcomes"].items()))
    p("by loser kind:")
    for k, v in s["by_loser_kind"].items():
        p(f"  {k:15s} " + ", ".join(f"{a}={b}" for a, b in sorted(v.items())))
    if s["disagreement_classes"]:
        p("disagreement classes:")
        for k, v in s["disagreement_classes"].items():
            ex = v["examples"][0]
            p(f"  [{v['count']}] {k}")
            p(f"       e.g. seed={ex['seed']} index={ex['index']} ({ex['role']}): {ex['detail'][:240]}")
    for h in s["harness_errors"][:10]:
        p(f"  harness error seed={h['seed']} index={h['index']}: {h['error'][:200]}")


# =============================================================================================
# Batch runner
# =============================================================================================

_WORKER: dict[str, Any] = {}


def _init_worker(cache_base: str, workdir: str | None, keep: str | None, rvm: bool) -> None:
    os.environ["DELTA_FORENSICS_CACHE_DIR"] = cache_base
    os.environ.setdefault("DELTA_FORENSICS_JVM_ARCHIVE", "use")
    _WORKER.update(cache_base=cache_base, workdir=workdir, keep=keep, rvm=rvm)
    from forensics.runtime.spark import get_spark

    get_spark()  # the JVM's log goes to the run's cache base, which outlives every scenario


def _work(args: tuple[int, int]) -> dict:
    seed, index = args
    rec = run_scenario(gen_spec(seed, index), _WORKER.get("workdir"), _WORKER.get("keep"), _WORKER.get("rvm", True))
    gc.collect()
    return rec


def _tree_rss_mb(root: int) -> float:
    """Resident memory of this process and its descendants (the Spark JVM, workers), from /proc."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from proctree import tree_rss_mb

    return tree_rss_mb(root)


def versions() -> dict:
    """What was tested: the engine's release and the tool's commit (and whether forensics/ had local edits)."""
    import subprocess

    out: dict[str, Any] = {}
    try:
        out["deltalake"] = _deltalake().__version__
    except Exception:  # noqa: BLE001
        out["deltalake"] = None
    with contextlib.suppress(Exception):
        import forensics

        out["tool_path"] = str(Path(forensics.__file__).resolve().parent)
    commit_file = Path(out.get("tool_path", "")).parent / "COMMIT"
    if out.get("tool_path") and Path(out["tool_path"]).parent != REPO:
        # --tool-root: a snapshot (e.g. `git archive`); its COMMIT file, when present, names it
        out["tool_commit"] = commit_file.read_text().strip() if commit_file.exists() else "unknown (--tool-root)"
        return out
    try:
        out["tool_commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10,
                                            check=False).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "forensics"], cwd=REPO, capture_output=True, text=True, timeout=10,
                               check=False).stdout
        out["tool_local_edits"] = sorted(ln[3:] for ln in dirty.splitlines())
    except (OSError, subprocess.SubprocessError):
        pass
    return out


def run_batch(seed: int, indexes: list[int], *, out: str | None = None, keep: str | None = None, jobs: int = 1,
              workdir: str | None = None, read_version_metadata: bool = True,
              progress: Callable[[dict, int, int], None] | None = None) -> dict:
    cache_base = tempfile.mkdtemp(prefix="dfdiff-cache-", dir=workdir)
    summary = Summary()
    t0 = time.time()
    pool = None
    try:
        with open(out, "w") if out else contextlib.nullcontext() as fh:
            if jobs <= 1:
                _init_worker(cache_base, workdir, keep, read_version_metadata)
                it = (_work((seed, i)) for i in indexes)
            else:
                import multiprocessing as mp

                pool = mp.get_context("spawn").Pool(jobs, initializer=_init_worker, maxtasksperchild=200,
                                                     initargs=(cache_base, workdir, keep, read_version_metadata))
                it = pool.imap(_work, [(seed, i) for i in indexes])
            for n, rec in enumerate(it, 1):
                summary.add(rec)
                if n == 1 or n % 25 == 0 or n == len(indexes):
                    summary.rss.append((n, round(_tree_rss_mb(os.getpid()), 1)))
                if fh is not None:
                    fh.write(json.dumps(rec, default=str) + "\n")
                    fh.flush()
                if progress:
                    progress(rec, n, len(indexes))
            if pool is not None:
                pool.close()
                pool.join()
                pool = None
    finally:
        if pool is not None:
            pool.terminate()
        shutil.rmtree(cache_base, ignore_errors=True)
    out = summary.to_dict(time.time() - t0)
    out["versions"] = versions()
    out["seed"], out["indexes"] = seed, [indexes[0], indexes[-1]] if indexes else []
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenarios", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="first scenario index")
    ap.add_argument("--index", type=int, action="append", help="run only these scenario indexes (repeatable)")
    ap.add_argument("--spec", help="run one scenario from its JSON spec (text or @file)")
    ap.add_argument("--out", default=str(HERE / "out" / "differential.jsonl"))
    ap.add_argument("--keep", help="keep the tables of disagreeing scenarios under this directory")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--workdir", help="where scenario temp directories go (default: the system temp dir)")
    ap.add_argument("--no-read-version", action="store_true",
                    help="do not pass readVersion as custom commit metadata for the loser (delta-rs records it itself "
                         "only for some operations)")
    ap.add_argument("--tool-root", help="import `forensics` from this directory (e.g. a `git archive` of a commit) "
                    "instead of this checkout")
    ap.add_argument("--print-spec", action="store_true", help="print the spec(s) and exit")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    rvm = not a.no_read_version
    if a.tool_root:
        root = str(Path(a.tool_root).resolve())
        if not (Path(root) / "forensics" / "__init__.py").exists():
            ap.error(f"--tool-root {root}: no forensics package there")
        sys.path.insert(0, root)  # spawned workers inherit sys.path
    if a.spec:
        text = Path(a.spec[1:]).read_text() if a.spec.startswith("@") else a.spec
        spec = json.loads(text)
        if a.print_spec:
            print(json.dumps(spec, indent=1))
            return 0
        cache_base = tempfile.mkdtemp(prefix="dfdiff-cache-", dir=a.workdir)
        try:
            _init_worker(cache_base, a.workdir, a.keep, rvm)
            rec = run_scenario(spec, a.workdir, a.keep, rvm)
        finally:
            shutil.rmtree(cache_base, ignore_errors=True)
        print(json.dumps(rec, indent=1, default=str))
        return 0 if rec.get("agree") else 1
    indexes = a.index or list(range(a.start, a.start + a.scenarios))
    if a.print_spec:
        for i in indexes:
            print(json.dumps(gen_spec(a.seed, i)))
        return 0
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)

    def progress(rec: dict, n: int, total: int) -> None:
        if a.quiet:
            return
        flag = "ok " if rec.get("agree") else ("ERR" if rec.get("harness_error") else "DIS")
        ls = rec.get("losers", [])
        desc = "; ".join(f"{L['kind']}<-{'+'.join(w['kind'] or '?' for w in L['window']) or '-'}: {real_label(L['real'])}" for L in ls)
        print(f"[{n}/{total}] {flag} seed={rec.get('seed')} index={rec.get('index')} {rec.get('elapsed_s')}s  {desc}", flush=True)
        for L in ls:
            for r in L.get("reasons", []):
                print(f"      {r['check']}: {r['class']}: {r['detail'][:200]}", flush=True)

    s = run_batch(a.seed, indexes, out=a.out, keep=a.keep, jobs=a.jobs, workdir=a.workdir,
                  read_version_metadata=rvm, progress=progress)
    if a.out:
        Path(a.out + ".summary.json").write_text(json.dumps(s, indent=1, default=str))
    print_summary(s)
    return 0 if s["disagree"] == 0 and not s["harness_errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
