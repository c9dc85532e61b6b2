"""`stats TABLE [--window 1h]`: contention statistics (hot partitions and files, operation pairs,
concurrency over time, retry indications). JSON shape: forensics/analysis/stats.py docstring."""

from __future__ import annotations

import argparse

from forensics.cli.common import add_table_arguments, open_table, print_json, report_findings


def add_parser(sub) -> None:
    p = sub.add_parser("stats", help="contention statistics: hot partitions/files per window, operation-pair matrix, concurrency, retries")
    add_table_arguments(p)
    p.add_argument("--window", default="1h", help="time bucket (e.g. 30s, 15m, 1h, 1d; default 1h)")
    p.add_argument("--from", dest="from_v", type=int, metavar="V", help="first version (inclusive)")
    p.add_argument("--to", dest="to_v", type=int, metavar="V", help="last version (inclusive)")
    p.add_argument("--rules", metavar="PROFILE", help="rule profile for every commit (default: from each commit's engineInfo)")
    p.add_argument("--top", type=int, default=10, help="rows per ranking (default 10)")
    p.add_argument("--no-evidence", action="store_true", help="leave out aborted attempts (orphan files)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    table = open_table(args)
    st = table.stats_report(window=args.window, from_version=args.from_v, to_version=args.to_v, top=args.top,
                            with_evidence=not args.no_evidence)
    if args.json:
        print_json(st.to_dict())
    else:
        from forensics.cli.render import print_renderable

        print_renderable(stats_view(st.to_dict()))
    return report_findings(args, table.findings + st.findings)


def stats_view(st: dict):
    """Rich tables for the terminal; every log string through forensics.safe."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from forensics.safe import text as t

    parts: list = [Text(f"{st['table']}  versions {st['from_version']}..{st['to_version']}  window {st['window']}", style="bold")]
    parts.append(Text("  ".join(f"{k}: {v}" for k, v in st["totals"].items())))
    tb = Table(title="Most contended partitions", title_justify="left")
    for h in ("partition", "commits", "stale windows", "overlaps", "conflicts", "reorders", "aborted"):
        tb.add_column(h, justify="left" if h == "partition" else "right")
    for p in st["partitions"]:
        tb.add_row(t(p["partition"]), *(str(p[k]) for k in ("commits", "stale_windows", "overlaps", "conflicts", "reorders", "aborted_attempts")))
    parts.append(tb)
    if st["files"]:
        tf = Table(title="Most contended files", title_justify="left")
        for h in ("file", "conflicts", "reorders", "aborted"):
            tf.add_column(h, justify="left" if h == "file" else "right")
        for f in st["files"]:
            tf.add_row(t(f["file"]), str(f["conflicts"]), str(f["reorders"]), str(f["aborted_attempts"]))
        parts.append(tf)
    if len(st["buckets"]) > 1:
        tbk = Table(title=f"Hottest partition per {st['window']} window", title_justify="left")
        for h in ("window start (UTC)", "partition", "stale windows", "overlaps", "conflicts", "reorders", "aborted"):
            tbk.add_column(h, justify="left" if h in ("window start (UTC)", "partition") else "right")
        for b in st["buckets"]:
            if b["partitions"]:
                p = b["partitions"][0]
                tbk.add_row(t(b["start_utc"] or "?"), t(p["partition"]), *(str(p[k]) for k in ("stale_windows", "overlaps", "conflicts", "reorders", "aborted_attempts")))
        parts.append(tbk)
    m = st["operation_matrix"]
    if m["cells"]:
        cats = m["categories"]
        cell = {(c["current"], c["winner"]): c for c in m["cells"]}
        tm = Table(title="Operation pairs: current (rows) vs winner (columns): pairs / conflict / reordered / aborted", title_justify="left")
        tm.add_column("current \\ winner")
        for c in cats:
            tm.add_column(c, justify="right")
        for a in cats:
            row = []
            for b in cats:
                c = cell.get((a, b))
                row.append("" if c is None else f"{c['pairs']} / {c['conflict']} / {c['reordered']} / {c['aborted']}")
            tm.add_row(a, *row)
        parts.append(tm)
    conc = st["concurrency"]
    if conc:
        tc = Table(title="Concurrency (read→commit windows overlapping each bucket)", title_justify="left")
        for h in ("bucket start (UTC)", "transactions", "max at once", "commits", "stale windows"):
            tc.add_column(h, justify="left" if h.startswith("bucket") else "right")
        for c in conc[:48]:
            tc.add_row(c["start_utc"] or "?", str(c["transactions"]), str(c["max_concurrent"]), str(c["commits"]), str(c["stale_windows"]))
        parts.append(tc)
    r = st["retries"]
    parts.append(Text(f"Retry indications: operationMetrics {r['metric_totals'] or 'none'}; "
                      f"{len(r['repeats'])} repeated commit(s) after a gap (inferred); {len(r['attempts'])} aborted attempt(s)"))
    for x in r["repeats"][:10]:
        parts.append(t(f"  v{x['version']} repeats v{x['previous_version']} ({x['writer']}, {x['operation']}) after {x['gap_ms']} ms"))
    for n in st.get("notes", []):
        parts.append(Text(n, style="dim"))
    return Group(*parts)
