"""The HTML post-mortem as a browser lays it out.

For each sample incident, copied with every file time set to now (as a git clone leaves them, so
file times say nothing), the report is exported and opened in the system's headless Chromium; its
geometry is read over the DevTools protocol (a websocket, `Runtime.evaluate`): the incident's
window fills the timeline, the page opens with the story `explain` tells, and no section or chart
label overlaps another. Skips only when no Chromium binary exists.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import as_cloned

REPO = Path(__file__).resolve().parent.parent
INCIDENTS = sorted(p.name for p in (REPO / "sample_logs").iterdir() if p.is_dir() and p.name[:2] in {f"{c}-" for c in "abcdefgh"})
FILL = 0.8  # the incident's marks cover at least this share of the chart's width
WIDTH, HEIGHT = 1400, 1000


def _find_chromium() -> str | None:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import render_html_report
    finally:
        sys.path.pop(0)
    return render_html_report.find_chromium()


class DevTools:
    """One page of a headless Chromium, driven over the DevTools protocol."""

    def __init__(self, exe: str, profile: Path) -> None:
        import websocket  # websocket-client (the dev extra)

        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--hide-scrollbars", "--proxy-server=127.0.0.1:9", "--remote-debugging-port=0", f"--user-data-dir={profile}",
             f"--window-size={WIDTH},{HEIGHT}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"chromium did not open its DevTools port (exit {self.proc.poll()})")
            time.sleep(0.1)
        port = int(port_file.read_text().splitlines()[0])
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # localhost: never through a proxy
        pages = json.loads(opener.open(f"http://127.0.0.1:{port}/json/list", timeout=30).read())
        page = next(p for p in pages if p.get("type") == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
        self.next_id = 0
        self.call("Page.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT, deviceScaleFactor=1, mobile=False)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                assert "error" not in msg, msg
                return msg.get("result", {})

    def wait_for(self, event: str) -> None:
        while json.loads(self.ws.recv()).get("method") != event:
            pass

    def open(self, path: Path) -> None:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": "Page.navigate", "params": {"url": path.resolve().as_uri()}}))
        self.wait_for("Page.loadEventFired")

    def evaluate(self, js: str) -> Any:
        r = self.call("Runtime.evaluate", expression=js, returnByValue=True)
        assert "exceptionDetails" not in r, r
        return json.loads(r["result"]["value"])

    def close(self) -> None:
        """Stop Chromium and its helpers (its own process group): a helper still writing into the
        profile made the profile's removal fail ("Directory not empty")."""
        self.ws.close()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                continue
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    os.killpg(self.proc.pid, 0)
                except ProcessLookupError:
                    return
                time.sleep(0.1)


