"""export: the Timeline model and its six formats, checked against the commit JSON files themselves."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------------------
# Independent reading of the log (no forensics code)
# --------------------------------------------------------------------------------------


def commit_infos(table: Path) -> dict[int, dict]:
    out = {}
    for f in sorted((table / "_delta_log").glob("*.json")):
        if re.fullmatch(r"\d{20}\.json", f.name):
            ci = {}
            for line in f.read_text(encoding="utf-8").splitlines():
                if line.strip() and "commitInfo" in (d := json.loads(line)):
                    ci = d["commitInfo"]
            out[int(f.name[:20])] = ci
    return out


@pytest.fixture(scope="module")
def logs(spark, sample_logs):
    from forensics.log.delta_log import DeltaLog

    return {n: DeltaLog.open(str(sample_logs / n / "table"), use_cache=False)
            for n in ("b-writeserializable-reorder", "busy", "f-delta-rs-aborted")}


def _cli(args: list[str]) -> int:
    from forensics.cli.main import main

    return main(args)


# --------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------


def test_timeline_spans_match_the_log(logs, sample_logs):
    from forensics.replay.windows import replay_table
    from forensics.analysis.timeline import Timeline, build_timeline

    for name in ("b-writeserializable-reorder", "busy"):
        table = sample_logs / name / "table"
        cis = commit_infos(table)
        log = logs[name]
        tl = build_timeline(log, replay_table(log))
        assert sorted(s.version for s in tl.commits) == sorted(cis)
        for s in tl.commits:
            ci = cis[s.version]
            assert s.end_ms == ci["timestamp"]
            rv = ci.get("readVersion")
            assert s.read_version == rv
            if rv is not None and rv < s.version:
                assert s.start_ms == cis[rv]["timestamp"], s.id  # the read snapshot's commit time
            if "writer" in ci:
                assert s.writer == f"writer:{ci['writer']}"
        again = Timeline.from_json(json.loads(json.dumps(tl.to_dict())))
        assert again.to_dict() == tl.to_dict()
    # incident (b): the DELETE is serialised before the blind INSERT that landed between its read and commit
    cis = commit_infos(sample_logs / "b-writeserializable-reorder" / "table")
    delete = next(v for v, c in cis.items() if c.get("operation") == "DELETE")
    insert = next(v for v, c in cis.items() if c.get("isBlindAppend") and cis[delete]["readVersion"] < v < delete)
    tl = build_timeline(logs["b-writeserializable-reorder"], replay_table(logs["b-writeserializable-reorder"]))
    assert [(e.kind, e.source, e.target) for e in tl.edges] == [("reorder", f"v{delete}", f"v{insert}")]


# --------------------------------------------------------------------------------------
# Chrome trace
# --------------------------------------------------------------------------------------


def test_chrome_trace_structure(logs, sample_logs, tmp_path):
    for name in ("busy", "b-writeserializable-reorder"):
        out = tmp_path / f"{name}.trace.json"
        assert _cli(["export", str(sample_logs / name / "table"), "-f", "chrome-trace", "-o", str(out), "-q"]) == 0
        d = json.loads(out.read_text(encoding="utf-8"))
        assert d["displayTimeUnit"] == "ms"
        ev = d["traceEvents"]
        xs = [e for e in ev if e["ph"] == "X"]
        for e in xs:
            for k in ("ts", "dur", "pid", "tid"):
                assert isinstance(e[k], int), (k, e)
            assert e["dur"] >= 0
        named = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
        assert {(e["pid"], e["tid"]) for e in xs} <= named
        # one X per version, plus the aborted attempts
        n_versions = len(commit_infos(sample_logs / name / "table"))
        assert sum(1 for e in xs if e["cat"].startswith("commit")) == n_versions
        # slices on one track never partially overlap (Perfetto drops unnestable slices)
        by_tid: dict[int, list[tuple[int, int]]] = {}
        for e in xs:
            by_tid.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
        for iv in by_tid.values():
            iv.sort()
            for (a0, a1), (b0, b1) in zip(iv, iv[1:]):
                assert b0 > a1 or b1 <= a1
        # flows pair up: one s and one f (bp e) per id, each inside a slice of its track
        flows: dict[int, dict[str, dict]] = {}
        for e in ev:
            if e["ph"] in ("s", "f"):
                assert e["ph"] not in flows.setdefault(e["id"], {})
                flows[e["id"]][e["ph"]] = e
        for fid, pair in flows.items():
            assert set(pair) == {"s", "f"}, fid
            assert pair["f"]["bp"] == "e"
            for e in pair.values():
                assert any(x["tid"] == e["tid"] and x["ts"] <= e["ts"] <= x["ts"] + x["dur"] for x in xs)
        if name == "b-writeserializable-reorder":
            assert [p["s"]["cat"] for p in flows.values()] == ["reorder"]
        else:
            assert len(flows) == sum(1 for e in xs if e["cat"].startswith("attempt") and e["args"].get("winning_version") is not None)


# --------------------------------------------------------------------------------------
# Tidy tables
# --------------------------------------------------------------------------------------


def test_parquet_and_csv_rows(sample_logs, tmp_path, spark):
    import polars as pl
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    table = sample_logs / "busy" / "table"
    cis = commit_infos(table)
    lo, hi = 100, 180
    for fmt in ("parquet", "csv"):
        out = tmp_path / f"busy.{fmt}"
        assert _cli(["export", str(table), "-f", fmt, "-o", str(out), "--from", str(lo), "--to", str(hi), "-q"]) == 0
        edges = tmp_path / f"busy.edges.{fmt}"
        assert edges.exists()
        df = pl.read_parquet(out) if fmt == "parquet" else pl.read_csv(out, infer_schema_length=10000)
        arrow = pq.read_table(out) if fmt == "parquet" else pacsv.read_csv(out)
        assert arrow.num_rows == df.height
        commits = df.filter(pl.col("kind") == "commit").sort("version")
        assert commits["version"].to_list() == [v for v in sorted(cis) if lo <= v <= hi]
        want_rv = [cis[v].get("readVersion") for v in commits["version"].to_list()]
        assert commits["read_version"].to_list() == want_rv
        assert commits["end_ms"].to_list() == [cis[v]["timestamp"] for v in commits["version"].to_list()]
        ops = commits["operation"].to_list()
        assert ops == [cis[v]["operation"] for v in commits["version"].to_list()]
        e = pl.read_parquet(edges) if fmt == "parquet" else pl.read_csv(edges)
        assert set(e.columns) >= {"kind", "source", "target"}


def test_json_is_the_versioned_model(sample_logs, tmp_path, spark):
    from forensics.analysis.timeline import SCHEMA_VERSION, Timeline

    out = tmp_path / "b.json"
    assert _cli(["export", str(sample_logs / "b-writeserializable-reorder" / "table"), "-f", "json", "-o", str(out), "-q"]) == 0
    d = json.loads(out.read_text(encoding="utf-8"))
    assert d["schema_version"] == SCHEMA_VERSION
    tl = Timeline.from_json(d)
    assert {s.verdict for s in tl.commits} == {"serial", "reordered"}


def test_refuses_output_inside_the_table(sample_logs, capsys):
    table = sample_logs / "b-writeserializable-reorder" / "table"
    for target in (table / "x.json", table / "_delta_log" / "x.html"):
        assert _cli(["export", str(table), "-f", "json", "-o", str(target)]) == 2
        assert not target.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("inside the table directory" in line for line in err)


# --------------------------------------------------------------------------------------
# Mermaid: the real parser (mermaid from npm, run by node) when it installs; else structure
# --------------------------------------------------------------------------------------

PARSE_JS = """
import fs from 'node:fs';
const mermaid = (await import('mermaid')).default;
let bad = 0;
for (const f of process.argv.slice(2)) {
  try { await mermaid.parse(fs.readFileSync(f, 'utf8')); console.log('ok ' + f); }
  catch (e) { bad++; console.log('FAIL ' + f + ' ' + (e.message || e)); }
}
process.exit(bad ? 1 : 0);
"""


@pytest.fixture(scope="session")
def mermaid_dir(tmp_path_factory) -> Path | None:
    """A directory with the `mermaid` npm package installed (cached in /tmp between runs), or None."""
    if not shutil.which("node") or not shutil.which("npm"):
        return None
    d = Path("/tmp/delta-forensics-test-mermaid")
    if not (d / "node_modules" / "mermaid").is_dir():
        d.mkdir(parents=True, exist_ok=True)
        try:
            subprocess.run(["npm", "install", "--prefix", str(d), "--no-audit", "--no-fund", "mermaid@11"],
                           capture_output=True, timeout=240, check=True)
        except (subprocess.SubprocessError, OSError):
            return None
    (d / "parse.mjs").write_text(PARSE_JS)
    return d


def _hostile_timeline(tl):
    from forensics.analysis.timeline import Writer

    bad = 'evil: "x"; #1 <b>%%{init}%% \n -->> L: fake\u001b[31m `tick`'
    tl.writers = [Writer(w.id, bad, w.source) for w in tl.writers]
    for s in tl.spans:
        s.operation = "MERGE; %% drop\nL->>W1: injected"
        if s.partition is not None or s.kind == "attempt":
            s.partition = {"date": "2024:06;25#x"}
    return tl


def test_mermaid_parses(logs, tmp_path, mermaid_dir):
    from forensics.export.mermaid import mermaid
    from forensics.replay.windows import replay_table
    from forensics.analysis.timeline import build_timeline

    files = []
    for name, log in logs.items():
        tl = build_timeline(log, replay_table(log), None)
        for variant, t in (("plain", tl), ("hostile", _hostile_timeline(build_timeline(log, replay_table(log), None)))):
            text = mermaid(t)
            lines = text.splitlines()
            assert lines[0] == "sequenceDiagram"
            ids = re.findall(r"^    participant (\S+) as ", text, re.M)
            assert ids and all(re.fullmatch(r"[A-Za-z0-9]+", i) for i in ids)
            body = [ln for ln in lines[1:] if not ln.strip().startswith("%%")]
            for ln in body:
                assert re.match(r"^    (participant \w+ as |Note over \w+,\w+: |\w+(->>|-->>|-x ?)\w+: )", ln), ln
                label = ln.split(": ", 1)[1] if ": " in ln else ln.split(" as ", 1)[1]
                assert "%%" not in label and ";" not in re.sub(r"#[0-9a-z]+;", "", label)
            n_commits = sum(1 for ln in lines if re.search(r"->>L: commit v\d+ ", ln))
            assert n_commits == len(tl.commits)
            p = tmp_path / f"{name}-{variant}.mmd"
            p.write_text(text, encoding="utf-8")
            files.append(p)
    if mermaid_dir is None:
        pytest.skip("node/npm or the mermaid package unavailable: structural check only")
    res = subprocess.run(["node", str(mermaid_dir / "parse.mjs"), *map(str, files)], cwd=mermaid_dir,
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("ok ") == len(files)


# --------------------------------------------------------------------------------------
# HTML: self-contained, escaped, renders in headless Chromium
# --------------------------------------------------------------------------------------


def _network_refs(html: str) -> list[str]:
    bad = re.findall(r"""(?:src|href|xlink:href|action|poster|data)\s*=\s*["']?\s*(?:https?:)?//""", html, re.I)
    bad += re.findall(r"url\(\s*['\"]?\s*(?:https?:)?//", html, re.I)
    bad += re.findall(r"<script[^>]*\bsrc\s*=", html, re.I)
    bad += re.findall(r"<link[^>]*rel\s*=\s*['\"]?stylesheet", html, re.I)
    bad += re.findall(r"@import", html, re.I)
    return bad


