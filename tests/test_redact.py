"""--redact: every export format, the Python API and the TUI's view export share no identity of the log.

The identities are read from the commit files with json (no forensics code); every output file is
scanned (Parquet through pyarrow, every value); the same run without --redact must show them, so
the scan is known to look in the right place.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics.export.redact import Redactor
from test_export import copy_with_commit_info

FORMATS = ("json", "csv", "parquet", "chrome-trace", "mermaid", "html")
B = "b-writeserializable-reorder"


def identities(table: Path) -> dict[str, set[str]]:
    """userName/userId, clusterId, notebook and job fields of every commitInfo, read with json."""
    out: dict[str, set[str]] = {"user": set(), "cluster": set(), "notebook": set(), "job": set()}
    for f in sorted((table / "_delta_log").glob("*.json")):
        for line in f.read_text(encoding="utf-8").splitlines():
            ci = json.loads(line).get("commitInfo") if line.strip() else None
            if not ci:
                continue
            out["user"].update(str(ci[k]) for k in ("userName", "userId") if ci.get(k))
            if ci.get("clusterId"):
                out["cluster"].add(ci["clusterId"])
            out["notebook"].update(str(v) for v in (ci.get("notebook") or {}).values())
            out["job"].update(str(v) for v in (ci.get("job") or {}).values())
    return out


def file_text(path: Path) -> str:
    """Everything a reader of the file sees: the text, or every Parquet value."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return json.dumps(pq.read_table(path).to_pylist(), default=str)
    return path.read_bytes().decode("utf-8")


def export_all(table: Path, out: Path, redact: bool) -> dict[str, str]:
    from forensics.cli.main import main

    out.mkdir()
    texts = {}
    for fmt in FORMATS:
        target = out / f"t.{fmt}"
        assert main(["export", str(table), "-f", fmt, "-o", str(target), "-q", *(["--redact"] if redact else [])]) == 0
        written = sorted(out.glob(f"t.*{fmt}"))  # csv/parquet: also t.edges.<fmt>
        assert written
        texts[fmt] = "\n".join(file_text(p) for p in written)
    return texts


