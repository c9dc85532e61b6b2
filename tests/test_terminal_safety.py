"""Untrusted log fields never reach the terminal live.

A table's log is written by whoever could write to the table: user names, operations,
parameters, engineInfo, paths, partition values and error texts can carry ANSI CSI / OSC
sequences (OSC 52 writes the clipboard), 8-bit C1 controls (U+009B is CSI on many terminals),
bidi overrides and Rich markup. Every CLI output (text and --json) and the TUI must show them
inert: no raw control byte leaves the process, markup shows literally, JSON stays valid.
"""

from __future__ import annotations

import io
import json
import os
import re
import uuid
from pathlib import Path

import pytest

from forensics.cli.main import command_modules
from helpers import run_cli, tree_state

MARKUP = "[bold red]M[/bold red]"
LINK = "[link=https://evil.example]click[/link]"
EVIL = MARKUP + " \x1b[31mRED\x1b[0m \x1b]52;c;ZXZpbA==\x07 \x9b31m \u202eevil\u202c " + LINK + " \x00\x08\r\n\x7f\x85end"
# Partition values end up in SQL literals and directory names: no quote, no slash.
EVIL_PV = "[bold]pv[/bold]\x1b[2J\u2066x\x9b"
EVIL_PATH = "p=x/\x1b]8;;http://evil\x07part-\x9b[b]0[/b].parquet"
ENGINE = "Apache-Spark/3.5.1 Delta-Lake/3.2.0"

# Forbidden in anything printed: C0 controls but newline, DEL, C1 controls, bidi overrides/isolates.
# Lone surrogates too: they stand for bytes that are not UTF-8 (file names) and would be written raw.
FORBIDDEN = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _ci(version: int, operation: str, read_version: int | None, **extra) -> dict:
    ci = {"timestamp": 1718870000000 + version * 1000, "operation": operation, "operationParameters": extra.pop("params", {})}
    if read_version is not None:
        ci["readVersion"] = read_version
    ci.update({"isolationLevel": "Serializable", "isBlindAppend": extra.pop("blind", False), "engineInfo": extra.pop("engine", ENGINE)})
    ci["txnId"] = extra.pop("txn", str(uuid.UUID(int=version + 1)))
    ci.update(extra)
    return {"commitInfo": ci}


def _add(path: str, pv: str) -> dict:
    return {"add": {"path": path, "partitionValues": {"p": pv}, "size": 100, "modificationTime": 1718870000000,
                    "dataChange": True, "stats": json.dumps({"numRecords": 1})}}


