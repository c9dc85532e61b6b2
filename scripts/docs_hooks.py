"""MkDocs hooks (mkdocs.yml `hooks:`): the build fails when the Python API reference would have a
gap: a public name without a docstring, or one the API page (docs/api.md) does not show.

Public means: every name in `forensics.__all__`, every public method and property of
`forensics.Table`, and every class a public `Table` method returns (its "result types"), with
their own public methods and properties. tests/test_docs.py runs `undocumented()` on its own.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
API_PAGE = ROOT / "docs" / "api.md"
_NAME = re.compile(r"\b[A-Z]\w+\b")


def _own_doc(obj: object) -> str:
    """The docstring written for `obj` itself (a dataclass's generated `Name(field, ...)` is not one)."""
    if inspect.isclass(obj):
        doc = obj.__dict__.get("__doc__") or ""
        return "" if doc.startswith(f"{obj.__name__}(") else doc.strip()
    return (getattr(obj, "__doc__", None) or "").strip()


def _table_imports() -> dict[str, str]:
    """Class name -> defining module, from forensics/table.py's imports (TYPE_CHECKING ones too)."""
    tree = ast.parse((ROOT / "forensics" / "table.py").read_text(encoding="utf-8"))
    return {a.asname or a.name: node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
            and node.module.startswith("forensics") for a in node.names}


def _members(cls: type) -> list[tuple[str, object]]:
    """Public methods and properties defined by `cls` itself (fields and inherited ones excluded)."""
    out = []
    fields = getattr(cls, "__dataclass_fields__", {})
    for name, value in cls.__dict__.items():
        if name.startswith("_") or name in fields:  # a field's default may be a function: still a field
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property) or inspect.isfunction(value):
            out.append((name, value))
    return out


def public_objects() -> dict[str, object]:
    """Qualified name -> object for everything the API reference must document."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import forensics
    from forensics.table import Table

    found: dict[str, object] = {}
    for name in forensics.__all__:
        if name.startswith("__"):
            continue
        obj = getattr(forensics, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    imports = _table_imports()
    for _, method in _members(Table):
        fn = method.fget if isinstance(method, property) else method
        annotation = inspect.signature(fn).return_annotation if callable(fn) else None
        for cls_name in _NAME.findall(str(annotation)):
            module = imports.get(cls_name)
            if module:
                cls = getattr(importlib.import_module(module), cls_name, None)
                if inspect.isclass(cls):
                    found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return found


def undocumented() -> list[str]:
    """Every public name (and public member of a public class) without a docstring of its own."""
    missing = []
    for qualname, obj in sorted(public_objects().items()):
        if not _own_doc(obj):
            missing.append(qualname)
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            missing += [f"{qualname}.{name}" for name, member in _members(obj) if not _own_doc(member)]
    return missing


def not_on_the_api_page(api_page: Path = API_PAGE) -> list[str]:
    """Public names docs/api.md has no `::: module.Name` block for."""
    page = api_page.read_text(encoding="utf-8")
    shown = set(re.findall(r"^::: ([\w.]+)", page, re.M))
    return sorted(q for q in public_objects() if q not in shown and q.rpartition(".")[0] not in shown)


def on_config(config, **kwargs):
    """Refuse to build a reference with gaps (mkdocs reports the PluginError and exits 1)."""
    from mkdocs.exceptions import PluginError

    api_page = Path(config["docs_dir"]) / "api.md"
    gaps = [f"{q} has no docstring" for q in undocumented()] + [f"{q} is not on docs/api.md" for q in not_on_the_api_page(api_page)]
    if gaps:
        raise PluginError("the Python API reference has gaps:\n  " + "\n  ".join(gaps))
    return config