def test_html_report_self_contained_and_escaped(logs, tmp_path, sample_logs):
    from forensics.export.html import html_report
    from forensics.replay.windows import replay_table
    from forensics.analysis.timeline import build_timeline

    out = tmp_path / "b.html"
    assert _cli(["export", str(sample_logs / "b-writeserializable-reorder" / "table"), "-f", "html", "-o", str(out), "-q"]) == 0
    text = out.read_text(encoding="utf-8")
    assert _network_refs(text) == []
    assert "http://" not in text and "https://" not in text
    # every commit is drawn in the incident's window, or counted at its edge
    edges = sum(int(n) for n in re.findall(r"(\d+) (?:earlier|later) commit\(s\), v\d+(?:\.\.v\d+)?, not drawn", text))
    assert text.count('class="span commit') + edges == len(commit_infos(sample_logs / "b-writeserializable-reorder" / "table"))
    assert edges == 1  # v0, two minutes before the DELETE read v1
    assert "Counterfactuals" in text and "ConcurrentAppendException against v2" in text
    assert "under the scenario: 1 would abort" in text and "{&#x27;" not in text and "{'" not in text  # words, not a dict
    assert "Operation pairs" in text
    log = logs["b-writeserializable-reorder"]
    tl = build_timeline(log, replay_table(log))
    for s in tl.spans:
        s.operation = '<script>alert(1)</script><img src="https://evil.example/x.png">'
    tl.writers[0] = type(tl.writers[0])(tl.writers[0].id, "<style>@import url(https://evil.example/a.css)</style>", "userName")
    h = html_report(tl)
    assert "<script" not in h and "<img" not in h and "<style>@import" not in h
    assert "&lt;script&gt;" in h


