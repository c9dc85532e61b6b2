"""print_fit writes a large fit_table's rows itself (forensics/cli/columns.py): what it writes must be
byte for byte what Rich's Table prints through the same console, with colour and without, on any
cells (wide characters, styles, spans, ellipses, wrapped and multi-line cells) and at any width,
including widths where the kept columns do not fit and Rich narrows every column. Then the real
`history`, `replay` and `stats` text of sample logs, fast path against Rich path."""

from __future__ import annotations

import io

import pytest
from helpers import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from forensics.cli import columns
from forensics.cli.columns import Col, fit_table, print_fit

# ASCII words and spaces, wide CJK, emoji, an accent, a combining mark, the ellipsis itself
ALPHABET = st.sampled_from(list("abc xyz-=.:/019") + ["中", "文", "字", "😀", "🎉", "é", "e\u0301", "…"])
STYLES = st.sampled_from(["", "yellow", "bold", "bold red", "dim", "italic"])


def words(max_size: int = 30) -> st.SearchStrategy[str]:
    return st.lists(ALPHABET, max_size=max_size).map("".join)


@st.composite
def cells(draw: st.DrawFn, numeric: bool) -> str | Text:
    if numeric:
        return str(draw(st.integers(0, 10**draw(st.integers(1, 12)))))
    kind = draw(st.sampled_from(["str", "styled", "spans", "lines", "empty"]))
    if kind == "empty":
        return draw(st.sampled_from(["", Text(""), Text("", style="yellow")]))
    if kind == "lines":  # several lines, as the partitions column holds them
        text = "\n".join(draw(st.lists(words(20), min_size=2, max_size=4)))
        return draw(st.sampled_from([text, Text(text, style=draw(STYLES))]))
    if kind == "spans":
        return Text.assemble(*((draw(words(12)), draw(STYLES)) for _ in range(draw(st.integers(1, 3)))))
    text = draw(words())
    return Text(text, style=draw(STYLES)) if kind == "styled" else text


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[Col], list[list[str | Text]]]:
    cols = []
    for i in range(draw(st.integers(1, 7))):
        numeric = draw(st.booleans())
        squeeze = draw(st.one_of(st.none(), st.integers(3, 20)))
        cols.append(Col(draw(st.sampled_from(["version", "op", "stale\nwindows", "partitions", "文字", "detail"])) + str(i),
                        priority=draw(st.integers(0, 4)) if i else 0,
                        justify=draw(st.sampled_from(["right", "center"] if numeric else ["left", "left", "center", "right"])),
                        squeeze=squeeze, wrap=squeeze is not None and draw(st.booleans())))
    kinds = [c.justify != "left" and draw(st.booleans()) for c in cols]
    rows = draw(st.lists(st.tuples(*(cells(k) for k in kinds)).map(list), max_size=12))
    return cols, rows


COLOUR = {"none": {"force_terminal": False, "color_system": None},
          "truecolor": {"force_terminal": True, "color_system": "truecolor"},
          "standard": {"force_terminal": True, "color_system": "standard"},
          "no_color": {"force_terminal": True, "color_system": "truecolor", "no_color": True}}


def printed(cols: list[Col], rows: list[list[str | Text]], width: int, colour: str, fast: bool) -> str:
    con = Console(file=io.StringIO(), width=width, highlight=False, soft_wrap=False, **COLOUR[colour])  # type: ignore[arg-type]
    r = fit_table(cols, rows, width, title=Text("a title", style="italic"))
    if fast:
        print_fit(r, con, fast_rows=0)
    else:
        con.print(r)
    return con.file.getvalue()  # type: ignore[attr-defined]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(40, 220), st.sampled_from(list(COLOUR)))
def test_fast_rows_are_what_rich_prints(table, width, colour):
    cols, rows = table
    assert printed(cols, rows, width, colour, fast=True) == printed(cols, rows, width, colour, fast=False)


