#!/usr/bin/env python3
"""Render an exported HTML report to a PNG with headless Chromium (no network needed).

    python scripts/render_html_report.py report.html report.png [--width 1400] [--height 1200]

Exit 0 when the screenshot was written; 3 when no Chromium binary is found. The browser is run
with networking pointed at a dead proxy, so a report that tried to fetch anything would show it
missing rather than silently loading it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless_shell")


def find_chromium() -> str | None:
    env = os.environ.get("CHROMIUM")
    if env and shutil.which(env):
        return shutil.which(env)
    for name in CANDIDATES:
        p = shutil.which(name)
        if p:
            return p
    return None


def render(html: Path, png: Path, width: int = 1400, height: int = 1200, timeout: int = 120) -> subprocess.CompletedProcess:
    exe = find_chromium()
    if exe is None:
        raise FileNotFoundError("no chromium binary on PATH (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory(prefix="df-chromium-") as profile:
        cmd = [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--no-first-run",
            "--proxy-server=127.0.0.1:9",  # nothing may load from the network
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            f"--screenshot={png.resolve()}",
            html.resolve().as_uri(),
        ]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("html", type=Path)
    ap.add_argument("png", type=Path)
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1200)
    a = ap.parse_args(argv)
    try:
        res = render(a.html, a.png, a.width, a.height)
    except FileNotFoundError as e:
        sys.stderr.write(f"{e}\n")
        return 3
    if not a.png.exists() or a.png.stat().st_size == 0:
        sys.stderr.write(res.stderr[-2000:])
        return 1
    sys.stdout.write(f"wrote {a.png}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