# --------------------------------------------------------------------------------------
# HTML: the post-mortem (story, timeline, verdicts, advice, then statistics), checked against the commit files
# --------------------------------------------------------------------------------------

SECTIONS = ('<div class="story">', "<h2>Timeline</h2>", "<h2>Verdicts</h2>", "<h2>What to change</h2>", "<h2>Statistics</h2>",
            "<h2>Counterfactuals</h2>")


def _resources(h: str) -> list[str]:
    """What a browser would fetch, from the parsed document (not a text search: log strings may say `href=`)."""
    from html.parser import HTMLParser

    found: list[str] = []

    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag in ("script", "link", "img", "iframe", "object", "embed", "image", "use", "audio", "video", "source"):
                found.append(tag)
            for k, v in attrs:
                if k in ("src", "href", "xlink:href", "action", "poster", "data", "srcset") and v and not v.startswith("#"):
                    found.append(f"{k}={v}")
                if k == "style" and v and "url(" in v:
                    found.append(v)

        def handle_data(self, data):
            if "@import" in data or "url(" in data.replace("url(#", ""):
                found.append(data[:80]) if self.lasttag == "style" else None

    P().feed(h)
    return found


def _rows(h: str, cls: str) -> list[list[str]]:
    """The cells of an HTML table of the report, unescaped (the header row left out)."""
    import html as _html

    body = re.search(rf'<table class="{cls}">(.*?)</table>', h, re.S).group(1)
    return [[_html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
            for r in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)[1:]]