@pytest.fixture(scope="module")
def browser():
    exe = _find_chromium()
    if exe is None:
        pytest.skip("no chromium binary on PATH (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory(prefix="df-devtools-") as profile:
        b = DevTools(exe, Path(profile))
        try:
            yield b
        finally:
            b.close()


# Every box in page coordinates; the story's and the table cells' text as the browser shows it.
GEOMETRY = """(() => {
  const box = el => { if (!el) return null; const r = el.getBoundingClientRect();
    return {x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height}; };
  const all = s => Array.from(document.querySelectorAll(s));
  const svg = 'svg.timeline ';
  return JSON.stringify({
    lines: document.body.innerText.split('\\n').map(l => l.trim()).filter(l => l),
    story: all('.story p').map(p => p.innerText.trim()),
    sections: all('h1, div.story, table.attempts, svg.timeline, table.verdicts, ul.advice, h2')
      .map(el => ({name: el.tagName + '.' + (el.getAttribute('class') || ''), ...box(el)})),
    plot: box(document.querySelector(svg + 'rect.plot')),
    chart: box(document.querySelector('svg.timeline')),
    incident: all(svg + 'rect.attempt, ' + svg + 'rect.anomaly, ' + svg + 'rect.reordered, ' + svg + 'line.winner').map(box),
    attemptBars: all(svg + 'rect.attempt').length,
    labels: all(svg + 'text').map(t => ({text: t.textContent, cls: t.getAttribute('class') || '', ...box(t)})),
    attemptRows: all('table.attempts tr').slice(1).map(r => Array.from(r.cells).map(c => c.innerText.trim())),
  });
})()"""


def _as_cloned(sample_logs: Path, name: str, tmp_path: Path) -> Path:
    """A copy whose every file time is now, as after `git clone`."""
    return as_cloned(sample_logs / name / "table", tmp_path / name)


def _overlap(a: dict, b: dict, slack: float = 0.5) -> bool:
    return (a["x"] + slack < b["x"] + b["w"] and b["x"] + slack < a["x"] + a["w"]
            and a["y"] + slack < b["y"] + b["h"] and b["y"] + slack < a["y"] + a["h"])


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("name", INCIDENTS)
def test_report_geometry(browser, sample_logs, tmp_path, spark, name):
    from forensics import Table

    table = Table(_as_cloned(sample_logs, name, tmp_path))
    ev = table.evidence()
    assert ev.clock.trusted is False  # the copy's file times are the copy's
    out = tmp_path / f"{name}.html"
    table.export("html", out)
    browser.open(out)
    g = browser.evaluate(GEOMETRY)

    # the page opens with the headline, then the story of one of the incident's conflicts, as `explain` tells it
    assert g["lines"][0].startswith("Concurrency post-mortem:")
    report = table.replay_report()
    conflicts = {a.winning_version for a in ev.attempts if a.winning_version is not None}
    conflicts |= {v for v, cv in report.verdicts.items() if cv.verdict in ("anomaly", "reordered")}
    assert conflicts, name  # every sample incident has a conflict to tell
    first = None
    for v in sorted(conflicts):
        told = [_words(line.text) for line in table.explain(v).story()]
        if [_words(x) for x in g["lines"][1:1 + len(told)]] == told:
            first = told
    assert first is not None and len(first) >= 5, (name, g["lines"][:8])
    assert [_words(x) for x in g["story"][:len(first)]] == first

    # the incident's window fills the timeline: its attempts, conflicts and winners span most of the chart
    plot = g["plot"]
    marks = [m for m in g["incident"] if m is not None]
    assert marks, name
    lo, hi = min(m["x"] for m in marks), max(m["x"] + m["w"] for m in marks)
    assert hi - lo >= FILL * plot["w"], (name, lo, hi, plot)
    assert plot["x"] - 1 <= lo and hi <= plot["x"] + plot["w"] + 1
    assert g["attemptBars"] == len(ev.attempts)  # each placed by its attribution, none left out

    # an ambiguous attempt says "one of" on its bar and in the table; no untrusted file time is shown
    bar_labels = [lab["text"] for lab in g["labels"] if "bar-label" in lab["cls"]]
    assert len(bar_labels) == len(ev.attempts)
    assert sum("one of" in t for t in bar_labels) == sum(a.ambiguous for a in ev.attempts)
    assert len(g["attemptRows"]) == len(ev.attempts)
    for row in g["attemptRows"]:
        assert row[-1] == "not shown: file times are not trusted", row
    assert sum(r[5].startswith("one of") for r in g["attemptRows"]) == sum(a.ambiguous for a in ev.attempts)

    # nothing overlaps: the page's sections, and the chart's labels (each inside the chart)
    secs = g["sections"]
    for i, a in enumerate(secs):
        for b in secs[i + 1:]:
            assert not _overlap(a, b), (name, a, b)
    labels = g["labels"]
    for i, a in enumerate(labels):
        assert a["w"] > 0 and a["x"] >= g["chart"]["x"] - 0.5 and a["x"] + a["w"] <= g["chart"]["x"] + g["chart"]["w"] + 0.5, a
        for b in labels[i + 1:]:
            assert not _overlap(a, b), (name, a, b)