def write_evil_table(root: Path) -> Path:
    """A delta-spark-format log whose every free-text field is hostile, with two stale windows."""
    log = root / "_delta_log"
    log.mkdir(parents=True)
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}},
                                           {"name": "p", "type": "string", "nullable": True, "metadata": {}}]}
    p1, p2, p3, p4 = (f"p=a/part-{i}.parquet" for i in range(4))
    commits = [
        [
            _ci(0, "CREATE TABLE AS SELECT", None, params={"partitionBy": json.dumps(["p"]), "description": EVIL}, blind=True),
            {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
            {"metaData": {"id": "00000000-0000-0000-0000-00000000e411", "name": EVIL, "description": EVIL,
                          "format": {"provider": "parquet", "options": {}}, "schemaString": json.dumps(schema),
                          "partitionColumns": ["p"], "configuration": {"delta.evil": EVIL}, "createdTime": 1718870000000}},
            _add(p1, EVIL_PV),
        ],
        [
            _ci(1, "WRITE", 0, params={"mode": "Append", "partitionBy": "[]"}, blind=True, userName=EVIL, userId=EVIL,
                clusterId=EVIL, notebook={"notebookId": EVIL}, userMetadata=EVIL, engine=ENGINE + " " + EVIL),
            _add(EVIL_PATH, EVIL_PV),
        ],
        [
            _ci(2, "DELETE", 0, params={"predicate": json.dumps([f"(p = '{EVIL_PV}')"])}),
            {"remove": {"path": p1, "partitionValues": {"p": EVIL_PV}, "deletionTimestamp": 1718870002000, "dataChange": True}},
            _add(p2, EVIL_PV),
        ],
        [
            _ci(3, EVIL, 1, txn=EVIL, isolationLevel=EVIL),
            _add(p3, "b"),
            {"evil\x1b[31m[bold]": {"x": EVIL}},
        ],
    ]
    for v, actions in enumerate(commits):
        lines = [json.dumps(a) for a in actions]
        body = "\n".join(lines).encode() + b"\n"
        if v == 3:
            body += b'{"commitInfo":{"operation":"\x1b[31mRAW\x9b\xc2\x9b"}}\n'  # raw control bytes: not valid JSON
        (log / f"{v:020d}.json").write_bytes(body)
    data = root / "p=a"
    data.mkdir()
    for p in (p1, p2, p3, p4):
        (root / p).write_bytes(b"PAR1 not really")
    # An orphan whose on-disk name is hostile: evidence lists it.
    (data / "orphan-\x1b[31m-[bold]x-\x9b.parquet").write_bytes(b"PAR1 orphan")
    # Names that are not UTF-8: a lone 0x9b byte is CSI on 8-bit terminals.
    (Path(os.fsdecode(os.fsencode(data) + b"/orphan-\x9b[31m-\xff.parquet"))).write_bytes(b"PAR1 orphan")
    (Path(os.fsdecode(os.fsencode(log) + b"/\x9b\xff[1m.json.tmp"))).write_bytes(b"{}")
    return root


ERROR_TEXT = (
    "io.delta.exceptions.ConcurrentAppendException: [DELTA_CONCURRENT_APPEND] ConcurrentAppendException: "
    f"Files were added to partition [p={EVIL_PV}] by a concurrent update. Please try the operation again.\n"
    "Conflicting commit: " + json.dumps({"timestamp": 1718870001000, "userName": EVIL, "operation": "WRITE",
                                         "operationParameters": {"mode": "Append"}, "readVersion": 0,
                                         "isolationLevel": "Serializable", "isBlindAppend": True,
                                         "engineInfo": EVIL, "txnId": EVIL}, ensure_ascii=False)
    + "\nRefer to https://docs.delta.io/latest/concurrency-control.html for more details.\n\x1b]52;c;ZXZpbA==\x07"
)


@pytest.fixture(scope="module")
def evil(tmp_path_factory):
    root = tmp_path_factory.mktemp("evil")
    t = write_evil_table(root / "table")
    err = root / "error.txt"
    err.write_text(ERROR_TEXT, encoding="utf-8")
    return t, err


# Same as tests/test_readonly.py (kept here so each file runs on its own).


def assert_inert(s: str, where) -> None:
    m = FORBIDDEN.search(s)
    assert m is None, f"{where}: raw control character {m.group(0)!r} at {m.start()}: {s[max(0, m.start() - 60): m.start() + 20]!r}"


def _commands(t: Path, err: Path, out: Path) -> list[list[str]]:
    have = set(command_modules())
    cmds = [
        ["history", str(t)],
        ["snapshot", str(t)],
        ["snapshot", str(t), "--version", "1"],
        ["sets", str(t)],
        ["replay", str(t), "--all"],
        ["explain", str(t), "2"],
        ["explain", str(t), "3", "--error-file", str(err)],
        ["whatif", str(t), "--read-version", "0", "--operation", "DELETE", "--predicate", f"p = '{EVIL_PV}'"],
    ]
    if "evidence" in have:
        cmds.append(["evidence", str(t)])
    if "explain_error" in have:
        cmds.append(["explain-error", "--error-file", str(err)])
        cmds.append(["explain-error", str(t), "--error-file", str(err)])
    if "stats" in have:
        cmds.append(["stats", str(t)])
    if "export" in have:
        cmds.append(["export", str(t), "--format", "mermaid", "-o", str(out / "t.mmd")])
    return cmds


def test_cli_output_is_inert_and_json_is_valid(evil, tmp_path, spark):
    t, err = evil
    shown_markup = set()
    for argv in _commands(t, err, tmp_path):
        for extra in ([], ["--json"]):
            rc, out, errtext = run_cli(argv + extra)
            where = " ".join(argv[:1] + argv[2:] + extra)
            assert rc == 0, (where, errtext)
            assert "Traceback" not in errtext, where
            assert_inert(out, f"{where} stdout")
            assert_inert(errtext, f"{where} stderr")
            if extra:
                assert out.isascii(), where  # ensure_ascii: nothing a terminal could act on, even when cat-ed
                json.loads(out)
            elif "[bold" in out:
                shown_markup.add(argv[0])
    # Markup was printed literally (not interpreted, not swallowed) by the views that show these fields.
    assert {"history", "replay"} <= shown_markup, shown_markup
    if "evidence" in command_modules():
        assert "evidence" in shown_markup


def test_json_keeps_the_hostile_values_exactly(evil, spark):
    """Escaping is for terminals only: --json round-trips the log's strings unchanged."""
    t, _ = evil
    rc, out, _ = run_cli(["history", str(t), "--json"])
    assert rc == 0
    rows = {r["version"]: r for r in json.loads(out)}
    assert rows[1]["userName"] == EVIL
    assert rows[1]["engineInfo"] == ENGINE + " " + EVIL
    assert rows[3]["operation"] == EVIL
    assert rows[3]["txnId"] == EVIL
    assert rows[0]["operationParameters"]["description"] == EVIL
    rc, out, _ = run_cli(["snapshot", str(t), "--json", "--version", "1"])
    snap = json.loads(out)
    assert EVIL_PATH in {f["path"] for f in snap["files"]}
    assert {f["partitionValues"]["p"] for f in snap["files"]} == {EVIL_PV}
    assert snap["metadata"]["configuration"]["delta.evil"] == EVIL


def test_findings_lines_are_inert(evil, spark):
    """The unknown action's key and the raw-control-byte line become findings: one line each, inert."""
    t, _ = evil
    rc, _, err = run_cli(["history", str(t)])
    assert rc == 0
    lines = err.splitlines()
    assert any("commit.unknown_action" in x and "\\x1b[31m[bold]" in x for x in lines), lines
    assert any(("commit.bad_line" in x or "commit.non_utf8" in x) and "00000000000000000003.json, version 3" in x for x in lines), lines
    for x in lines:
        assert_inert(x, "finding")


def test_safe_module_neutralises_every_control_character():
    from rich.console import Console

    from forensics import safe

    for cp in list(range(0, 0x20)) + list(range(0x7F, 0xA0)) + [0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069]:
        s = safe.inert(f"a{chr(cp)}b")
        assert FORBIDDEN.search(s) is None and s.startswith("a") and s.endswith("b"), hex(cp)
    console = Console(file=io.StringIO(), width=200, color_system=None, force_terminal=False)
    console.print(safe.markup(EVIL))
    console.print(safe.text(EVIL))
    printed = console.file.getvalue()
    assert_inert(printed, "rich")
    assert printed.count("[bold red]M[/bold red]") == 2 and printed.count(LINK) == 2


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), lambda c: st.lists(c, max_size=4)
                    | st.dictionaries(st.text(), c, max_size=4), max_leaves=12))