def _story(h: str) -> str:
    import html as _html

    div = re.search(r'<div class="story">(.*?)</div>', h, re.S).group(1)
    return " ".join(_html.unescape(p) for p in re.findall(r"<p>(.*?)</p>", div, re.S))


def copy_with_commit_info(src: Path, dst: Path, edit) -> Path:
    """A real copy of a table whose commits' commitInfo `edit(version, commitInfo)` changes in place."""
    shutil.copytree(src, dst)
    for f in sorted((dst / "_delta_log").glob("*.json")):
        if re.fullmatch(r"\d{20}\.json", f.name):
            lines = [json.loads(x) for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]
            for d in lines:
                if "commitInfo" in d:
                    edit(int(f.name[:20]), d["commitInfo"])
            f.write_text("".join(json.dumps(d) + "\n" for d in lines), encoding="utf-8")
    return dst


def _reorder_b(table: Path) -> tuple[int, int]:
    """(the DELETE, the blind append in its window) of incident (b), from the commit files."""
    cis = commit_infos(table)
    delete = next(v for v, c in cis.items() if c.get("operation") == "DELETE")
    insert = next(v for v, c in cis.items() if c.get("isBlindAppend") and cis[delete]["readVersion"] < v < delete)
    return delete, insert


def _html_export(table: Path, out: Path, *extra: str) -> str:
    assert _cli(["export", str(table), "-f", "html", "-o", str(out), "-q", "--utc", *extra]) == 0
    return out.read_text(encoding="utf-8")