def test_every_format_redacted(sample_logs, tmp_path, spark):
    table = sample_logs / B / "table"
    ids = identities(table)
    assert ids["user"] and ids["cluster"] and ids["notebook"], ids  # the incident names a user, a cluster, a notebook
    every = {v for vs in ids.values() for v in vs}
    plain = export_all(table, tmp_path / "plain", redact=False)
    # without --redact the identities are there: each format names the cluster, the report all of them
    for fmt, text in plain.items():
        assert any(c in text for c in ids["cluster"]), fmt
    assert all(v in plain["html"] for v in ids["user"] if "@" in v) and all(v in plain["html"] for v in ids["notebook"])
    red = export_all(table, tmp_path / "red", redact=True)
    for fmt, text in red.items():
        low = text.lower()
        left = [v for v in every if v.lower() in low]
        assert left == [], (fmt, left)
        assert re.search(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+\.[A-Za-z]", text) is None, fmt  # no e-mail address at all
    # stable: one user (userName and userId of the same commits), one cluster, one notebook -> one placeholder each,
    # the same in the story, the verdict table, the chart and every format
    report = red["html"]
    assert set(re.findall(r"\buser-\d+", report)) == {"user-1"}
    assert set(re.findall(r"\bcluster-\d+", report)) == {"cluster-1"}
    assert set(re.findall(r"\bnotebook-\d+", report)) == {"notebook-1"}
    assert report.count("by user-1") >= 2  # v3 and the commit it raced, in the story
    for fmt in FORMATS:
        assert "cluster-1" in red[fmt], fmt
    spans = json.loads(red["json"])["spans"]
    assert {s["writer"] for s in spans} == {"cluster:cluster-1"}


def test_python_api_redacts_and_returns_the_redacted_timeline(sample_logs, tmp_path, spark):
    from forensics import Table

    t = Table(sample_logs / B / "table", spark=spark)
    ids = identities(sample_logs / B / "table")
    written, tl = t.export("json", tmp_path / "t.json", redact=True)
    text = written[0].read_text(encoding="utf-8")
    assert not any(c in text for c in ids["cluster"])
    assert {w.label for w in tl.writers} == {"cluster cluster-1"}
    assert any("identities redacted" in n for n in tl.notes)
    # the same Table exports the plain timeline afterwards: redaction copies, it never changes the Table's data
    _, plain = t.export("json", tmp_path / "p.json")
    assert {w.label for w in plain.writers} == {f"cluster {c}" for c in ids["cluster"]}


def test_hostile_identities_escaped_then_redacted(sample_logs, tmp_path, spark):
    from forensics.cli.main import main

    # a <script> user name and an e-mail and a tag in the cluster id of every commit
    table = copy_with_commit_info(sample_logs / B / "table", tmp_path / "table", lambda v, ci: ci.update(
        userName="<script>alert(1)</script>", clusterId="ops.lead@corp.example <img src=x onerror=alert(2)>"))
    plain, red = tmp_path / "plain.html", tmp_path / "red.html"
    assert main(["export", str(table), "-f", "html", "-o", str(plain), "-q"]) == 0
    h = plain.read_text(encoding="utf-8")
    assert "<script" not in h and "<img" not in h
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in h  # the story names who, escaped
    assert "ops.lead@corp.example &lt;img src=x onerror=alert(2)&gt;" in h  # the writer (cluster) label, escaped
    assert main(["export", str(table), "-f", "html", "-o", str(red), "-q", "--redact"]) == 0
    r = red.read_text(encoding="utf-8")
    assert "alert(" not in r and "ops.lead" not in r and "corp.example" not in r
    assert "by user-1" in r and "cluster-1" in r


def test_remote_locations_redacted(sample_logs, spark):
    from forensics.analysis.timeline import build_timeline
    from forensics.export.html import html_report
    from forensics.log.delta_log import DeltaLog
    from forensics.replay.windows import replay_table

    r = Redactor.for_table(location="abfss://lake@acmestore.dfs.core.windows.net/sales/orders")
    assert r.text("abfss://lake@acmestore.dfs.core.windows.net/sales/orders") == \
        "abfss://container-1@account-1.dfs.core.windows.net/sales/orders"
    # the mirror of a remote log is a local path that names the container and the account
    assert r.text("/home/ana/.cache/delta-forensics/mirror/abfss/lake/acmestore/sales") == \
        "/home/user-1/.cache/delta-forensics/mirror/abfss/container-1/account-1/sales"
    assert r.text("gs://lake-eu/x and s3://acme-prod/y, https://adm:pw@dbc-1.cloud.databricks.com:443/api, again gs://lake-eu") == \
        "gs://bucket-1/x and s3://bucket-2/y, https://user-2@host-1:443/api, again gs://bucket-1"

    log = DeltaLog.open(str(sample_logs / B / "table"))
    tl = build_timeline(log, replay_table(log))
    tl.table = "s3://acme-prod-lake/warehouse/orders"
    red = Redactor.for_table(log.commits, tl.table)
    h = html_report(red.timeline(tl))
    assert "acme-prod-lake" not in h and "s3://bucket-1/warehouse/orders" in h
    assert "acme-prod-lake" in html_report(tl)


def test_placeholders_in_order_of_first_appearance():
    r = Redactor()
    out = r.apply({"rows": [
        {"userName": "zoe@corp.example", "userId": "9000000000000001", "clusterId": "0612-101010-abcdefgh"},
        {"userName": "adam@corp.example", "userId": 9000000000000002, "job": {"jobId": "777000111", "runId": "55500011"}},
        {"userName": "zoe@corp.example", "note": "ZOE@corp.example paged adam@corp.example about 0612-101010-abcdefgh"},
    ]})
    rows = out["rows"]
    assert [rows[0]["userName"], rows[0]["userId"], rows[1]["userName"], rows[1]["userId"]] == ["user-1", "user-1", "user-2", "user-2"]
    assert rows[0]["clusterId"] == "cluster-1" and rows[1]["job"] == {"jobId": "job-1", "runId": "run-1"}
    assert rows[2]["note"] == "user-1 paged user-2 about cluster-1"
    assert Redactor().apply(out) == out  # placeholders are never taken for identities
    # field names stay field names, even when a user is called like one; e-mail-shaped keys do not
    assert Redactor().apply({"userName": "window", "spans": [{"window": [1], "why": "window"}], "a@corp.example": 1}) == \
        {"userName": "user-1", "spans": [{"window": [1], "why": "user-1"}], "user-2": 1}
    # words that only look like identities stay: counts, versions, operations
    assert r.text("v12 read 123 rows; MERGE by user-1") == "v12 read 123 rows; MERGE by user-1"


# --------------------------------------------------------------------------------------
# Property: no e-mail address survives, wherever it is in a nested payload
# --------------------------------------------------------------------------------------


@st.composite
def payload_with_emails(draw):
    emails = draw(st.lists(st.emails(), min_size=1, max_size=4))
    piece = st.one_of(st.text(max_size=12), st.sampled_from(emails), st.sampled_from(["s3://b/", "https://h.example/", "@", ".", "/home/"]))
    string = st.lists(piece, min_size=1, max_size=6).map("".join)
    leaf = st.one_of(string, st.integers(), st.none(), st.booleans())
    tree = st.recursive(leaf, lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(string, kids, max_size=4)),
                        max_leaves=20)
    return emails, draw(tree)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload_with_emails())
