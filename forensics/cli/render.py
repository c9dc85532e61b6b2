"""Rich renderings for the terminal. Every value from a log goes through forensics.safe."""

from __future__ import annotations

import os
from typing import Any, Iterable

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from forensics import safe
from forensics.model import Snapshot
from forensics.times import fmt_time, utc_default

VERDICT_STYLE = {"clean": "green", "reordered": "yellow", "anomaly": "bold red", "skipped": "dim", "abort": "bold red", "commit": "green"}


def console() -> Console:
    return Console(highlight=False, soft_wrap=False, width=None if os.isatty(1) else 200)


def print_renderable(r: RenderableType) -> None:
    console().print(r)


def _b(v: Any) -> str:
    return "" if v is None else ("yes" if v else "no")


def history_table(rows: list[dict[str, Any]], title: str = "", utc: bool | None = None) -> Table:
    t = Table(title=safe.inert(title, 300), title_justify="left", header_style="bold", pad_edge=False, expand=False)
    for col, just in (
        ("version", "right"),
        ("time", "left"),
        ("operation", "left"),
        ("readVersion", "right"),
        ("isolation", "left"),
        ("blind", "left"),
        ("+add", "right"),
        ("-rm", "right"),
        ("partitions", "left"),
        ("engine", "left"),
        ("user", "left"),
    ):
        t.add_column(col, justify=just, no_wrap=col not in ("partitions",), overflow="ellipsis")
    for r in rows:
        parts = r.get("partitionsTouched") or []
        ptxt = ", ".join(",".join(f"{k}={v}" for k, v in p.items()) for p in parts[:3]) + (f" +{len(parts) - 3}" if len(parts) > 3 else "")
        stale = r.get("readVersion") is not None and r["readVersion"] < r["version"] - 1
        t.add_row(
            str(r["version"]),
            fmt_time(r.get("timestamp"), utc_default() if utc is None else utc),
            safe.text(r.get("operation") or "—", max_len=40),
            Text(str(r["readVersion"]) if r.get("readVersion") is not None else "", style="yellow" if stale else ""),
            safe.text(r.get("isolationLevel") or "", max_len=20),
            _b(r.get("isBlindAppend")),
            str(r.get("numAddFiles", "")),
            str(r.get("numRemoveFiles", "")),
            safe.text(ptxt, max_len=60),
            safe.text(r.get("engineInfo") or "", max_len=40),
            safe.text(r.get("userName") or "", max_len=24),
        )
    return t


def snapshot_view(s: Snapshot, location: str, limit: int = 200) -> RenderableType:
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
    t = Table(header_style="bold", pad_edge=False)
    t.add_column("path", overflow="fold")
    t.add_column("partition", overflow="fold")
    t.add_column("size", justify="right")
    t.add_column("DV", justify="left")
    t.add_column("added in", justify="right")
    for f in s.files[:limit]:
        t.add_row(
            safe.text(f.path, max_len=300),
            safe.text(", ".join(f"{k}={v}" for k, v in f.partition_values.items()), max_len=200),
            "" if f.size is None else f"{f.size:,}",
            safe.text(f.deletion_vector.unique_id if f.deletion_vector else "", max_len=40),
            f"≤{f.version}" if s.base_checkpoint is not None and f.version == s.base_checkpoint else str(f.version),
        )
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


def sets_view(items: list[dict[str, Any]]) -> RenderableType:
    t = Table(header_style="bold", pad_edge=False, show_lines=False)
    for c in ("version", "operation", "read predicate (partition)", "data predicates", "files read", "bound", "writes", "blind"):
        t.add_column(c, overflow="fold")
    for it in items:
        r, w = it["read"], it["write"]
        files = "—" if r["partition_predicate"] is None and not r["files"] else str(len(r["files"]))
        writes = f"+{len(w['adds'])} -{len(w['removes'])}" + (" meta" if w["metadata_changed"] else "") + (" proto" if w["protocol_changed"] else "")
        if w["app_ids"]:
            writes += " txn:" + ",".join(w["app_ids"])
        t.add_row(
            str(it["version"]),
            safe.text(it["operation"] or "—", max_len=30),
            safe.text(r["partition_predicate"] if r["partition_predicate"] is not None else "(no read)", max_len=120),
            safe.text("; ".join(r["data_predicates"]), max_len=120),
            files + (" +whole table" if r["whole_table"] else ""),
            Text(r["files_bound"], style={"exact": "green", "superset": "yellow", "subset": "yellow", "unknown": "red"}[r["files_bound"]]),
            safe.text(writes, max_len=80),
            _b(w["is_blind_append"]),
        )
    return t