def test_html_postmortem_story_verdicts_advice(sample_logs, tmp_path, spark):
    table = sample_logs / "b-writeserializable-reorder" / "table"
    h = _html_export(table, tmp_path / "b.html")
    at = [h.index(x) for x in SECTIONS]
    assert at == sorted(at), "sections out of order"
    cis = commit_infos(table)
    delete, insert = _reorder_b(table)
    # every replayed commit (readVersion older than the version before it), one row each, in version order
    stale = [v for v, c in sorted(cis.items()) if c.get("readVersion") is not None and c["readVersion"] < v - 1]
    rows = _rows(h, "verdicts")
    assert [r[0] for r in rows] == [f"v{v}" for v in stale] == [f"v{delete}"]
    version, _committed, writer, op, rv, verdict, winner, rule, _sure = rows[0]
    assert (op, rv, verdict, winner) == (cis[delete]["operation"], str(cis[delete]["readVersion"]), "reordered", f"v{insert} (forgiven)")
    assert writer == f"cluster {cis[delete]['clusterId']}" and "forgiven" in rule and "WriteSerializable" in rule
    # the story: who, when, the other commit, the rule, how sure, the fix; the terminal's own words
    story = _story(h)
    assert f"v{delete} DELETE" in story and f"v{insert} WRITE" in story and cis[delete]["userName"] in story
    assert "2024-06-25 08:04:18Z" in story  # the DELETE's commitInfo.timestamp 1719302658000, in UTC (--utc)
    assert "WriteSerializable" in story and "How sure" in story and "What to change" in story
    from forensics import Table

    ex = Table(table).explain(delete)
    assert ex.advice and all(a.title in h for a in ex.advice)  # the advice section: explain's advice, every piece
    assert "§" not in h and "conflict-rules" not in h and "[superset]" not in h and "{&#x27;" not in h


def test_html_postmortem_of_an_anomaly(sample_logs, tmp_path, spark):
    """Incident (b) with the DELETE recorded at Serializable: the blind append is no longer forgiven."""
    src = sample_logs / "b-writeserializable-reorder" / "table"
    delete, insert = _reorder_b(src)
    table = copy_with_commit_info(src, tmp_path / "table",
                                  lambda v, ci: ci.update(isolationLevel="Serializable") if v == delete else None)
    h = _html_export(table, tmp_path / "a.html")
    [row] = _rows(h, "verdicts")
    assert row[0] == f"v{delete}" and row[5] == "anomaly" and row[6] == f"v{insert}"
    assert "concurrent append" in row[7] and "ConcurrentAppendException" in row[7]
    story = _story(h)
    assert "ConcurrentAppendException" in story and f"v{insert}" in story
    # advice is given only when its replay commits (forensics/replay/advice.py): a DELETE that removed
    # files of the appended partition reads it under any condition, so none is, and the report says so
    assert '<ul class="advice">' not in h and "No change is suggested" in h


