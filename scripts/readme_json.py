"""Regenerate docs/json.md (the "JSON output" page) from the shipped schemas and real runs.

The region between `<!-- json:begin -->` and `<!-- json:end -->` is written by this script and
nothing else: for each command with --json, what its document is (the schema's description),
its top-level keys (from the schema) and an example printed by the real command on a copy of
`sample_logs/` (file times restored from mtimes.json, `--utc`), trimmed, deprecated aliases left
out. tests/test_json_schema.py checks the page says exactly what this script generates.

    python scripts/readme_json.py           # rewrite the region
    python scripts/readme_json.py --check   # exit 1 if the page is stale
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "docs" / "json.md"  # the page this script writes (the README once held it)
BEGIN, END = "<!-- json:begin -->", "<!-- json:end -->"
SAMPLES = "sample_logs"
A, B, E, F = (f"{SAMPLES}/{n}" for n in ("a-merge-partitions", "b-writeserializable-reorder", "e-streaming-shared-checkpoint",
                                        "f-delta-rs-aborted"))
KERNEL_CASES = "forensics/conformance/scenarios/delta-kernel-java.json"


def _query_id(sample: str) -> str:
    """The streaming query id sample (e) recorded (its txn appId; delta-spark chose it), read from its log."""
    for f in sorted((ROOT / sample / "table" / "_delta_log").glob("*.json")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.startswith('{"txn"'):
                return json.loads(line)["txn"]["appId"]
    return ""


# (command, arguments as a reader would type them from the repository root). `{out}` is a scratch directory.
EXAMPLES: list[tuple[str, list[str]]] = [
    ("history", [f"{B}/table", "--from", "2", "--to", "3"]),
    ("snapshot", [f"{A}/table"]),
    ("sets", [f"{B}/table", "--version", "3"]),
    ("replay", [f"{B}/table", "--isolation-level", "Serializable"]),
    ("explain", [f"{A}/table", "3", "--error-file", f"{A}/error.txt"]),
    ("whatif", [f"{A}/table", "--read-version", "2", "--operation", "MERGE", "--predicate", "date = '2024-06-18'"]),
    ("explain-error", [f"{A}/table", "--error-file", f"{A}/error.txt"]),
    ("evidence", [f"{F}/table"]),
    ("stats", [f"{B}/table"]),
    ("find", [f"{E}/table", "--app-id", _query_id(E), "--txn-version", "3"]),
    ("export", [f"{B}/table", "--format", "json", "-o", "{out}/incident.json"]),
    ("conformance", ["--cases", KERNEL_CASES]),
    ("synth", ["{out}/synthetic", "--commits", "10", "--seed", "1"]),
]
NO_EXAMPLE = {"synth": "its `seconds` differ run to run"}
OBJECTS, SCALARS, STRING_CHARS, LINE = 1, 4, 100, 110


def run_examples(scratch: Path) -> dict[str, tuple[list[str], Any]]:
    """Run every example in-process on a copy of the samples under `scratch`: command -> (argv as
    shown, the printed document with scratch paths made relative again)."""
    from forensics.cli.main import main
    from forensics.synth.mtimes import restored_copy

    copy = scratch / "repo"
    for name in sorted({a.split("/")[1] for _, args in EXAMPLES for a in args if a.startswith(SAMPLES + "/")}):
        restored_copy(ROOT / SAMPLES / name, copy / SAMPLES / name / "table")
        for extra in (ROOT / SAMPLES / name).glob("*.txt"):
            (copy / SAMPLES / name / extra.name).write_bytes(extra.read_bytes())
    (scratch / "out").mkdir(exist_ok=True)
    out: dict[str, tuple[list[str], Any]] = {}
    with mock.patch.dict(os.environ):  # main() sets DELTA_FORENSICS_UTC for --utc: put back afterwards
        for command, args in EXAMPLES:
            shown = [command, *args, "--json", *([] if command in ("conformance", "synth") else ["--utc"])]
            real = [_real(a, copy, scratch) for a in shown]
            buf, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
                rc = main(real + ([] if command in ("conformance", "synth") else ["-q"]))
            if rc != 0:
                raise RuntimeError(f"{' '.join(shown)} exited {rc}: {err.getvalue()[-500:]}")
            text = buf.getvalue().replace(str(copy) + "/", "").replace(str(scratch / "out"), "/tmp/out")
            out[command] = ([a.replace("{out}", "/tmp/out") for a in shown], json.loads(text))
    return out


def _real(arg: str, copy: Path, scratch: Path) -> str:
    if arg.startswith(SAMPLES + "/"):
        return str(copy / arg)
    if arg.startswith("forensics/"):
        return str(ROOT / arg)
    return arg.replace("{out}", str(scratch / "out"))


def trimmed(v: Any) -> Any:
    """Arrays of objects cut to their first element, other arrays to a few (then how many more),
    long strings cut."""
    if isinstance(v, dict):
        return {k: trimmed(x) for k, x in v.items()}
    if isinstance(v, list):
        keep = OBJECTS if any(isinstance(x, (dict, list)) for x in v) else SCALARS
        return [trimmed(x) for x in v[:keep]] + ([f"… {len(v) - keep} more"] if len(v) > keep else [])
    if isinstance(v, str) and len(v) > STRING_CHARS:
        return v[: STRING_CHARS - 1] + "…"
    return v


def compact(v: Any, indent: int = 0, lead: int = 0) -> str:
    """JSON indented two spaces a level, with every object or array that fits a line kept on one
    (`lead`: the characters before it on its line)."""
    flat = json.dumps(v, ensure_ascii=False)
    if not isinstance(v, (dict, list)) or not v or indent + lead + len(flat) <= LINE:
        return flat
    pad = " " * (indent + 2)
    if isinstance(v, dict):
        items = [f"{pad}{json.dumps(k)}: {compact(x, indent + 2, len(json.dumps(k)) + 2)}" for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    return "[\n" + ",\n".join(pad + compact(x, indent + 2) for x in v) + "\n" + " " * indent + "]"


def _keys(schema: dict[str, Any]) -> str:
    """The document's top-level keys, `?` after those that may be absent (aliases left out)."""
    body = schema
    if body.get("type") == "array":
        body = body["items"]
    branches = body.get("anyOf", [body])
    parts = []
    for b in branches:
        req = set(b["required"])
        keys = [f"`{k}`" + ("" if k in req else "?") for k, p in b["properties"].items() if not p.get("deprecated")]
        parts.append(", ".join(keys))
    return " — or — ".join(parts)


