"""The JSON contract: every `--json` document's version, its JSON Schema, its key names.

Each command's schema (draft 2020-12) ships as `forensics/schemas/<command>.schema.json`, made
by `python -m forensics.schemas.build` from one set of definitions (tests check the files are
current). `json_document` turns a command's `to_dict()` output into the printed document: the
`schema_version` first, and, for one minor release, the deprecated pre-2.0 name of each renamed
key next to its new camelCase name (the schema marks those `"deprecated": true` and names the
key they alias in `x-aliasOf`). CHANGELOG.md states the policy.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any, Callable

from forensics.errors import ExitCode, ForensicsError

SCHEMA_VERSION = "2.2"
# Every command with --json, by its CLI name.
SCHEMA_COMMANDS = ("conformance", "evidence", "explain", "explain-error", "export", "find", "history", "replay", "sets",
                   "snapshot", "stats", "synth", "whatif")
# Documents printed one per line (JSON Lines), by the name `schema` knows them by: `replay --jsonl`
# and `watch --jsonl` print the same verdict lines.
LINE_SCHEMAS = ("replay-jsonl",)
SCHEMA_NAMES = SCHEMA_COMMANDS + LINE_SCHEMAS  # every shipped schema file
ALIAS_OF = "x-aliasOf"  # on a deprecated property: the key it is the old name of


def schema_file(command: str) -> str:
    return f"{command}.schema.json"


def schema_text(command: str) -> str:
    """The shipped schema file of `command`, as it is on disk."""
    if command not in SCHEMA_NAMES:
        raise ForensicsError(ExitCode.USAGE, f"no JSON schema for {command!r}; commands with --json: {', '.join(SCHEMA_COMMANDS)}; "
                             f"JSON Lines: {', '.join(LINE_SCHEMAS)}")
    return resources.files(__name__).joinpath(schema_file(command)).read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def _schema(command: str) -> str:
    return schema_text(command)


def load_schema(command: str) -> dict[str, Any]:
    """The JSON Schema of `command --json` (a fresh dict each call)."""
    return json.loads(_schema(command))


def json_document(command: str, obj: Any) -> Any:
    """What `command --json` prints for `obj`: `schema_version` first in the document (in each
    element when the document is an array) and the deprecated aliases its schema declares."""
    doc = _each_object(obj, load_schema(command), _with_aliases)
    if isinstance(doc, list):
        return [{"schema_version": SCHEMA_VERSION, **x} if isinstance(x, dict) else x for x in doc]
    return {"schema_version": SCHEMA_VERSION, **doc} if isinstance(doc, dict) else doc


def without_deprecated(command: str, doc: Any) -> Any:
    """`doc` without the deprecated aliases (what a consumer of the next minor release sees)."""
    return _each_object(doc, load_schema(command), lambda out, props: {k: v for k, v in out.items()
                                                                        if not props.get(k, {}).get("deprecated")})


def _with_aliases(out: dict[str, Any], props: dict[str, Any]) -> dict[str, Any]:
    """Each deprecated alias the schema declares, right after the key it is the old name of."""
    olds: dict[str, list[str]] = {}
    for old, p in props.items():
        if ALIAS_OF in p:
            olds.setdefault(p[ALIAS_OF], []).append(old)
    if not olds:
        return out
    res: dict[str, Any] = {}
    for k, x in out.items():
        res[k] = x
        for old in olds.get(k, ()):
            res[old] = x
    return res


def _resolve(s: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in s:
        s = root["$defs"][s["$ref"].rsplit("/", 1)[-1]]
    return s


def _fits(v: Any, s: dict[str, Any]) -> bool:
    """Whether `v` is the object (with every required key but the stamp) or array `s` describes."""
    types = s.get("type")
    types = [types] if isinstance(types, str) else (types or [])
    if isinstance(v, dict):
        return "object" in types and all(k in v for k in s.get("required", ()) if k != "schema_version")
    return isinstance(v, list) and "array" in types


def _each_object(v: Any, s: dict[str, Any], fn: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]],
                 root: dict[str, Any] | None = None) -> Any:
    """`v` with `fn(object, its schema's properties)` applied to every object of ours the schema
    `s` describes, innermost first (maps of data, which declare no properties, are left alone)."""
    root = s if root is None else root
    s = _resolve(s, root)
    for branch in s.get("anyOf", ()):
        b = _resolve(branch, root)
        if _fits(v, b):
            return _each_object(v, b, fn, root)
    if isinstance(v, list) and isinstance(s.get("items"), dict):
        return [_each_object(x, s["items"], fn, root) for x in v]
    props = s.get("properties")
    if not isinstance(v, dict) or not props:
        return v
    return fn({k: _each_object(x, props[k], fn, root) if k in props else x for k, x in v.items()}, props)


_WORD = re.compile(r"_([a-z0-9])")


def camel(name: str) -> str:
    """`winning_version` -> `winningVersion`: the log's spelling, which every JSON key follows."""
    return _WORD.sub(lambda m: m.group(1).upper(), name)


def camel_keys(obj: Any, keep: tuple[str, ...] = ()) -> Any:
    """Records of ours (dicts, and lists of them, recursively) with camelCase keys. The value under
    a key in `keep` is a map of data (metric names, partition values) and stays as it is."""
    if isinstance(obj, dict):
        return {camel(k): (v if k in keep else camel_keys(v, keep)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [camel_keys(x, keep) for x in obj]
    return obj
