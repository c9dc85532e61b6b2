"""Terminal tables that fit the terminal: one mechanism for every table the CLI prints.

Each column says how much it matters (`Col.priority`). Priority 0 columns are always shown and
never cut; the others are added in priority order while they fit, so on a narrow terminal the
low-value ones (engine, user, detail...) are left out, whole, and a one-line note names them.
A column that may shrink (`squeeze`) wraps at words or ends in an ellipsis, never mid-word
without one.

A large table prints through `print_fit`: Rich lays out every cell of a Table through Padding,
Segment and Text.wrap (~0.8 ms a row, 16 s for a 20,000-version history), so `print_fit` has Rich
print the header and writes the rows itself, byte for byte what the Table would print
(tests/test_columns_fast.py compares the two).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.align import Align
from rich.cells import cell_len, set_cell_size
from rich.console import COLOR_SYSTEMS, Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.control import strip_control_codes
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

FALLBACK_WIDTH = 200  # output to a pipe or file with no COLUMNS: wide, nothing dropped needlessly


def console_width() -> int | None:
    """COLUMNS when set (a narrow pane, a test), the terminal's own width on a terminal, else 200."""
    cols = os.environ.get("COLUMNS", "").strip()
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    return None if os.isatty(1) else FALLBACK_WIDTH


def console() -> Console:
    return Console(highlight=False, soft_wrap=False, width=console_width())


@dataclass(frozen=True)
class Col:
    """One column. `priority` 0: always shown at full width; higher numbers are left out first
    when the terminal is narrow. `squeeze`: the narrowest it may get (None: its content's width);
    a squeezed column wraps at words when `wrap` (long words continue on the next line), else it
    ends in an ellipsis. A header may hold a line break to keep a number column narrow."""

    header: str
    priority: int = 0
    justify: str = "left"
    squeeze: int | None = None
    wrap: bool = False

    @property
    def name(self) -> str:
        return " ".join(self.header.split())


def _width(cell: str | Text) -> int:
    """The widest line of what the cell shows (a Text drops control codes). No Text is built:
    this runs for every cell of the table."""
    plain = cell.plain if isinstance(cell, Text) else strip_control_codes(cell)
    if "\n" not in plain:
        return cell_len(plain)
    return max(cell_len(line) for line in plain.split("\n"))


def _longest_word(cell: str | Text) -> int:
    plain = cell.plain if isinstance(cell, Text) else cell
    return max((Text(w).cell_len for w in plain.split()), default=0)


def _overhead(n: int) -> int:
    """Columns of separators and padding around n columns in TABLE_STYLE (two between columns)."""
    return 2 * (n - 1) if n else 0


TABLE_STYLE = {"box": box.SIMPLE_HEAD, "show_edge": False, "pad_edge": False, "collapse_padding": True, "header_style": "bold"}


@dataclass
class Fit:
    """Which columns a width keeps, at which widths, and which it leaves out."""

    kept: list[int]
    widths: dict[int, int]
    dropped: list[int]
    natural: list[int] = field(default_factory=list)  # each column's widest cell or header


def layout(cols: Sequence[Col], rows: Sequence[Sequence[str | Text]], width: int) -> Fit:
    natural = [max([_width(c.header)] + [_width(r[i]) for r in rows]) for i, c in enumerate(cols)]
    floor = []
    for i, c in enumerate(cols):
        if c.squeeze is None:
            floor.append(natural[i])
        else:  # never narrower than the header's longest word
            floor.append(min(natural[i], max(c.squeeze, _longest_word(c.header))))
    kept = [i for i, c in enumerate(cols) if c.priority == 0]
    # Priority columns at full width (a wrapping one may wrap to make room for the next column);
    # when they alone do not fit, at their floor.
    need = sum(floor[i] if cols[i].wrap else natural[i] for i in kept) + _overhead(len(kept))
    if need > width:
        need = sum(floor[i] for i in kept) + _overhead(len(kept))
    for i in sorted((i for i, c in enumerate(cols) if c.priority > 0), key=lambda i: (cols[i].priority, i)):
        extra = floor[i] + (2 if kept else 0)
        if need + extra <= width:
            kept.append(i)
            need += extra
    kept.sort()
    widths = {i: natural[i] for i in kept}
    excess = sum(widths.values()) + _overhead(len(kept)) - width
    # Squeeze down to their floor: the other columns before the priority ones, wrapping (nothing lost)
    # before ending in an ellipsis, the least important first.
    for i in sorted(kept, key=lambda i: (cols[i].priority == 0, not cols[i].wrap, -cols[i].priority, -natural[i])):
        if excess <= 0:
            break
        give = min(excess, widths[i] - floor[i])
        widths[i] -= give
        excess -= give
    return Fit(kept, widths, [i for i in range(len(cols)) if i not in kept], natural)


def hidden_note(names: Sequence[str], width: int) -> Text:
    """One line naming the columns left out (the shorter wording when the long one would wrap)."""
    line = f"{', '.join(names)} hidden at {width} columns: widen the terminal or use --json"
    if len(line) > width:
        line = f"{', '.join(names)} hidden: widen the terminal or use --json"
    return Text(line, style="dim")