def section(results: dict[str, tuple[list[str], Any]]) -> str:
    """The page region's text (markers excluded)."""
    from forensics.schemas import SCHEMA_COMMANDS, SCHEMA_VERSION, load_schema, without_deprecated

    order = [c for c, _ in EXAMPLES]
    assert sorted(order) == sorted(SCHEMA_COMMANDS), "every command with --json has an example entry"

    out = [
        "<!-- generated by scripts/readme_json.py from forensics/schemas/*.schema.json and real runs; do not edit by hand -->",
        "# JSON output",
        "",
        "Every `--json` document has a JSON Schema (draft 2020-12) shipped with the package: `delta-forensics schema`",
        "lists the commands, `delta-forensics schema COMMAND` prints one (`forensics.load_schema(command)` in Python).",
        "",
        f"- `schema_version` (`\"{SCHEMA_VERSION}\"`) comes first in every document; `history` and `sets` print JSON arrays",
        "  and each element carries it. [The changelog](changelog.md) says what a change of it means.",
        "- Keys are camelCase, as Delta's log spells its own (`readVersion`, `txnId`, `isBlindAppend`, `isolationLevel`,",
        "  `winningVersion`); maps of data (partition values, `operationParameters`, `configuration`, …) keep their keys.",
        "- Every epoch-milliseconds time has its ISO 8601 UTC twin next to it: `timestamp` and `timestampIso`, `startMs`",
        "  and `startIso` (`null` with it).",
        "- A key renamed in 2.0 is also printed under its old name until the next minor release (`\"deprecated\": true`",
        "  in the schema, with `x-aliasOf` naming the new key); the examples leave those aliases out.",
        f"- Examples are real runs on `{SAMPLES}/`; arrays of objects are cut to {OBJECTS}, other arrays to {SCALARS} elements,",
        f"  strings to {STRING_CHARS} characters.",
        "",
    ]
    for command in order:
        schema = load_schema(command)
        out += [f"## `{command} --json`", "", f"{schema['description']} Keys: {_keys(schema)}.", ""]
        if command in NO_EXAMPLE:
            out += [f"No example here: {NO_EXAMPLE[command]}.", ""]
            continue
        argv, doc = results[command]
        shown = html.escape(" ".join(_quoted(a) for a in argv))
        out += [f"<details><summary>Example: <code>delta-forensics {shown}</code></summary>", "", "```json",
                compact(trimmed(without_deprecated(command, doc))), "```", "</details>", ""]
    return "\n".join(out)


def _quoted(a: str) -> str:
    return f'"{a}"' if (" " in a or "'" in a) else a


def replaced(readme: str, region: str) -> str:
    head, sep, rest = readme.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise SystemExit(f"{README.relative_to(ROOT)} has no {BEGIN} … {END} region")
    return f"{head}{BEGIN}\n{region}{END}{tail}"


def region(readme: str) -> str:
    """The page's current region text (between the markers, markers excluded)."""
    return readme.partition(BEGIN)[2].partition(END)[0].removeprefix("\n")


def generate() -> str:
    with tempfile.TemporaryDirectory(prefix="readme-json-") as tmp:
        return section(run_examples(Path(tmp)))


def main(argv: list[str]) -> int:
    readme = README.read_text(encoding="utf-8")
    new = replaced(readme, generate())
    if "--check" in argv:
        stale = new != readme
        print("docs/json.md is " + ("stale: run python scripts/readme_json.py" if stale else "current"))
        return int(stale)
    README.write_text(new, encoding="utf-8")
    print("docs/json.md written")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
