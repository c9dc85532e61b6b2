"""Rich renderings for the terminal. Every value from a log goes through forensics.safe."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Iterable

from rich.console import Group, RenderableType
from rich.text import Text

from forensics import safe
from forensics.cli.columns import Col, console, fit_table, print_fit, wrapped
from forensics.model import Snapshot
from forensics.times import fmt_duration, fmt_time, utc_default

VERDICT_STYLE = {"clean": "green", "reordered": "yellow", "anomaly": "bold red", "skipped": "dim", "abort": "bold red", "commit": "green"}


def print_renderable(r: RenderableType) -> None:
    """Print to stdout; a large fit_table's rows are written by print_fit, not laid out by Rich's Table."""
    print_fit(r, console())


def print_lines(lines: list[tuple[str, str]]) -> None:
    """(Rich style, inert text) lines, wrapped at words under their own indent (a bullet's text
    under its text); a word too long for the terminal ends in an ellipsis."""
    from rich.padding import Padding
    from rich.table import Table

    out: list[RenderableType] = []
    for style, line in lines:
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        bullet = body[:2] if body[:2] in ("· ", "• ") else ""
        text = Text(body[len(bullet):], style=style, overflow="ellipsis")
        if bullet:
            grid = Table.grid()
            grid.add_column(width=2, style=style)
            grid.add_column(overflow="ellipsis")
            grid.add_row(bullet, text)
            out.append(Padding(grid, (0, 0, 0, indent), expand=False))
        else:
            out.append(Padding(text, (0, 0, 0, indent), expand=False) if indent else text)
    c = console()
    with c.capture() as cap:
        c.print(Group(*out), overflow="ellipsis")
    # no padding after the words (before any closing style code)
    c.file.write("".join(re.sub(r" +((?:\x1b\[[0-9;]*m)*)$", r"\1", line) + "\n" for line in cap.get().splitlines()))


def _b(v: Any) -> str:
    return "" if v is None else ("yes" if v else "no")


HISTORY_COLUMNS = (
    Col("version", justify="right"),
    Col("time"),
    Col("operation", squeeze=10, wrap=True),
    Col("readVersion", 2, "right"),
    Col("isolation", 4, squeeze=13),
    Col("blind"),
    Col("+add", justify="right"),
    Col("-rm", justify="right"),
    Col("partitions", squeeze=15, wrap=True),
    Col("engine", 5, squeeze=12),
    Col("user", 6, squeeze=10),
)


def history_table(rows: list[dict[str, Any]], title: str = "", utc: bool | None = None, width: int | None = None) -> RenderableType:
    """One row per version; on a narrow terminal readVersion, isolation, engine and user give way
    (in that order, from the last) to version, time, operation, blind, +add/-rm and partitions.
    Cells are inert strings (fit_table never reads one as markup), each distinct value made inert
    once: a long log repeats a few operations, isolation levels, engines and users."""
    utc = utc_default() if utc is None else utc
    seen: dict[tuple[Any, int], str] = {}

    def inert(v: Any, n: int) -> str:
        if not isinstance(v, str):  # a log may hold any JSON value here
            return safe.inert(v, n)
        got = seen.get((v, n))
        if got is None:
            got = seen[(v, n)] = safe.inert(v, n)
        return got

    cells = []
    for r in rows:
        parts = r.get("partitionsTouched") or []
        # one partition a line: a narrow column never splits a partition value
        plines = [inert(",".join(f"{k}={v}" for k, v in p.items()), 60) for p in parts[:3]]
        plines += [f"+{len(parts) - 3} more"] if len(parts) > 3 else []
        read = "" if r.get("readVersion") is None else str(r["readVersion"])
        stale = bool(read) and r["readVersion"] < r["version"] - 1
        cells.append((
            str(r["version"]),
            fmt_time(r.get("timestamp"), utc),
            inert(r.get("operation") or "—", 40),
            Text(read, style="yellow") if stale else read,
            inert(r.get("isolationLevel") or "", 20),
            _b(r.get("isBlindAppend")),
            str(r.get("numAddFiles", "")),
            str(r.get("numRemoveFiles", "")),
            "\n".join(plines),
            inert(r.get("engineInfo") or "", 40),
            inert(r.get("userName") or "", 24),
        ))
    return fit_table(HISTORY_COLUMNS, cells, width, title=Text(safe.inert(title, 300), style="italic") if title else None)


# `history --full`: the fields of a version's block, in this order (its heading holds version, time, operation).
_DETAIL_KEYS = ("inCommitTimestamp", "readVersion", "isolationLevel", "isBlindAppend", "txnId", "engineInfo", "clientVersion",
                "userName", "userId", "job", "notebook", "clusterId", "userMetadata", "tags", "operationParameters",
                "operationMetrics", "otherCommitInfo", "numAddFiles", "numRemoveFiles", "numCdcFiles", "partitionsTouched",
                "txnAppIds", "source")


def history_details(rows: list[dict[str, Any]], title: str = "", utc: bool | None = None) -> RenderableType:
    """`history --full`: one block per version with every field of its `history --json` object
    that has a value (maps one `key: value` a line, numbers as numbers), so nothing of the
    commitInfo needs DESCRIBE HISTORY."""
    from rich.table import Table

    utc = utc_default() if utc is None else utc
    out: list[RenderableType] = [Text(safe.inert(title, 300), style="italic")] if title else []
    for r in rows:
        head = Text(f"version {r['version']}", style="bold")
        head.append(f"  {fmt_time(r.get('timestamp'), utc)}  ")
        head.append(safe.text(r.get("operation") or "(no commitInfo)", "bold magenta", 60))
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="cyan", no_wrap=True)
        grid.add_column(overflow="fold")
        for k in _DETAIL_KEYS:
            v = r.get(k)
            if v is None or v == {} or v == [] or (k == "source" and v == "commit"):
                continue
            if k == "inCommitTimestamp":
                v = fmt_time(v, utc)
            elif k == "partitionsTouched":
                v = "; ".join(",".join(f"{pk}={pv}" for pk, pv in p.items()) for p in v)
            if isinstance(v, dict):
                grid.add_row(Text(k), Text(""))
                for mk, mv in v.items():
                    grid.add_row(Text("  " + safe.inert(mk, 80)), safe.text(_detail_value(mv), max_len=2000))
            else:
                grid.add_row(Text(k), safe.text(_detail_value(v), max_len=4000))
        out += [head, grid, Text("")]
    return Group(*out)


def _detail_value(v: Any) -> str:
    import json

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False)
    return str(v)


SNAPSHOT_COLUMNS = (Col("path", squeeze=30, wrap=True), Col("partition", 1, squeeze=16, wrap=True),
                    Col("size", justify="right"), Col("DV", 2, squeeze=8), Col("added in", justify="right"))


def snapshot_view(s: Snapshot, location: str, limit: int = 200, width: int | None = None) -> RenderableType:
    head = Text()
    head.append(f"Snapshot of {safe.inert(location, 300)} at version {s.version}\n", style="bold")
    base = f"checkpoint {s.base_checkpoint}" if s.base_checkpoint is not None else "commit 0"
    head.append(f"replayed from {base}; {len(s.files)} active file(s)\n")
    if s.protocol:
        p = s.protocol
        feats = sorted(set((p.reader_features or ()) + (p.writer_features or ())))
        head.append(f"protocol: reader {p.min_reader_version}, writer {p.min_writer_version}")
        head.append(f"; features: {safe.inert(', '.join(feats), 400)}\n" if feats else "\n")
    if s.metadata:
        m = s.metadata
        head.append(f"table id: {safe.inert(m.id)}; partition columns: {safe.inert(', '.join(m.partition_columns) or '(none)')}\n")
        iso = m.configuration.get("delta.isolationLevel")
        if iso:
            head.append(f"delta.isolationLevel = {safe.inert(iso)}\n")
    if s.app_transactions:
        head.append("app transactions: " + safe.inert(", ".join(f"{k}={v}" for k, v in sorted(s.app_transactions.items())), 400) + "\n")
    cells = [
        (
            safe.text(f.path, max_len=300),
            safe.text(", ".join(f"{k}={v}" for k, v in f.partition_values.items()), max_len=200),
            "" if f.size is None else f"{f.size:,}",
            safe.text(f.deletion_vector.unique_id if f.deletion_vector else "", max_len=40),
            f"≤{f.version}" if s.base_checkpoint is not None and f.version == s.base_checkpoint else str(f.version),
        )
        for f in s.files[:limit]
    ]
    t = fit_table(SNAPSHOT_COLUMNS, cells, width)
    parts: list[RenderableType] = [head, t]
    if len(s.files) > limit:
        parts.append(Text(f"… {len(s.files) - limit} more file(s); use --json for all", style="dim"))
    return Group(*parts)


def findings_block(findings: Iterable[Any]) -> Text:
    out = Text()
    for f in findings:
        style = {"error": "red", "warning": "yellow"}.get(f.severity, "dim")
        out.append(safe.inert(f.one_line(), 1000) + "\n", style=style)
    return out


SETS_COLUMNS = (
    Col("version", justify="right"), Col("operation", squeeze=10), Col("read predicate (partition)", squeeze=16, wrap=True),
    Col("data predicates", 1, squeeze=16, wrap=True), Col("files read", justify="right"), Col("bound"),
    Col("writes", 2, squeeze=10, wrap=True), Col("blind", 3),
)


def sets_view(items: list[dict[str, Any]], width: int | None = None) -> RenderableType:
    cells = []
    for it in items:
        r, w = it["read"], it["write"]
        files = "—" if r["partitionPredicate"] is None and not r["files"] else str(len(r["files"]))
        writes = f"+{len(w['adds'])} -{len(w['removes'])}" + (" meta" if w["metadataChanged"] else "") + (" proto" if w["protocolChanged"] else "")
        if w["appIds"]:
            writes += " txn:" + ",".join(w["appIds"])
        cells.append((
            str(it["version"]),
            safe.text(it["operation"] or "—", max_len=30),
            safe.text(r["partitionPredicate"] if r["partitionPredicate"] is not None else "(no read)", max_len=120),
            safe.text("; ".join(r["dataPredicates"]), max_len=120),
            files + (" +whole table" if r["wholeTable"] else ""),
            Text(r["filesBound"], style={"exact": "green", "superset": "yellow", "subset": "yellow", "unknown": "red"}[r["filesBound"]]),
            safe.text(writes, max_len=80),
            _b(w["isBlindAppend"]),
        ))
    return fit_table(SETS_COLUMNS, cells, width)


def replay_view(report: Any, show_skipped: bool = False, durations: dict[int, int | None] | None = None,
                width: int | None = None, silent: Any = None) -> RenderableType:
    """The replay table. Under a counterfactual (another isolation level or rule profile) an abort is
    what the scenario "would abort", not an anomaly of the log, and no likely reason is guessed.
    The rule profile is said once above the table; a row's detail keeps only what is its own.
    `durations`: read→commit time per version (the window's length), where known. `silent` (a
    forensics.analysis.silent.SilentLog): commits with no readVersion are said first, so a log that
    cannot show conflicts never reads as "no conflicts", and aborted attempts are rows of their own."""
    from forensics import in_words

    scenario = bool(report.isolation_level or report.rules)
    c = report.counts
    durations = durations or {}
    width = width or console().width
    pairs = report.reorders.forgiven_pairs
    tally = [Text(f"{report.total_commits} commits; {report.not_concurrent} had no concurrent winner;"),
             Text(f"{len(report.verdicts)} window(s) replayed:")]
    for k in ("clean", "reordered", "anomaly", "skipped"):
        label = "would abort" if scenario and k == "anomaly" else k
        if k == "reordered":
            label += f" ({pairs} forgiven pair{'' if pairs == 1 else 's'})"
        tally.append(Text(f"{c.get(k, 0)} {label}", style=VERDICT_STYLE[k]))
    attempts = list(silent.attempts) if silent is not None else []
    if attempts:
        tally.append(Text(f"{len(attempts)} aborted attempt{'' if len(attempts) == 1 else 's'}", style="bold red"))
    head = Text()
    head.append(f"Replay of {safe.inert(report.location, 300)}\n", style="bold")
    if silent is not None and silent.no_read_version is not None:
        head.append(_silent_words(silent) + "\n", style="yellow")
    head.append_text(wrapped(tally, width))
    if report.isolation_level or report.rules:
        head.append(f"\n(counterfactual: isolation {report.isolation_level or 'as recorded'}, rules {report.rules or 'per engineInfo'})", style="dim")
    shown = [v for v in sorted(report.verdicts.values(), key=lambda x: x.version) if v.verdict != "skipped" or show_skipped]
    profiles = Counter(v.profile_description for v in report.verdicts.values() if v.profile_description)
    for desc, n in sorted(profiles.items(), key=lambda kv: -kv[1]):
        said = in_words(desc).removeprefix("the rules of ")
        head.append(f"\nrules: {safe.inert(said, 300)} ({n} window{'' if n == 1 else 's'})", style="dim")
    if shown:
        head.append("\nwindow: winning commits · time from the read version's commit to this commit", style="dim")
    cols = [
        Col("version", justify="right"),
        Col("readVersion", justify="right"),
        Col("operation", 1, squeeze=10, wrap=True),
        Col("window", 3, "right"),
        Col("verdict"),
        Col("winner / exception", squeeze=30, wrap=True),
        Col("isolation", 4, squeeze=12),
        Col("detail", 2, squeeze=24, wrap=True),
    ]
    several_profiles = len({v.profile for v in shown if v.profile}) > 1
    if several_profiles:
        cols.insert(6, Col("profile", 5, squeeze=10))
    cells = []
    for v in shown:
        ms = durations.get(v.version)
        row = [
            str(v.version),
            "" if v.read_version is None else str(v.read_version),
            safe.text(v.operation or "—", max_len=30),
            f"{len(v.window)}" + (f" · {fmt_duration(ms)}" if ms is not None and v.window else ""),
            Text("would abort" if scenario and v.verdict == "anomaly" else v.verdict, style=VERDICT_STYLE.get(v.verdict, "")),
            safe.text(_winner_or_exception(v), max_len=300),
            safe.text(v.isolation_level or "", max_len=20),
            safe.text(in_words(_replay_detail(v, scenario)), max_len=300),
        ]
        if several_profiles:
            row.insert(6, safe.text(v.profile, max_len=30))
        cells.append(((v.version, 0), row))
    for a in attempts:
        row = _attempt_row(a)
        if several_profiles:
            row.insert(6, "")
        cells.append(((a.winning_version if a.winning_version is not None else 1 << 62, 1), row))
    cells.sort(key=lambda kv: kv[0])
    skipped = c.get("skipped", 0)
    tail = Text(f"{skipped} skipped window(s) hidden; --all shows them", style="dim") if skipped and not show_skipped else Text("")
    if attempts:
        tail.append(("\n" if tail.plain else "") + "aborted: a transaction that never reached the log, seen by its orphan files "
                    "(inferred); `evidence TABLE` gives every candidate and its basis, `explain-error TABLE --error-file "
                    "FILE` the winner of an error you have", style="dim")
    elif silent is not None and silent.attempts_why and silent.no_read_version is None:
        tail.append(("\n" if tail.plain else "") + "aborted attempts: " + safe.inert(silent.attempts_why, 300), style="dim")
    return Group(head, fit_table(cols, [r for _, r in cells], width), tail)


def _silent_words(silent: Any) -> str:
    """The first thing a replay of a log that records no readVersion says: how many, why, who wrote them."""
    n = silent.no_read_version
    writers = ", ".join(f"{w} ({k})" if len(n.writers) > 1 else w for w, k in n.writers[:3])
    writers += f" and {len(n.writers) - 3} more" if len(n.writers) > 3 else ""
    found = len(silent.attempts)
    if found:
        tail = (f"The evidence found {found} aborted attempt{'' if found == 1 else 's'}, listed below; "
                "`evidence` and `explain-error` say more.")
    else:
        tail = f"Aborted attempts: {silent.attempts_why}." if silent.attempts_why else "The evidence found no aborted attempt."
    return safe.inert(f"{n.commits} of {n.total} commits record no readVersion, written by {writers}: {n.why}. " + tail, 1200)


def _attempt_row(a: Any) -> list[str | Text]:
    """An aborted attempt as a replay row: what it most likely read, did and lost to (inferred)."""
    rv = a.read_versions
    reads = "" if rv is None else (str(rv[0]) if rv[0] == rv[1] else f"{rv[0]}-{rv[1]}")
    how = {"content": "its files show it", "hypothesis": "first guess whose replay aborts"}.get(a.operation_from, "not known")
    where = ", ".join(a.partitions[:3]) + (f" and {len(a.partitions) - 3} more" if len(a.partitions) > 3 else "")
    detail = f"inferred; {a.files} orphan file{'' if a.files == 1 else 's'} in {where}; operation: {how}"
    return [
        Text(a.id.replace("attempt-", "attempt "), style="bold red"),
        reads,
        safe.text(a.operation or "—", max_len=30),
        "",
        Text("aborted", style=VERDICT_STYLE["abort"]),
        safe.text(f"lost to {a.answer}" if a.winning_version is not None else "no winner found", max_len=300),
        "",
        safe.text(detail, max_len=300),
    ]


def _nums(d: dict[str, Any], keys: Iterable[str]) -> list[str]:
    return [str(d[k]) for k in keys]


def _winner_or_exception(v: Any) -> str:
    if v.verdict == "anomaly":
        return f"{v.exception} vs v{v.winning_version}" if v.exception else "—"
    if v.verdict == "reordered":
        return "forgiven: " + ", ".join(f"v{x}" for x in v.reordered_before)
    return ""


def _replay_detail(v: Any, scenario: bool) -> str:
    """What is the row's own: the likely reason of an anomaly, the rule a scenario would abort with,
    the certainty notes of a pass (the profile's description is said once above the table)."""
    if v.verdict == "anomaly":
        return f"{v.rule} rule" if scenario else f"likely: {v.likely_reason}"
    desc = v.profile_description
    if desc and desc in v.why:
        return v.why.split(desc, 1)[1].strip("; ")
    return v.why


def whatif_view(res: Any) -> RenderableType:
    from forensics import in_words, rule_in_words

    r = res.result
    out = Text()
    style = VERDICT_STYLE.get(r.verdict, "")
    out.append("verdict: ", style="bold")
    out.append(r.verdict.upper(), style=style)
    if r.exception:
        out.append(f"  {r.exception} against v{r.winning_version} ({rule_in_words(r.rule)})", style=style)
    out.append(f"\nprofile: {safe.inert(r.profile)} ({safe.inert(in_words(res.profile_why), 300)})\n")
    out.append(f"isolation level: {res.isolation_level}; certainty: {r.certainty.value}\n")
    out.append(f"checked against: {', '.join('v' + str(v) for v in res.winners) or 'no winning commits'}\n")
    out.append(f"read: {safe.inert(in_words(res.read_summary), 800)}\nwrite: {safe.inert(in_words(res.write_summary), 300)}\n")
    if r.partition:
        out.append(f"partition: {safe.inert(r.partition)}\n")
    if r.file:
        out.append(f"file: {safe.inert(r.file)}\n")
    if r.reordered_before:
        out.append(f"serialized before: {', '.join('v' + str(v) for v in r.reordered_before)} (reordered)\n", style="yellow")
    for n in res.notes:
        out.append(f"note: {safe.inert(in_words(n), 400)}\n", style="dim")
    out.append("\nmessage the engine would print:\n", style="bold")
    out.append(safe.inert_multiline(r.message, 4000) + "\n")
    return out


def counterfactual_view(cf: Any):
    """Terminal rendering: one line per change, log strings made inert."""
    from rich.console import Group
    from rich.text import Text

    from forensics.safe import inert

    lines = [Text(f"Counterfactual: {cf.scenario} ({cf.certainty})", style="bold")]
    lines.append(Text(f"  {cf.summary()}", style="dim"))
    for key, style in (("appear", "red"), ("vanish", "green"), ("unknown", "dim")):
        items = getattr(cf, key)
        lines.append(Text(f"  {key}: {len(items)}", style=style))
        for c in items[:50]:
            lines.append(Text(f"    {inert(c.one_line(), 300)}", style=style))
    if cf.partition_by is not None:
        lines.append(Text(f"  files placed {cf.files_placed}, cannot be told {cf.files_unknown}", style="dim"))
    for n in cf.notes:
        lines.append(Text(f"  {inert(n, 500)}", style="dim"))
    return Group(*lines)


STATS_COUNTERS = (  # (key, header) of a partition's counters; reorders are reordered commits
    ("commits", "commits"), ("stale_windows", "stale\nwindows"), ("overlaps", "overlaps"),
    ("conflicts", "conflicts"), ("reorders", "reordered"), ("aborted_attempts", "aborted"))


def stats_view(st: Any, utc: bool | None = None, width: int | None = None) -> RenderableType:
    """`stats` for the terminal, from a forensics.analysis Stats; every log string through forensics.safe.
    Counts are in words: "reordered" is commits (the replay's count), forgiven pairs are said apart."""
    width = width or console().width
    utc = utc_default() if utc is None else utc
    tot, wl = st.totals, st.window_lengths
    parts: list[RenderableType] = [Text(f"{safe.inert(st.table, 300)}  versions {st.from_version}..{st.to_version}  window {st.window}", style="bold")]
    items = [f"commits: {tot['commits']}", f"stale windows: {tot['stale_windows']}", f"conflicts: {tot['conflicts']}",
             f"reordered commits: {tot['reordered_commits']} ({tot['forgiven_pairs']} forgiven pair{'' if tot['forgiven_pairs'] == 1 else 's'})",
             f"aborted attempts: {tot['aborted_attempts']}", f"skipped windows: {tot['skipped']}"]
    if tot.get("aborted_conflicts"):  # conflicts that never reached the log: a silent log's only ones
        items.insert(3, Text(f"conflicts from aborted attempts: {tot['aborted_conflicts']} ({tot['aborted_known_winner']} known "
                             f"winner, {tot['aborted_ambiguous']} ambiguous; inferred)", style="bold red"))
    if wl.get("longest_ms") is not None:
        items.append(f"longest window: {fmt_duration(wl['longest_ms'])} (v{wl['longest_version']}; median {fmt_duration(wl['median_ms'])})")
    parts.append(wrapped(items, width))
    keys = [k for k, _ in STATS_COUNTERS]
    cols = [Col("partition", squeeze=16, wrap=True)] + [Col(h, justify="right") for _, h in STATS_COUNTERS]
    parts += [Text("\nMost contended partitions", style="bold"),
              fit_table(cols, [[safe.text(p["partition"])] + _nums(p, keys) for p in st.partitions], width)]
    if st.files:
        fkeys = ["conflicts", "reorders", "aborted_attempts"]
        cols = [Col("file", squeeze=30, wrap=True), Col("conflicts", justify="right"), Col("reordered", justify="right"),
                Col("aborted", justify="right")]
        parts += [Text("\nMost contended files", style="bold"),
                  fit_table(cols, [[safe.text(f["file"], max_len=400)] + _nums(f, fkeys) for f in st.files], width)]
    if len(st.buckets) > 1:
        cols = [Col("window start"), Col("partition", squeeze=12, wrap=True)] + [
            Col(h, 1 if k in ("stale_windows", "overlaps") else 0, "right") for k, h in STATS_COUNTERS if k != "commits"]
        rows = [[fmt_time(b["start_ms"], utc) or "?", safe.text(b["partitions"][0]["partition"])] + _nums(b["partitions"][0], keys[1:])
                for b in st.buckets if b["partitions"]]
        parts += [Text(f"\nHottest partition per {st.window} window", style="bold"), fit_table(cols, rows, width)]
    cells = st.operation_matrix["cells"]
    if cells:
        cols = [Col("current → winner"), Col("pairs", justify="right"), Col("conflict", justify="right"),
                Col("forgiven", justify="right"), Col("aborted", justify="right"), Col("clean", 1, "right"),
                Col("unchecked", 2, "right")]
        rows = [[f"{c['current']} → {c['winner']}"] + _nums(c, ("pairs", "conflict", "reordered", "aborted", "clean", "unchecked"))
                for c in cells]
        parts += [Text("\nOperation pairs: current transaction → winning commit", style="bold"), fit_table(cols, rows, width),
                  Text("forgiven: pairs where the winner's blind append was forgiven (a reorder)", style="dim")]
    conc = st.concurrency
    if conc:
        cols = [Col("bucket start"), Col("transactions", justify="right"), Col("max at\nonce", justify="right"),
                Col("commits", justify="right"), Col("stale\nwindows", justify="right")]
        rows = [[fmt_time(c["start_ms"], utc) or "?"] + _nums(c, ("transactions", "max_concurrent", "commits", "stale_windows"))
                for c in conc[:48]]
        parts += [Text("\nConcurrency: read→commit windows overlapping each bucket", style="bold"), fit_table(cols, rows, width)]
    r = st.retries
    totals = ", ".join(f"{safe.inert(k, 60)} {v}" for k, v in r["metric_totals"].items())
    recorded = f"operationMetrics in {r['metric_commits']} of {st.totals['commits']} commit(s)"
    recorded += f" ({totals})" if totals else (" (no retry counter)" if r["metric_commits"] else "")
    parts.append(Text(f"\nRetry indications: {recorded}; "
                      f"{len(r['repeats'])} repeated commit(s) after a gap (inferred); {len(r['attempts'])} aborted attempt(s)"))
    for x in r["attempts"][:10]:
        if x["winning_version"] is not None:
            parts.append(safe.text(f"  {x['span_id']} {x['operation'] or '(operation unknown)'} in {', '.join(x['partitions'])} "
                                   f"lost to {x['answer'] or 'v' + str(x['winning_version'])}"))
    for x in r["repeats"][:10]:
        parts.append(safe.text(f"  v{x['version']} repeats v{x['previous_version']} ({x['writer']}, {x['operation']}) "
                               f"after {fmt_duration(x['gap_ms'])}"))
    for n in st.notes:
        parts.append(Text(safe.inert(n, 500), style="dim"))
    return Group(*parts)
