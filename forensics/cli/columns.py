"""Terminal tables that fit the terminal: one mechanism for every table the CLI prints.

Each column says how much it matters (`Col.priority`). Priority 0 columns are always shown and
never cut; the others are added in priority order while they fit, so on a narrow terminal the
low-value ones (engine, user, detail...) are left out, whole, and a one-line note names them.
A column that may shrink (`squeeze`) wraps at words or ends in an ellipsis, never mid-word
without one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.align import Align
from rich.console import Console, Group, RenderableType
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
    text = cell if isinstance(cell, Text) else Text(cell)
    return max((Text(line).cell_len for line in text.plain.split("\n")), default=0)


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
    return Fit(kept, widths, [i for i in range(len(cols)) if i not in kept])


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
    t = Table(**TABLE_STYLE)  # type: ignore[arg-type]
    for i in fit.kept:
        c = cols[i]
        squeezed = fit.widths[i] < _width(c.header) or any(fit.widths[i] < _width(r[i]) for r in rows)
        header = Align(Text(c.header), align=c.justify, vertical="bottom")  # type: ignore[arg-type]
        t.add_column(header, justify=c.justify, width=fit.widths[i],  # type: ignore[arg-type]
                     no_wrap=not (c.wrap and squeezed), overflow="fold" if c.wrap else "ellipsis")
    for r in rows:
        t.add_row(*(r[i] if isinstance(r[i], Text) else Text(r[i]) for i in fit.kept))
    parts: list[RenderableType] = []
    if title is not None:
        parts.append(title if isinstance(title, Text) else Text(title))
    parts.append(t)
    if fit.dropped:
        parts.append(hidden_note([cols[i].name for i in fit.dropped], width))
    return Group(*parts)
