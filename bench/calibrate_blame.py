"""Calibrate the ranking of an aborted attempt's candidates on differential runs, and report it on
held-out seeds.

bench/differential.py records, for every abort whose orphan files the tool found, each candidate
the attribution gave with the ranking's inputs (whether the files' content named the operation,
whether the winner landed after the attempt's last file, the hypothesis's place in the ladder,
how many read versions give the answer and how long each was the newest before the attempt's
first file, the read versions, the winner). This script re-orders
those candidates under each ranking below and counts how often the first is the engine's winner
(with the engine's exception). Choose on the calibration seeds; report on the others.

    python bench/calibrate_blame.py --calibrate bench/out/cal-*.jsonl --report bench/out/held-*.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Callable
from pathlib import Path

Key = Callable[[dict], tuple]


def _weight(c: dict) -> float:
    """The tool's time weight where the record has it (file times trusted), else the read-version count."""
    return c["weight"] if c.get("weight") is not None else c["support"]


def _late_odds(c: dict) -> float:
    """A late winner's chance that the job's commit check came at least its lag after the last file,
    with that delay log-uniform from 10 ms to an hour (in place of ranking every late winner last)."""
    lag = c.get("lag_ms")
    if not c["late"] or lag is None:
        return 1.0
    return max(0.0, math.log(3.6e6 / max(lag, 10)) / math.log(3.6e6 / 10))


def _tenure(c: dict) -> float:
    """How long (ms) its read versions were the newest before the first file: a job's start taken as
    equally likely at any moment (no preference for short jobs), for comparison."""
    spans = c.get("spans")
    return sum(hi - lo for _, lo, hi in spans) if spans is not None else c["support"]

RANKINGS: dict[str, Key] = {
    "content, late, ladder, later winner": lambda c: (not c["content"], c["late"], c["h"], -c["w"]),
    "content, late, ladder, support, earlier winner": lambda c: (not c["content"], c["late"], c["h"], -c["support"], c["w"]),
    "content, late, ladder, newest read": lambda c: (not c["content"], c["late"], c["h"], -c["reads"][1], c["w"]),
    "content, late, support, ladder": lambda c: (not c["content"], c["late"], -c["support"], c["h"], c["w"]),
    "content, late, support, ladder, later winner": lambda c: (c.get("stale", False), not c["content"], c["late"], -c["support"], c["h"], -c["w"]),
    # the tool's ranking (forensics.evidence.attribution.rank_key; `stale` and `weight` are absent from older records)
    "content, late, time weight, ladder, later winner": lambda c: (c.get("stale", False), not c["content"], c["late"], -_weight(c), c["h"], -c["w"]),
    "content, late, tenure, ladder, later winner": lambda c: (c.get("stale", False), not c["content"], c["late"], -_tenure(c), c["h"], -c["w"]),
    "content, time weight x late by its lag, ladder, later winner": lambda c: (c.get("stale", False), not c["content"], -_weight(c) * _late_odds(c), c["h"], -c["w"]),
    "content, support, late, ladder, later winner": lambda c: (not c["content"], -c["support"], c["late"], c["h"], -c["w"]),
    "content, late, support, later winner": lambda c: (not c["content"], c["late"], -c["support"], -c["w"], c["h"]),
    "late, support, content, ladder": lambda c: (c["late"], -c["support"], not c["content"], c["h"], -c["w"]),
    "content, late, earlier winner": lambda c: (not c["content"], c["late"], c["w"], c["h"]),
    "content, ladder, support (late ignored)": lambda c: (not c["content"], c["h"], -c["support"], c["w"]),
    "ladder only": lambda c: (c["h"], -c["support"], c["w"]),
}


TOOL = "content, late, time weight, ladder, later winner"  # forensics.evidence.attribution.rank_key


def aborts(paths: list[str]) -> list[dict]:
    """(candidates with features, engine winner, engine exception) of every abort whose files were found."""
    out = []
    for p in paths:
        for line in Path(p).read_text().splitlines():
            rec = json.loads(line)
            # bench/differential.py: "losers", each with its "real"; bench/differential_spark.py: one "loser", "real" beside it
            losers = rec.get("losers") or ([{**rec["loser"], "real": rec["real"], "kind": rec["spec"]["loser"]["kind"]}] if "loser" in rec else [])
            for L in losers:
                b = L.get("blame") or {}
                if L["real"].get("outcome") != "abort" or L.get("real_winner") is None or not b.get("found") or b.get("shared_files"):
                    continue
                out.append({"features": b.get("features") or [], "want": (L["real_winner"], L["real"]["exception"]),
                            "text_winner": (L.get("explain_error") or {}).get("winningVersion"),
                            "seed": rec.get("seed", rec["spec"].get("seed")), "index": rec.get("index", rec["spec"].get("index")),
                            "kind": L.get("kind")})
    return out


