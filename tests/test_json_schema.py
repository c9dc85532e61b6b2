"""The JSON contract, checked on real output: every command's `--json` document, printed on the
sample tables, validates against the schema shipped for it (`jsonschema`, draft 2020-12); the
schemas are strict enough to fail on drift; the shipped files are what their definitions build;
renamed keys keep their old names as deprecated aliases with the same values; every epoch-ms time
has its ISO 8601 twin; docs/json.md is what scripts/readme_json.py generates."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from forensics.errors import ExitCode
from forensics.schemas import ALIAS_OF, SCHEMA_COMMANDS, SCHEMA_NAMES, SCHEMA_VERSION, json_document, load_schema, schema_text
from forensics.times import iso_utc
from helpers import run_cli, spark_event_log

ROOT = Path(__file__).resolve().parents[1]
S = "sample_logs"
WITH_ERROR_TEXT = ("a-merge-partitions", "c-optimize-vs-delete", "d-alter-table", "e-streaming-shared-checkpoint",
                   "f-delta-rs-aborted")


def _readme_script():
    spec = importlib.util.spec_from_file_location("readme_json", ROOT / "scripts" / "readme_json.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _txn_id(table: Path, version: int) -> str:
    """The commitInfo txnId of `version`, read with json (the sample may be regenerated)."""
    for line in (table / "_delta_log" / f"{version:020d}.json").read_text().splitlines():
        if '"commitInfo"' in line:
            return json.loads(line)["commitInfo"]["txnId"]
    raise AssertionError(f"v{version} of {table} has no commitInfo")


def _more_runs(tmp: Path) -> list[list[str]]:
    """Real runs beyond the README's examples: every sample, every error text, other shapes."""
    t = lambda name: str(ROOT / S / name / "table")  # noqa: E731
    runs = [["history", t(p.parent.name)] for p in sorted((ROOT / S).glob("*/table"))]
    runs += [
        ["snapshot", t("quickstart")], ["snapshot", t("busy"), "--version", "10"],
        ["sets", t("a-merge-partitions")],
        ["replay", t("busy"), "--all"], ["replay", t("quickstart"), "--partition-by", "id"],
        ["explain", t("b-writeserializable-reorder"), "3"], ["explain", t("c-optimize-vs-delete"), "6"],
        ["explain", t("e-streaming-shared-checkpoint"), "4", "--no-evidence"],
        ["whatif", t("b-writeserializable-reorder"), "--read-version", "1", "--operation", "DELETE",
         "--predicate", "status = 'cancelled'"],
        ["whatif", t("c-optimize-vs-delete"), "--read-version", "4", "--operation", "OPTIMIZE"],
        ["explain-error", t("a-merge-partitions"), "--event-log",
         str(spark_event_log((ROOT / S / "a-merge-partitions" / "error.txt").read_text(), tmp / "events"))],
        ["evidence", t("a-merge-partitions")], ["evidence", t("quickstart"), "--no-replay"],
        ["stats", t("f-delta-rs-aborted"), "--window", "1m"], ["stats", t("busy")],
        ["find", t("e-streaming-shared-checkpoint"), "--txn-id", _txn_id(ROOT / S / "e-streaming-shared-checkpoint" / "table", 1)],
        ["history", t("busy"), "--since", "2000-01-01", "--last", "3"], ["stats", t("busy"), "--last", "20"],
        ["stats", t("b-writeserializable-reorder"), t("f-delta-rs-aborted")],
        ["export", t("a-merge-partitions"), "--format", "mermaid", "-o", str(tmp / "a.mmd")],
        ["conformance", "--cases", str(ROOT / "forensics" / "conformance" / "scenarios" / "delta-rs.json")],
    ]
    for name in WITH_ERROR_TEXT:
        err = str(ROOT / S / name / "error.txt")
        runs += [["explain-error", t(name), "--error-file", err], ["explain-error", "--error-file", err]]
    return runs