def test_ascii_json_is_what_json_dumps_writes_with_ensure_ascii(value):
    """forensics/safe.py ascii_json on JSON text written raw equals json.dumps(ensure_ascii=True),
    whether or not the text is plain ASCII (its fast path) and with DEL, which isascii() lets by."""
    from forensics.safe import ascii_json

    raw = json.dumps(value, ensure_ascii=False)
    assert ascii_json(raw) == json.dumps(value, ensure_ascii=True)
    assert ascii_json(raw + "\x7f") == json.dumps(value, ensure_ascii=True) + "\\u007f"


async def test_tui_shows_hostile_fields_inert(evil, spark):
    from textual.css.query import NoMatches

    from tui.app import ForensicsApp
    from tui.widgets.version_list import VersionList

    def rows():
        try:
            return app.screen.query_one(VersionList).rows
        except NoMatches:  # not composed yet
            return None

    t, _ = evil
    before = tree_state(t)
    app = ForensicsApp(str(t), utc=True, spark_factory=lambda: spark)
    seen_markup = False
    async with app.run_test(size=(200, 50)) as pilot:
        for _ in range(400):
            await pilot.pause(0.05)
            if rows() is not None and not any(w.state.name in ("PENDING", "RUNNING") for w in app.workers):
                break
        assert rows() is not None, "the app did not load the table"
        for key in ("g", "down", "down", "down"):
            await pilot.press(key)
            for _ in range(100):
                await pilot.pause(0.05)
                if not any(w.state.name in ("PENDING", "RUNNING") for w in app.workers):
                    break
            await pilot.pause(0.2)
            svg = app.export_screenshot()
            assert_inert(svg, f"tui after {key}")
            seen_markup = seen_markup or "[bold" in svg
    assert seen_markup  # the markup text is on screen, literally
    assert tree_state(t) == before
