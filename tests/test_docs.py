"""The documentation a user navigates: the README is the front page and its map leads to pages
that exist; the site under docs/ builds with `mkdocs build --strict` (a broken link or anchor, a
page missing from the nav, a public name without a docstring fail it); every command has its
section on the Commands page."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MKDOCS = Path(sys.executable).with_name("mkdocs")
sys.path.insert(0, str(ROOT / "scripts"))
import docs_hooks  # noqa: E402

LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slugs(text: str) -> set[str]:
    """The anchors MkDocs gives a page's headings (GitHub's slugs: mkdocs.yml's toc slugify)."""
    from pymdownx.slugs import slugify

    slug, out, fenced = slugify(case="lower"), set(), False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"^#{1,6} (.*)$", line)
        if m:
            out.add(slug(re.sub(r"`([^`]*)`", r"<code>\1</code>", m.group(1).strip()), "-"))
    return out


def _config() -> dict:
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    return yaml.load(text, Loader=yaml.Loader)  # noqa: S506 - our own file; it names a slugify function


def _nav_files(nav) -> list[str]:
    out = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        out += _nav_files(value) if isinstance(value, list) else [value]
    return out


def test_readme_is_a_front_page_whose_links_resolve():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 250
    for heading in ("## Install", "## Quickstart", "## Where to go next"):
        assert heading in text, heading
    broken = []
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        file = ROOT / path if path else ROOT / "README.md"
        if not file.exists():
            broken.append(target)
        elif anchor and anchor not in _slugs(file.read_text(encoding="utf-8")):
            broken.append(target)
    assert broken == []
    # every page of the site is on the README's map (the pages that include a root file: that file)
    included = {"fidelity.md": "FIDELITY.md", "benchmarks.md": "BENCHMARKS.md", "changelog.md": "CHANGELOG.md"}
    unmapped = [f for f in _nav_files(_config()["nav"]) if f != "index.md" and f"]({included.get(f, 'docs/' + f)}" not in text]
    assert unmapped == []


def test_every_page_is_in_the_nav_and_every_nav_entry_exists():
    nav = _nav_files(_config()["nav"])
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(nav) == pages


def test_every_command_has_its_section_on_the_commands_page():
    from forensics.cli.main import command_modules

    headings = [line for line in (DOCS / "commands.md").read_text(encoding="utf-8").splitlines() if line.startswith("## ")]
    missing = [c for c in (n.replace("_", "-") for n in command_modules())
               if not any(h.startswith(f"## `{c} ") or h.startswith(f"## `{c}`") for h in headings)]
    assert missing == []


def test_public_api_has_docstrings_and_is_on_the_api_page():
    assert docs_hooks.undocumented() == []
    assert docs_hooks.not_on_the_api_page() == []
    assert len(docs_hooks.public_objects()) > 40


def test_docstring_check_can_fail():
    class Result:
        """A result."""

        def to_dict(self):
            return {}

        @property
        def verdict(self):
            """The verdict."""

    assert [n for n, m in docs_hooks._members(Result) if not docs_hooks._own_doc(m)] == ["to_dict"]  # noqa: SLF001


def _build(config: Path, cwd: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(MKDOCS), "build", "--strict", "-f", str(config), "-d", str(site)], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env={"PATH": f"{MKDOCS.parent}:/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"})


@pytest.mark.slow
def test_site_builds_strict(tmp_path):
    """`make docs`: the real configuration, the real pages, every mkdocstrings block rendered."""
    proc = _build(ROOT / "mkdocs.yml", ROOT, tmp_path / "site")
    assert proc.returncode == 0, proc.stderr[-4000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert 'id="forensics.table.Table.explain_error"' in api and "delta-forensics" in (tmp_path / "site" / "index.html").read_text()


def test_strict_build_fails_on_a_broken_anchor(tmp_path):
    """The same validation settings, on a two-page site with one broken anchor."""
    config = _config()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nSee [the other page](other.md#no-such-heading).\n")
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## A heading\n")
    small = {"site_name": "t", "docs_dir": "docs", "validation": config["validation"],
             "nav": [{"Home": "index.md"}, {"Other": "other.md"}]}
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(small))
    proc = _build(tmp_path / "mkdocs.yml", tmp_path, tmp_path / "site")
    assert proc.returncode != 0 and "no-such-heading" in proc.stderr, proc.stderr
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nSee [the other page](other.md#a-heading).\n")
    assert _build(tmp_path / "mkdocs.yml", tmp_path, tmp_path / "site").returncode == 0


def test_mkdocs_is_installed():
    assert shutil.which(str(MKDOCS)), "pip install -e '.[docs]'"