def wrapped(items: Sequence[str | Text], width: int | None = None, sep: str = "  ") -> Text:
    """Items ("61 clean", "commits: 405") on lines no wider than `width`, none split across lines."""
    width = width or console().width
    out = Text()
    used = 0
    for it in items:
        t = it if isinstance(it, Text) else Text(it)
        if used and used + len(sep) + t.cell_len > width:
            out.append("\n")
            used = 0
        elif used:
            out.append(sep)
            used += len(sep)
        out.append_text(t)
        used += t.cell_len
    return out


def fit_table(cols: Sequence[Col], rows: Sequence[Sequence[str | Text]], width: int | None = None,
              title: str | Text | None = None) -> RenderableType:
    """The table at `width` (default: the console's), with a note naming the columns left out.
    Cells are plain strings or Text: a string is never read as Rich markup."""
    width = width or console().width
    fit = layout(cols, rows, width)
    spec: list[dict[str, Any]] = []
    for i in fit.kept:
        c = cols[i]
        squeezed = fit.widths[i] < fit.natural[i]
        spec.append({"header": Align(Text(c.header), align=c.justify, vertical="bottom"),  # type: ignore[arg-type]
                     "justify": c.justify, "width": fit.widths[i], "no_wrap": not (c.wrap and squeezed),
                     "overflow": "fold" if c.wrap else "ellipsis"})
    t = FitTable(spec, [[r[i] for i in fit.kept] for r in rows])
    parts: list[RenderableType] = []
    if title is not None:
        parts.append(title if isinstance(title, Text) else Text(title))
    parts.append(t)
    if fit.dropped:
        parts.append(hidden_note([cols[i].name for i in fit.dropped], width))
    return Group(*parts)


# ---- printing a large table fast -----------------------------------------------------------

FAST_ROWS = 200  # a FitTable of this many rows or more has its rows written by _Rows (tests: 0)
CHUNK = 500  # rows a write: a pager shows the first ones while the rest are laid out


class FitTable(Table):
    """The Table `fit_table` builds, with the arguments of its columns (from which `print_fit`
    builds its header alone) and its rows' cells (str or Text), given once, at construction, which
    it hands to Table.add_row only when Rich renders it (a capture, a small table): 20,000
    add_row calls cost ~0.5 s."""

    def __init__(self, spec: list[dict[str, Any]], body: list[list[str | Text]]) -> None:
        super().__init__(**TABLE_STYLE)  # type: ignore[arg-type]
        self.spec = spec
        self.body = body
        self._filled = False
        for kw in spec:
            self.add_column(**kw)

    @property
    def row_count(self) -> int:
        return len(self.body)

    def _fill(self) -> None:
        if not self._filled:
            self._filled = True
            for r in self.body:  # a string is never read as markup
                self.add_row(*(c if isinstance(c, Text) else Text(c) for c in r))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        self._fill()
        return super().__rich_console__(console, options)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        self._fill()
        return super().__rich_measure__(console, options)


def print_fit(r: RenderableType, con: Console, fast_rows: int | None = None) -> None:
    """`con.print(r)`, byte for byte, but each FitTable in `r` (or in the Groups it holds) of
    `fast_rows` (default FAST_ROWS) rows or more has Rich print only its header, and its rows
    written in chunks by `_Rows`. Not for a console inside capture() or `with console:`."""
    limit = FAST_ROWS if fast_rows is None else fast_rows
    parts = list(_flat(r))
    if not any(_fast_widths(p, con, limit) for p in parts):
        con.print(r)
        return
    pending: list[RenderableType] = []
    for p in parts:
        widths = _fast_widths(p, con, limit)
        if not widths:
            pending.append(p)
            continue
        if pending:
            con.print(Group(*pending))
            pending = []
        assert isinstance(p, FitTable)
        con.print(FitTable(p.spec, []))  # the header and the rule under it
        rows = _Rows(p, widths, con)
        out: list[str] = []
        for n, row in enumerate(p.body, 1):
            out += rows.lines(row)
            if n % CHUNK == 0:
                con.file.write("".join(out))
                con.file.flush()
                out = []
        con.file.write("".join(out))
        con.file.flush()
    if pending:
        con.print(Group(*pending))


def _flat(r: RenderableType) -> Iterator[RenderableType]:
    """What a Group prints, in order (printing them one after the other prints the same)."""
    if isinstance(r, Group):
        for x in r.renderables:
            yield from _flat(x)
    else:
        yield r


def _fast_widths(p: RenderableType, con: Console, limit: int) -> list[int] | None:
    """The width of each column's cells (without padding) when `p` is a FitTable of `limit` rows
    or more on a console that adds nothing of its own (a style, a recording, soft wrap); else None.
    They are the widths Rich gives: those of `layout`, or, when the columns kept whole are wider
    than the console, narrower ones (Rich takes the excess from every column evenly: asked of the
    Table itself, as nothing public says it)."""
    if not isinstance(p, FitTable) or p.row_count < limit or con.style is not None or con.record or con.soft_wrap:
        return None
    n = len(p.columns)
    try:
        padded = p._calculate_column_widths(con, con.options.update_width(con.width - (n - 1)))
    except Exception:  # another Rich
        return None
    widths = [w - (i < n - 1) for i, w in enumerate(padded)]  # TABLE_STYLE: one space after each cell but the last
    return widths if n and min(widths) >= 1 and sum(widths) + _overhead(n) <= con.width else None


