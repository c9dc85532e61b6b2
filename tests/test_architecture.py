"""The layout the README's architecture sketch promises, checked from the source itself.

Imports are read from the AST, including those inside functions and under TYPE_CHECKING: a
deferred import is the same coupling as a top-level one.
"""

from __future__ import annotations

import ast
import pydoc
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("forensics", "tui")
# What the CLI and the TUI may import from forensics: the front object and the shared vocabulary.
FRONT = {"forensics", "forensics.table", "forensics.model", "forensics.errors", "forensics.safe", "forensics.times"}


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg in PACKAGES:
        for p in (ROOT / pkg).rglob("*.py"):
            parts = p.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            mods[name] = p
    return mods


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The module of ours a dotted name lives in (`forensics.sets.commit_sets.StateIndex` -> its module)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(mod: str) -> set[str]:
    path = MODULES[mod]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            targets = [f"{prefix}.{a.name}" for a in node.names] + [prefix]
        else:
            continue
        for t in targets:
            r = _resolve(t)
            if r and r != mod:
                out.add(r)
    return out


GRAPH = {m: _imports(m) for m in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_module_import_cycles():
    assert _cycles(GRAPH) == []


def _stage(mod: str) -> str:
    """`forensics.sets.commit_sets` -> `forensics.sets`; top-level modules are their own stage."""
    return ".".join(mod.split(".")[:2])


def test_no_cycles_between_stages():
    stages: dict[str, set[str]] = defaultdict(set)
    for a, bs in GRAPH.items():
        for b in bs:
            if _stage(a) != _stage(b) and b != "forensics":
                stages[_stage(a)].add(_stage(b))
    assert _cycles(dict(stages)) == []


def test_cycle_finder_finds_a_cycle():
    """The checker itself can fail: a two-module loop and a three-module loop are found."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert _cycles({"x": {"y"}, "y": {"z"}, "z": {"x"}}) == [["x", "y", "z"]]


def test_at_most_five_top_level_modules():
    top = sorted(p.stem for p in (ROOT / "forensics").glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert len(top) <= 5, top
    assert "table" in top


@pytest.mark.parametrize("front", ["forensics.cli", "tui"])
def test_cli_and_tui_use_only_the_front_object(front: str):
    bad = {}
    for mod, deps in GRAPH.items():
        if mod != front and not mod.startswith(front + "."):
            continue
        below = sorted(d for d in deps if d.startswith("forensics") and d not in FRONT and not d.startswith(front))
        if below:
            bad[mod] = below
    assert bad == {}


def test_every_package_says_what_it_owns():
    for mod, path in MODULES.items():
        if path.name == "__init__.py":
            doc = ast.get_docstring(ast.parse(path.read_text()))
            assert doc and len(doc.strip()) > 20, f"{path.relative_to(ROOT)} has no docstring saying what it owns"


def test_front_object_is_documented():
    import forensics

    text = pydoc.render_doc(forensics.Table, renderer=pydoc.plaintext)
    for method in ("history", "replay", "explain", "explain_error", "whatif", "evidence", "stats", "timeline", "sets"):
        assert f"{method}(" in text, method
        assert getattr(forensics.Table, method).__doc__, method