@pytest.fixture(scope="module")
def outputs(spark, tmp_path_factory) -> dict[str, Any]:
    """README examples (scripts/readme_json.py) and more runs: {"readme": its examples, "runs": {command: [(argv, doc)]}}."""
    rj = _readme_script()
    tmp = tmp_path_factory.mktemp("json-schema").resolve()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DELTA_FORENSICS_CACHE_DIR", str(tmp / "cache"))
        mp.delenv("DELTA_FORENSICS_UTC", raising=False)  # main() sets it for --utc: restored on exit
        readme = rj.run_examples(tmp)
        runs: dict[str, list[tuple[list[str], Any]]] = {c: [(argv, doc)] for c, (argv, doc) in readme.items()}
        for argv in _more_runs(tmp):
            extra = ["--json"] + ([] if argv[0] == "conformance" else ["--utc", "-q"])
            rc, out, err = run_cli(argv + extra)
            assert rc == 0, (argv, err[-500:])
            runs[argv[0]].append((argv, json.loads(out)))
    return {"readme": readme, "runs": runs, "rj": rj}


def _validator(command: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(load_schema(command), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def _errors(command: str, doc: Any) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message[:300]}" for e in _validator(command).iter_errors(doc)]


# ---- the schemas themselves ----------------------------------------------------------------


def test_every_command_with_json_has_a_schema():
    from forensics.cli.main import build_parser

    parser = build_parser([])
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    with_json = {name for name, p in sub.choices.items() if "--json" in p._option_string_actions}
    assert with_json == set(SCHEMA_COMMANDS)


@pytest.mark.parametrize("command", SCHEMA_NAMES)
def test_shipped_schema_is_valid_and_built_from_the_definitions(command):
    from forensics.schemas.build import render

    text = schema_text(command)
    assert text == render(command), "run: python -m forensics.schemas.build"
    schema = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA_VERSION in schema["$id"]


def test_schemas_are_package_data(tmp_path):
    """What `pip install .` copies: setuptools' build_py of the package, on a copy of the sources."""
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    for pkg in ("forensics", "tui"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py", "--build-lib", str(out)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    shipped = {p.name for p in (out / "forensics" / "schemas").glob("*.schema.json")}
    assert shipped == {f"{c}.schema.json" for c in SCHEMA_NAMES}


def test_schema_command_prints_the_shipped_file():
    rc, out, err = run_cli(["schema"])
    assert rc == 0 and out.split() == list(SCHEMA_NAMES)
    for command in SCHEMA_NAMES:
        rc, out, err = run_cli(["schema", command])
        assert rc == 0 and out == schema_text(command), command
        assert json.loads(out) == load_schema(command)
    rc, out, _ = run_cli(["schema", "explain_error"])
    assert rc == 0 and json.loads(out)["title"].startswith("delta-forensics explain-error --json")
    rc, out, err = run_cli(["schema", "no-such-command"])
    assert rc == int(ExitCode.USAGE) and out == ""
    assert len(err.strip().splitlines()) == 1 and "no-such-command" in err and "explain-error" in err


def test_help_lists_every_exit_code():
    rc, out, _ = run_cli(["--help"])
    assert rc == 0
    text = " ".join(out.split())
    for code in ExitCode:
        assert f"{int(code)} {code.meaning}" in text, code


# ---- real output against the schemas -------------------------------------------------------


@pytest.mark.parametrize("command", SCHEMA_COMMANDS)
def test_real_output_validates(outputs, command):
    runs = outputs["runs"][command]
    assert runs, f"no real run of {command}"
    for argv, doc in runs:
        assert _errors(command, doc) == [], argv


def test_schema_version_leads_every_document(outputs):
    for command, runs in outputs["runs"].items():
        for argv, doc in runs:
            items = doc if isinstance(doc, list) else [doc]
            assert items, argv
            for x in items:
                assert next(iter(x)) == "schema_version" and x["schema_version"] == SCHEMA_VERSION, argv


def test_validation_fails_on_drift(outputs):
    """The schemas can fail: an unknown key, a missing key, a retyped value, another version."""
    (_, whatif), *_ = outputs["runs"]["whatif"]
    assert _errors("whatif", whatif) == []
    drifted = []
    d = copy.deepcopy(whatif); d["winning_version_new"] = 3; drifted.append(d)  # noqa: E702
    d = copy.deepcopy(whatif); del d["winningVersion"]; drifted.append(d)  # noqa: E702
    d = copy.deepcopy(whatif); d["winningVersion"] = str(d["winningVersion"]); drifted.append(d)  # noqa: E702
    d = copy.deepcopy(whatif); d["schema_version"] = "1.0"; drifted.append(d)  # noqa: E702
    d = copy.deepcopy(whatif); d["checks"][0]["surprise"] = True; drifted.append(d)  # noqa: E702
    d = copy.deepcopy(whatif); d["checks"][0]["status"] = "maybe"; drifted.append(d)  # noqa: E702
    for bad in drifted:
        assert _errors("whatif", bad), bad
    # a map of data stays open; an alias may be left out (deprecated, not required)
    d = copy.deepcopy(whatif)
    d["partition"] = {"any_column": "x"}
    d.pop("winning_version")
    assert _errors("whatif", d) == []
    (_, history), *_ = outputs["runs"]["history"]
    bad = copy.deepcopy(history)
    del bad[0]["timestampIso"]
    assert _errors("history", bad)
    bad = copy.deepcopy(history)
    bad[0]["timestampIso"] = "2024-06-25 08:00:00"  # not ISO 8601 with milliseconds and Z
    assert _errors("history", bad)


def _aliases(node: Any) -> dict[str, str]:
    """Every deprecated alias a schema declares: old name -> new name."""
    out: dict[str, str] = {}
    if isinstance(node, dict):
        for k, v in (node.get("properties") or {}).items():
            if isinstance(v, dict) and ALIAS_OF in v:
                assert v.get("deprecated") is True, k
                out[k] = v[ALIAS_OF]
        for v in node.values():
            out.update(_aliases(v))
    elif isinstance(node, list):
        for v in node:
            out.update(_aliases(v))
    return out


DATA_MAPS = {"commitInfo", "operationParameters", "configuration", "source", "job", "notebook"}


def _objects(v: Any):
    """Every object in a document, except maps of data copied from a log or a scenario file."""
    if isinstance(v, dict):
        yield v
        for k, x in v.items():
            if k not in DATA_MAPS:
                yield from _objects(x)
    elif isinstance(v, list):
        for x in v:
            yield from _objects(x)


@pytest.mark.parametrize("command", SCHEMA_COMMANDS)
def test_renamed_keys_keep_their_old_names_for_now(outputs, command):
    """Each alias appears in real output, right after its new key, with the same value."""
    aliases = _aliases(load_schema(command))
    seen = set()
    for _, doc in outputs["runs"][command]:
        for o in _objects(doc):
            keys = list(o)
            for old, new in aliases.items():
                if old in o and new in o:
                    seen.add(old)
                    assert o[old] == o[new], (old, new)
                    assert keys.index(old) > keys.index(new), (old, new)
    assert set(aliases) - seen == set(), "aliases no run printed"


def test_json_document_leaves_maps_of_data_alone():
    doc = json_document("whatif", {"verdict": "abort", "winningVersion": 3, "partition": {"winningVersion": "x"},
                                   "checks": [{"check": "appends", "winnerVersion": 2}]})
    assert list(doc) == ["schema_version", "verdict", "winningVersion", "winning_version", "partition", "checks"]
    assert doc["partition"] == {"winningVersion": "x"}
    assert doc["checks"] == [{"check": "appends", "winnerVersion": 2, "winner_version": 2}]


def test_every_epoch_time_has_its_iso_twin(outputs):
    pairs = 0
    for command, runs in outputs["runs"].items():
        for argv, doc in runs:
            for o in _objects(doc):
                for k in [k for k in o if k.endswith("Iso")]:
                    base = k[:-3] if k[:-3] in o else k[:-3] + "Ms"
                    assert base in o, (command, k)
                    assert o[k] == iso_utc(o[base]), (command, k, o[base])
                    pairs += o[base] is not None
                for k in ("timestamp", "startMs", "endMs", "firstSeen", "lastSeen", "mtime", "createdTime"):
                    if k in o and isinstance(o[k], int):
                        assert k.removesuffix("Ms") + "Iso" in o, (command, k)
    assert pairs > 100


# ---- the documents that describe the contract ----------------------------------------------


def test_json_page_is_generated(outputs):
    rj = outputs["rj"]
    page = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
    assert rj.region(page) == rj.section(outputs["readme"]), "run: python scripts/readme_json.py"


def test_changelog_names_every_rename():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "](CHANGELOG.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    for command in SCHEMA_COMMANDS:
        for old, new in _aliases(load_schema(command)).items():
            assert re.search(rf"`(?:[\w\[\]]+\.)?{re.escape(old)}` →\s+`(?:[\w\[\]]+\.)?{re.escape(new)}`", text), (command, old, new)