def replay_view(report: Any, show_skipped: bool = False) -> RenderableType:
    """The replay table. Under a counterfactual (another isolation level or rule profile) an abort is
    what the scenario "would abort", not an anomaly of the log, and no likely reason is guessed."""
    scenario = bool(report.isolation_level or report.rules)
    c = report.counts
    head = Text()
    head.append(f"Replay of {safe.inert(report.location, 300)}\n", style="bold")
    head.append(
        f"{report.total_commits} commits; {report.not_concurrent} had no concurrent winner; "
        f"{len(report.verdicts)} window(s) replayed: "
    )
    for k in ("clean", "reordered", "anomaly", "skipped"):
        head.append(f"{c.get(k, 0)} {'would abort' if scenario and k == 'anomaly' else k}", style=VERDICT_STYLE[k])
        head.append("  ")
    if report.isolation_level or report.rules:
        head.append(f"\n(counterfactual: isolation {report.isolation_level or 'as recorded'}, rules {report.rules or 'per engineInfo'})", style="dim")
    t = Table(header_style="bold", pad_edge=False)
    for col in ("version", "readVersion", "operation", "window", "verdict", "profile", "isolation", "detail"):
        t.add_column(col, overflow="fold", no_wrap=col not in ("detail",))
    for v in sorted(report.verdicts.values(), key=lambda x: x.version):
        if v.verdict == "skipped" and not show_skipped:
            continue
        if v.verdict == "anomaly" and scenario:
            detail = f"{v.exception} against v{v.winning_version} ({v.rule} rule)"
        elif v.verdict == "anomaly":
            detail = f"{v.exception} vs v{v.winning_version}; likely: {v.likely_reason}"
        elif v.verdict == "reordered":
            detail = "serialized before " + ", ".join(f"v{x}" for x in v.reordered_before)
        else:
            detail = v.why
        t.add_row(
            str(v.version),
            "" if v.read_version is None else str(v.read_version),
            safe.text(v.operation or "—", max_len=30),
            f"{len(v.window)}",
            Text("would abort" if scenario and v.verdict == "anomaly" else v.verdict, style=VERDICT_STYLE.get(v.verdict, "")),
            safe.text(v.profile, max_len=30),
            safe.text(v.isolation_level or "", max_len=20),
            safe.text(detail, max_len=300),
        )
    skipped = c.get("skipped", 0)
    tail = Text(f"{skipped} skipped window(s) hidden; --all shows them", style="dim") if skipped and not show_skipped else Text("")
    return Group(head, t, tail)


def whatif_view(res: Any) -> RenderableType:
    r = res.result
    out = Text()
    style = VERDICT_STYLE.get(r.verdict, "")
    out.append("verdict: ", style="bold")
    out.append(r.verdict.upper(), style=style)
    if r.exception:
        out.append(f"  {r.exception} against v{r.winning_version} ({r.rule})", style=style)
    out.append(f"\nprofile: {safe.inert(r.profile)} ({safe.inert(res.profile_why, 300)})\n")
    out.append(f"isolation level: {res.isolation_level}; certainty: {r.certainty.value}\n")
    out.append(f"checked against: {', '.join('v' + str(v) for v in res.winners) or 'no winning commits'}\n")
    out.append(f"read: {safe.inert(res.read_summary, 800)}\nwrite: {safe.inert(res.write_summary, 300)}\n")
    if r.partition:
        out.append(f"partition: {safe.inert(r.partition)}\n")
    if r.file:
        out.append(f"file: {safe.inert(r.file)}\n")
    if r.reordered_before:
        out.append(f"serialized before: {', '.join('v' + str(v) for v in r.reordered_before)} (reordered)\n", style="yellow")
    for n in res.notes:
        out.append(f"note: {safe.inert(n, 400)}\n", style="dim")
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
