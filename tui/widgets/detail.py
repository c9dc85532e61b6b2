"""The detail pane: one version's commitInfo, decoded parameters, actions and read/write sets.

Everything from the log is rendered through forensics.safe (Text objects, never markup). The
read/write sets can need the table state at the read version, so the pane builds them in its
own worker and they arrive a moment after the rest.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.table import Table as RichTable
from rich.text import Text
from textual import work
from textual.containers import VerticalScroll
from textual.widgets import Static

from forensics import Table, error_line, safe
from forensics.times import fmt_time
from tui.messages import SetsDone

if TYPE_CHECKING:
    import polars as pl

ACTION_LIMIT = 200


def kv_table(pairs: list[tuple[str, Any]], title: str | None = None) -> RichTable:
    t = RichTable.grid(padding=(0, 1))
    t.add_column(style="bold cyan", no_wrap=True)
    t.add_column(overflow="fold")
    for k, v in pairs:
        t.add_row(safe.text(k, max_len=200), v if isinstance(v, Text) else safe.text(_show(v), max_len=4000))
    if title:
        return _titled(title, t)
    return t


def _titled(title: str, body: RenderableType) -> RenderableType:
    return Group(Text(title, style="bold underline"), body, Text(""))


def _show(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False)
    return str(v)


def commit_info_block(rec: Any, utc: bool, window: list[int]) -> RenderableType:
    rv = rec.read_version
    rv_text = Text("—" if rv is None else str(rv))
    if window:
        rv_text.append(f"  (window v{window[0]}–v{window[-1]}, {len(window)} concurrent)", style="yellow")
    pairs: list[tuple[str, Any]] = [
        ("timestamp", Text(fmt_time(rec.timestamp, utc))),
        ("inCommitTimestamp", Text(fmt_time(rec.in_commit_timestamp, utc)) if rec.in_commit_timestamp else None),
        ("operation", rec.operation),
        ("readVersion", rv_text),
        ("isolationLevel", rec.isolation_level),
        ("isBlindAppend", rec.is_blind_append),
        ("txnId", rec.txn_id),
        ("engineInfo", rec.engine_info),
        ("clientVersion", rec.client_version),
        ("userName", rec.user_name),
        ("userId", rec.user_id),
        ("job", rec.job),
        ("notebook", rec.notebook),
        ("clusterId", rec.cluster_id),
        ("userMetadata", rec.user_metadata),
        ("tags", rec.tags),
        ("source", rec.source),
    ]
    pairs = [(k, v) for k, v in pairs if v is not None]
    if not rec.has_commit_info:
        pairs.insert(0, ("commitInfo", Text("absent: this commit has no commitInfo", style="yellow")))
    return kv_table(pairs, "commitInfo")


def params_block(rec: Any) -> RenderableType:
    p = rec.operation_parameters or {}
    if not p:
        return _titled("operationParameters", Text("(none)", style="dim"))
    return kv_table(sorted(p.items()), "operationParameters (decoded)")


def metrics_block(rec: Any) -> RenderableType | None:
    """operationMetrics, numbers as numbers whatever the writer wrote (delta-spark's strings too)."""
    m = rec.operation_metrics
    if not m:
        return None
    return kv_table(sorted(m.items()), "operationMetrics")


def other_block(rec: Any) -> RenderableType | None:
    """The commitInfo keys without a field of their own (delta-rs' custom metadata, ...), as written."""
    o = rec.other_commit_info
    if not o:
        return None
    return kv_table(sorted(o.items()), "other commitInfo keys")


def actions_block(actions: pl.DataFrame, others: pl.DataFrame) -> RenderableType:
    t = RichTable(header_style="bold", pad_edge=False, expand=False, show_edge=False, box=None)
    for col, just in (("kind", "left"), ("path", "left"), ("partition", "left"), ("size", "right"), ("dataChange", "left"), ("DV", "left")):
        t.add_column(col, justify=just, overflow="fold" if col == "path" else "ellipsis")
    for r in actions.head(ACTION_LIMIT).iter_rows(named=True):
        pv = r.get("partition_values")
        try:
            pvd = json.loads(pv) if pv else {}
        except ValueError:
            pvd = {}
        dv = r.get("dv_storage_type")
        style = {"add": "green", "remove": "red", "cdc": "magenta"}.get(r["kind"], "")
        t.add_row(
            Text(r["kind"], style=style),
            safe.text(r.get("path"), max_len=300),
            safe.text(",".join(f"{k}={v}" for k, v in pvd.items()) if isinstance(pvd, dict) else pv, max_len=120),
            "" if r.get("size") is None else f"{r['size']:,}",
            _show(r.get("data_change")),
            safe.text(f"{dv}{r.get('dv_path') or ''}" if dv else "", max_len=40),
        )
    parts: list[RenderableType] = [Text(f"actions ({actions.height} add/remove/cdc)", style="bold underline"), t]
    if actions.height > ACTION_LIMIT:
        parts.append(Text(f"… {actions.height - ACTION_LIMIT} more; ctrl+e exports them all", style="dim"))
    kinds = [k for k in others["kind"].to_list() if k != "commitInfo"] if others.height else []
    if kinds:
        summary = ", ".join(f"{k}×{kinds.count(k)}" for k in sorted(set(kinds)))
        parts.append(Text("other actions: ", style="bold").append(safe.text(summary, max_len=300)))
    parts.append(Text(""))
    return Group(*parts)


def sets_block(sets: Any) -> RenderableType:
    """Read and write sets with their exact/inferred labels (`Table.commit_sets`)."""
    j = sets.to_dict()
    r, w = j.get("read", {}), j.get("write", {})
    read_pairs: list[tuple[str, Any]] = [
        ("partition predicate", r.get("partitionPredicate") or Text("none recorded (blind append)" if r.get("partitionPredicate") is None else "", style="dim")),
        ("data predicates", ", ".join(r.get("dataPredicates") or []) or "—"),
        ("whole table", r.get("wholeTable")),
        ("predicate", _bound(r.get("predicateBound"))),
        ("files", _bound(r.get("filesBound"), f"{len(r.get('files') or [])} file(s)")),
        ("app ids", ", ".join(r.get("appIds") or []) or "—"),
        ("why", r.get("why")),
    ]
    write_pairs: list[tuple[str, Any]] = [
        ("adds / removes / cdc", f"{len(w.get('adds') or [])} / {len(w.get('removes') or [])} / {len(w.get('cdc') or [])}"),
        ("metadata changed", w.get("metadataChanged")),
        ("protocol changed", w.get("protocolChanged")),
        ("blind append", Text(f"{_show(w.get('isBlindAppend'))} (recorded: {_show(w.get('isBlindAppendRecorded'))})")),
        ("app txns", w.get("appTxns") or "—"),
        ("domains", ", ".join(w.get("domains") or []) or "—"),
    ]
    head = Text("read set", style="bold underline").append(f"  writer: {safe.inert(j.get('writer'), 40)}", style="dim")
    return Group(head, kv_table(read_pairs), Text(""), kv_table(write_pairs, "write set"))


def _bound(b: str | None, prefix: str = "") -> Text:
    style = {"exact": "green", "superset": "yellow", "subset": "yellow", "unknown": "red"}.get(b or "", "dim")
    t = Text(prefix + (" " if prefix else ""))
    t.append(f"[{b or '?'}]" if b != "exact" else "[exact]", style=style)
    if b in ("superset", "subset", "unknown"):
        t.append(" inferred", style="dim")
    return t


def verdict_block(vi: Any) -> RenderableType:
    j = vi.to_dict()
    style = {"clean": "green", "reordered": "yellow", "anomaly": "bold red"}.get(vi.verdict, "dim")
    pairs: list[tuple[str, Any]] = [("verdict", Text(vi.verdict, style=style))]
    for label, k in (("exception", "exception"), ("winning_version", "winningVersion"), ("rule", "rule"), ("partition", "partition"),
                     ("file", "file"), ("reordered_before", "reorderedBefore"), ("profile", "profile"),
                     ("certainty", "certainty"), ("why", "why"), ("likely_reason", "likelyReason")):
        if j.get(k) not in (None, "", []):
            pairs.append((label, j[k]))
    return kv_table(pairs, "replay")


class DetailPane(VerticalScroll, can_focus=True):
    """The selected version in full. `y` copies it as JSON, `ctrl+e` exports it."""

    HELP = (
        "Detail pane: commitInfo, decoded operationParameters, operationMetrics, the replay verdict,\n"
        "read and write sets (labels: [exact] from log evidence, [superset]/[subset]/[unknown] inferred)\n"
        "and the commit's actions (first 200)."
    )
    DEFAULT_CSS = """
    DetailPane { padding: 0 1; }
    """

    version: int | None = None

    def compose(self):
        yield Static(Text("select a version", style="dim"), id="detail-body")
        yield Static("", id="detail-sets")
        yield Static("", id="detail-actions")

    def show(self, table: Table, version: int, *, utc: bool, window: list[int], verdict: Any | None) -> None:
        """Render `version` now; its read/write sets follow from a worker."""
        self.version = version
        rec = table.commit(version)
        head = Text(f"version {version}", style="bold")
        head.append("  ")
        head.append(safe.text(rec.operation or "(no operation)", "bold magenta", 60))
        head.append("  " + fmt_time(rec.timestamp, utc), style="dim")
        parts: list[RenderableType] = [head, Text("")]
        if verdict is not None:
            parts.append(verdict_block(verdict))
        parts.append(commit_info_block(rec, utc, window))
        parts.append(params_block(rec))
        for block in (metrics_block(rec), other_block(rec)):
            if block is not None:
                parts.append(block)
        mine = [f for f in table.findings if f.version == version]
        if mine:
            ft = Text()
            for f in mine:
                ft.append(safe.inert(f.one_line(), 500) + "\n", style={"error": "red", "warning": "yellow"}.get(f.severity, "dim"))
            parts.append(_titled("findings", ft))
        self.query_one("#detail-body", Static).update(Group(*parts))
        self.query_one("#detail-actions", Static).update(actions_block(table.actions(version), table.other_actions(version)))
        self.query_one("#detail-sets", Static).update(Text("read/write sets: computing…", style="dim italic"))
        self.compute_sets(table, version)

    @work(thread=True, exclusive=True, group="sets")
    def compute_sets(self, table: Table, version: int) -> None:
        try:
            self.post_message(SetsDone(version, sets=table.commit_sets(version)))
        except Exception as e:  # noqa: BLE001 - a ForensicsError as documented, anything else with its type; the rest of the pane stands
            self.post_message(SetsDone(version, error=f"read/write sets: {error_line(e)}"))

    def on_sets_done(self, event: SetsDone) -> None:
        event.stop()
        if event.version != self.version:
            return  # the cursor moved on meanwhile
        out = self.query_one("#detail-sets", Static)
        out.update(sets_block(event.sets) if event.sets is not None else Text(safe.inert(event.error, 500), style="dim"))