def test_html_postmortem_of_aborted_attempts(sample_logs, tmp_path, spark):
    inc = sample_logs / "f-delta-rs-aborted"  # its recorded file times: tests/conftest.py pytest_sessionstart
    truth = json.loads((inc / "attempts.json").read_text())
    h = _html_export(inc / "table", tmp_path / "f.html")
    rows = _rows(h, "attempts")
    assert len(rows) == len(truth)
    wrote = sorted(r[4] for r in rows)
    assert wrote == sorted(f"1 file(s) in {a['partition']}" for a in truth)
    story = _story(h)
    assert "aborted" in story and all(a["partition"] in story for a in truth)  # three attempts: all three told
    for r in rows:
        assert r[5].startswith(("v", "one of", "unknown")) and ("Concurrent" in r[6] or r[5].startswith("unknown"))
        assert r[9].endswith("(file times are trusted)")  # restored: the file times agree with the log's
    # the page opens with the story, then the attempts, then the detail
    assert h.index('<div class="story">') < h.index('<table class="attempts">') < h.index("<h2>Timeline</h2>")
    # each change once, with the attempts it serves; its evidence on a line of its own
    advice = re.search(r'<ul class="advice">(.*?)</ul>', h, re.S).group(1)
    titles = re.findall(r"<li><b>(.*?)</b>", advice)
    assert titles and len(titles) == len(set(titles))
    assert "(for attempt-" in advice and "</p><p class=\"muted\">evidence: " in advice or "evidence" not in advice


def test_html_postmortem_offline_with_urls_in_the_log(sample_logs, tmp_path, spark):
    """URLs in log strings are text, never a resource; redacted they name no host."""
    evil = '"><img src="https://evil.example/x.png"><link rel=stylesheet href=http://evil.example/a.css>'
    table = copy_with_commit_info(sample_logs / "b-writeserializable-reorder" / "table", tmp_path / "table",
                                  lambda v, ci: ci.update(clusterId=evil))
    h = _html_export(table, tmp_path / "u.html")
    assert _resources(h) == []
    assert "&lt;img src=&quot;https://evil.example/x.png&quot;&gt;" in h  # shown, escaped, as text
    r = _html_export(table, tmp_path / "r.html", "--redact")
    assert _resources(r) == [] and "evil.example" not in r and "cluster cluster-1" in r  # the whole clusterId is one identity
    plain = _html_export(sample_logs / "b-writeserializable-reorder" / "table", tmp_path / "b.html")
    assert _resources(plain) == [] and "http://" not in plain and "https://" not in plain


def _png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA PNG (what Chromium writes) without PIL: (width, height, rows)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w, h, bpp = 8, b"", 0, 0, 3
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], (prev[x - bpp] if x >= bpp else 0)
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line) if bpp == 3 else bytes(v for k, v in enumerate(line) if k % 4 != 3))
        prev = line
    return w, h, rows


def test_html_renders_in_headless_chromium(sample_logs, tmp_path, spark):
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import render_html_report as r
    finally:
        sys.path.pop(0)
    if r.find_chromium() is None:
        pytest.skip("no chromium binary (apt-get install -y chromium)")
    out = tmp_path / "b.html"
    assert _cli(["export", str(sample_logs / "b-writeserializable-reorder" / "table"), "-f", "html", "-o", str(out), "-q"]) == 0
    png = tmp_path / "b.png"
    assert r.main([str(out), str(png), "--width", "1300", "--height", "700"]) == 0
    w, h, rows = _png_pixels(png)
    assert (w, h) == (1300, 700)
    # the chart is drawn: the reordered span's amber and the clean/serial greens are on screen
    from forensics.export.html import COLORS

    def count(hex_color: str) -> int:
        rgb = bytes(int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
        return sum(sum(1 for k in range(0, len(row), 3) if abs(row[k] - rgb[0]) < 40 and abs(row[k + 1] - rgb[1]) < 40
                       and abs(row[k + 2] - rgb[2]) < 40) for row in rows)

    assert count(COLORS["reordered"]) > 50
    assert count(COLORS["serial"]) > 50


def test_cli_format_list_matches_the_writers():
    from forensics.cli.commands.export import FORMATS as CLI_FORMATS
    from forensics.export import FORMATS

    assert tuple(CLI_FORMATS) == tuple(FORMATS)