@settings(max_examples=60, deadline=None)
@given(tables(), st.integers(40, 220))
def test_a_table_laid_out_at_another_width_prints_as_rich_does(table, width):
    """fit_table at one width, printed on a narrower or wider console: Rich's own column widths."""
    cols, rows = table
    outs = []
    for fast in (True, False):
        con = Console(file=io.StringIO(), width=max(20, width - 37), highlight=False, soft_wrap=False)
        r = fit_table(cols, rows, width)
        if fast:
            print_fit(r, con, fast_rows=0)
        else:
            con.print(r)
        outs.append(con.file.getvalue())  # type: ignore[attr-defined]
    assert outs[0] == outs[1]


def test_the_fast_path_is_taken_and_streams():
    """A wide table of plain rows goes through _Rows (not Rich's Table), in chunks of CHUNK rows."""
    cols = [Col("version", justify="right"), Col("operation", squeeze=8, wrap=True), Col("engine", 1, squeeze=6)]
    rows: list[list[str | Text]] = [[str(v), "WRITE" if v % 3 else "CREATE TABLE", Text("Apache-Spark/3.5", style="yellow")]
                                    for v in range(1200)]
    writes: list[str] = []

    class File(io.StringIO):
        def write(self, s: str) -> int:
            writes.append(s)
            return super().write(s)

    con = Console(file=File(), width=30, force_terminal=True, color_system="truecolor", highlight=False, soft_wrap=False)
    print_fit(fit_table(cols, rows, 30), con)
    ref = Console(file=io.StringIO(), width=30, force_terminal=True, color_system="truecolor", highlight=False, soft_wrap=False)
    ref.print(fit_table(cols, rows, 30))
    assert con.file.getvalue() == ref.file.getvalue()  # type: ignore[attr-defined]
    assert "Apache…" in con.file.getvalue() and "\x1b[33m" in con.file.getvalue()  # type: ignore[attr-defined]
    assert len(writes) >= 1 + 1200 // columns.CHUNK  # the header, then the rows a chunk at a time


def test_a_cell_is_never_markup():
    rows: list[list[str | Text]] = [["[bold red]x[/]", "[link=http://e]y[/link]"]] * 3
    out = printed([Col("a"), Col("b")], rows, 80, "truecolor", fast=True)
    assert "[bold red]x[/]" in out and "[link=http://e]y[/link]" in out and "\x1b]8" not in out


# ---- the real commands ------------------------------------------------------------------------

@pytest.mark.parametrize("width", [120, 70])
@pytest.mark.parametrize("argv", [["history", "busy"], ["history", "quickstart"], ["replay", "busy"], ["stats", "busy"],
                                  ["history", "busy", "--utc"]])
def both_ways(monkeypatch, argv: list[str]) -> dict[str, str]:
    """The command's stdout through Rich's Table (FAST_ROWS out of reach) and through print_fit's
    rows (FAST_ROWS 0), checking that the second did write rows itself."""
    rows: list[int] = []
    lines = columns._Rows.lines
    monkeypatch.setattr(columns._Rows, "lines", lambda self, row: rows.append(1) or lines(self, row))
    outs = {}
    for name, limit in (("rich", 10**9), ("fast", 0)):
        monkeypatch.setattr(columns, "FAST_ROWS", limit)
        rc, outs[name], err = run_cli([*argv, "--no-engine", "-q"])
        assert rc == 0, err
        assert bool(rows) == (name == "fast")
    return outs


@pytest.mark.parametrize("width", [120, 70])
@pytest.mark.parametrize("argv", [["history", "busy"], ["history", "quickstart"], ["replay", "busy"], ["stats", "busy"],
                                  ["history", "busy", "--utc"]])
def test_command_text_is_unchanged(argv, width, sample_logs, monkeypatch, spark):
    command, sample, *extra = argv
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setenv("DELTA_FORENSICS_UTC", "0")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    outs = both_ways(monkeypatch, [command, str(sample_logs / sample / "table"), *extra])
    assert outs["fast"] == outs["rich"]
    assert len(outs["fast"].splitlines()) > 10


def test_history_in_colour_is_unchanged(sample_logs, monkeypatch, spark):
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLORTERM", "truecolor")
    outs = both_ways(monkeypatch, ["history", str(sample_logs / "busy" / "table")])
    assert outs["fast"] == outs["rich"]
    assert "\x1b[33m" in outs["fast"]  # the stale readVersions, in yellow