def score(rows: list[dict], key: Key) -> dict:
    """How often the first candidate is the engine's (winner, exception), and is among them; the
    same for the winning version alone (the question "which commit beat me", whatever exception
    the first candidate names), over the candidates' distinct winners in rank order; and the first
    winner among the candidates that raise the engine's exception (what an error text tied to this
    attempt leaves)."""
    first = among = first_w = among_w = first_e = text_first = 0
    lengths, winner_lengths = [], []
    for r in rows:
        cands = sorted(r["features"], key=key)
        got = [(c["w"], c["e"]) for c in cands]
        winners = list(dict.fromkeys(w for w, _ in got))
        lengths.append(len(got))
        winner_lengths.append(len(winners))
        first += bool(got) and got[0] == tuple(r["want"])
        among += tuple(r["want"]) in got
        first_w += bool(winners) and winners[0] == r["want"][0]
        # the error text names the exception: the attempt's candidates that raise it, in rank order
        named = [w for w, e in got if e == r["want"][1]]
        first_e += bool(named) and named[0] == r["want"][0]
        among_w += r["want"][0] in winners
        text_first += r.get("text_winner") == r["want"][0]

    def pct(k: int) -> float | None:
        return round(100 * k / n, 1) if n else None

    def p90(xs: list[int]) -> int | None:
        xs = sorted(xs)
        return xs[int(0.9 * (len(xs) - 1))] if xs else None

    n = len(rows)
    return {"aborts": n, "first": first, "first_pct": pct(first), "among": among, "among_pct": pct(among),
            "median_length": statistics.median(lengths) if lengths else None, "p90_length": p90(lengths),
            "winner_first": first_w, "winner_first_pct": pct(first_w), "winner_among": among_w,
            "first_given_exception": first_e, "first_given_exception_pct": pct(first_e),
            "text_with_table_first": text_first, "text_with_table_first_pct": pct(text_first),
            "winner_among_pct": pct(among_w),
            "winner_median_length": statistics.median(winner_lengths) if winner_lengths else None,
            "winner_p90_length": p90(winner_lengths)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibrate", nargs="+", required=True, help="differential JSON lines to choose the ranking on")
    ap.add_argument("--report", nargs="*", default=[], help="held-out differential JSON lines to report it on")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    cal = aborts(a.calibrate)
    table = {name: score(cal, key) for name, key in RANKINGS.items()}
    best = max(table, key=lambda n: (table[n]["first"], -list(RANKINGS).index(n)))
    out = {"calibration": table, "chosen": best}
    if a.report:
        held = aborts(a.report)
        out["held_out"] = {best: score(held, RANKINGS[best]),
                           "tool's ranking": score(held, RANKINGS[TOOL])}
    if a.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"calibration ({len(cal)} aborts):")
    for name, s in table.items():
        print(f"  {name:48s} first {s['first']:4d} ({s['first_pct']}%)  among {s['among']} ({s['among_pct']}%)  "
              f"length median {s['median_length']} p90 {s['p90_length']}")
    print(f"chosen: {best}")
    for name, s in (out.get("held_out") or {}).items():
        print(f"held out, {name}: {s['aborts']} aborts, first {s['first']} ({s['first_pct']}%), among {s['among']} ({s['among_pct']}%), "
              f"length median {s['median_length']} p90 {s['p90_length']}; the winning version alone: first "
              f"{s['winner_first']} ({s['winner_first_pct']}%), among {s['winner_among']} ({s['winner_among_pct']}%), "
              f"distinct winners median {s['winner_median_length']} p90 {s['winner_p90_length']}; given the exception "
              f"(an error text tied to this attempt) first {s['first_given_exception']} ({s['first_given_exception_pct']}%); "
              f"the run's explain-error given the text and the table first {s['text_with_table_first']} ({s['text_with_table_first_pct']}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