class _Rows:
    """The rows of a FitTable as the console would write them. A cell's lines are remembered by
    its text and style: most columns of a long table repeat a few values."""

    def __init__(self, t: FitTable, widths: list[int], con: Console) -> None:
        self.con = con
        self.cols = [(w, c.justify, c.overflow, c.no_wrap) for w, c in zip(widths, t.columns)]
        self.memo: list[dict[Any, list[str]]] = [{} for _ in widths]
        self.system = COLOR_SYSTEMS.get(con.color_system or "")  # None: no colour, no codes
        self.painters: dict[Any, Callable[[str], str]] = {}

    def lines(self, row: Sequence[str | Text]) -> list[str]:
        """One row as the Table prints it: each cell's lines (its column's width), a blank under
        a cell shorter than the row, two spaces between columns (a cell's right padding and the
        divider, both unstyled), no padding after the last."""
        cells = [self.cell(k, x) for k, x in enumerate(row)]
        height = max(len(x) for x in cells)
        if height == 1:
            return ["  ".join(x[0] for x in cells) + "\n"]
        return ["  ".join(x[k] if k < len(x) else " " * c[0] for x, c in zip(cells, self.cols)) + "\n"
                for k in range(height)]

    def cell(self, k: int, cell: str | Text) -> list[str]:
        """The lines of column k's cell, remembered unless it has spans or settings of its own."""
        if isinstance(cell, str):
            key: Any = cell
        elif not cell.spans and cell.justify is None and cell.overflow is None and cell.no_wrap is None and cell.tab_size is None:
            key = (cell.plain, cell.style)
        else:
            return self.render(cell, *self.cols[k])
        got = self.memo[k].get(key)
        if got is None:
            text = cell if isinstance(cell, Text) else Text(cell)
            got = self.memo[k][key] = self.cut(text, *self.cols[k]) or self.render(text, *self.cols[k])
        return got

    def cut(self, cell: Text, width: int, justify: str, overflow: str, no_wrap: bool) -> list[str] | None:
        """The lines of a Text with no spans or settings of its own, cut and padded here as
        Text.wrap would (Lines.justify, then Text.truncate), painted in its style; None when a
        line needs Rich."""
        lines = [_justified(p, width, justify, overflow, no_wrap) for p in cell.plain.split("\n")]
        if None in lines:
            return None
        paint = self.painter(cell.style)
        return [paint(x) for x in lines]  # type: ignore[arg-type]

    def render(self, cell: Text, width: int, justify: str, overflow: str, no_wrap: bool) -> list[str]:
        """Any cell, by Rich's own console.render_lines (what the Table's Padding calls)."""
        opts = self.con.options.update(width=width, justify=justify, no_wrap=no_wrap, overflow=overflow,  # type: ignore[arg-type]
                                       height=None, highlight=False)
        return [self.ansi(line) for line in self.con.render_lines(cell, opts, pad=True)]

    def painter(self, style: str | Style) -> Callable[[str], str]:
        """A whole line in the Text's style, as Text.render gives it (one segment, unstyled when
        the style is empty) and the console writes it; looked up once a style."""
        got = self.painters.get(style)
        if got is None:
            st = self.con.get_style(style, default=Style.null()) if style else Style.null()
            if self.con.no_color and self.system:
                st = st.without_color
            system, legacy = self.system, self.con.legacy_windows
            got = self.painters[style] = (lambda text: st.render(text, color_system=system, legacy_windows=legacy)) if st else str
        return got

    def ansi(self, segments: Iterable[Segment]) -> str:
        """What the console writes for these segments (Console._render_buffer's rule)."""
        if self.con.no_color and self.system:
            segments = Segment.remove_color(segments)
        return "".join(s.style.render(s.text, color_system=self.system, legacy_windows=self.con.legacy_windows)
                       if s.style else s.text for s in segments)


def _justified(p: str, width: int, justify: str, overflow: str, no_wrap: bool) -> str | None:
    """One line of a cell, cut to `width` (an ellipsis, or cropped) and justified; None when Rich
    must lay it out: a tab or other unprintable character, or a line a wrapping column would wrap
    (only ASCII is checked for that: its width is its length, so Rich's word splitting changes nothing)."""
    if not p.isprintable() or justify not in ("left", "right", "center") or overflow not in ("ellipsis", "fold", "crop"):
        return None
    if not no_wrap and not (p.isascii() and len(p) <= width):
        return None
    if justify != "left":
        p = p.rstrip()
    n = cell_len(p)
    if n > width:
        p, n = (set_cell_size(p, width - 1) + "…" if overflow == "ellipsis" else set_cell_size(p, width)), width
    left = 0 if justify == "left" else (width - n) // 2 if justify == "center" else width - n
    return " " * left + p + " " * (width - n - left)