def test_no_email_survives_redaction(case):
    emails, payload = case
    out = json.dumps(Redactor().apply(payload), ensure_ascii=False)
    for addr in emails:
        assert addr not in out


# --------------------------------------------------------------------------------------
# The TUI: the view export, redacted (the command palette's "Export current view, redacted")
# --------------------------------------------------------------------------------------


async def test_tui_view_export_redacted(sample_logs, tmp_path, spark, monkeypatch):
    from forensics import Table
    from tui.app import ForensicsApp
    from tui.screens.main import MainScreen
    from tui.widgets.version_list import VersionList

    table = sample_logs / B / "table"
    Table(table, spark=spark)  # warm this test's cache: the app opens it without a JVM
    monkeypatch.chdir(tmp_path)
    ids = identities(table)
    app = ForensicsApp(str(table), utc=True, spark_factory=lambda: spark)
    async with app.run_test(size=(200, 50)) as pilot:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60:
            await pilot.pause(0.1)
            main = next((s for s in app.screen_stack if isinstance(s, MainScreen)), None)
            if main is not None and main.query_one(VersionList).rows is not None and main.table is not None \
                    and not any(w.state.name in ("PENDING", "RUNNING") for w in app.workers):
                break
        else:
            pytest.fail("the app did not open the table")
        for name, redact in (("plain.json", False), ("red.json", True)):
            app.screen.action_export(redact)
            await pilot.pause(0.1)
            app.screen.query_one("Input").value = str(tmp_path / name)
            await pilot.press("enter")
            await pilot.pause(0.2)
    plain = (tmp_path / "plain.json").read_text(encoding="utf-8")
    red = (tmp_path / "red.json").read_text(encoding="utf-8")
    every = [v for vs in ids.values() for v in vs]
    assert all(v in plain for v in every)
    assert [v for v in every if v in red] == []
    rows = json.loads(red)["rows"]
    assert {r["userName"] for r in rows} == {"user-1"} and {r["clusterId"] for r in rows} == {"cluster-1"}
    assert len(rows) == len(json.loads(plain)["rows"])
