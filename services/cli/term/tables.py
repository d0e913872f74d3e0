"""A listing as a rich table on a terminal, tab-separated lines otherwise.

Plain output is a header line then one line per row, columns separated by one
tab, values escaped to a single line (literal.py) and never cut, so
``cut -f`` and ``awk -F'\\t'`` work. On a terminal the table is as wide as its
values, and no wider than the terminal:
fixed columns keep their full values (an id must stay copyable), flexible
columns share what is left and are cut with an ellipsis (or folded), and on a
narrow terminal the least useful columns are left out rather than squeezed to
nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from services.cli.term.literal import literal
from services.cli.term.output import stdout_console, write_plain

# Cells per column beyond its text: padding and the gap between columns.
COLUMN_OVERHEAD = 3
MIN_FLEX_WIDTH = 12


@dataclass(frozen=True)
class Column:
    header: str
    justify: Literal["left", "right"] = "left"
    flex: int = 0  # > 0: shares the free width in this ratio; 0: as wide as its values
    wrap: bool = False  # a flexible column folds onto more lines instead of being cut
    drop: int = 0  # > 0: left out on a narrow terminal, the highest first


def print_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[object]],
    *,
    console: Console | None = None,
    caption: str | None = None,
) -> None:
    """Print ``rows`` under ``columns``; ``caption`` (our own text, e.g. a total) goes
    below the table on a terminal and to stderr otherwise."""
    console = console or stdout_console()
    cells = [[literal(v) for v in row] for row in rows]
    if not console.is_terminal:
        lines = ["\t".join(c.header for c in columns)] + ["\t".join(row) for row in cells]
        write_plain("\n".join(lines), console=console)
        if caption:  # stdout stays pure rows for scripts; the person reading sees it too
            click.echo(caption, err=True)
        return
    widths = [max([len(c.header)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    shown = fitting_columns(columns, widths, console.width)
    # Fill the terminal only when the values need it (flexible columns then share the
    # width and are cut); short values on a wide terminal keep their natural width, so
    # a number stays next to its name instead of a hundred columns away.
    natural = sum(widths[i] + COLUMN_OVERHEAD for i in shown)
    table = Table(
        box=box.SIMPLE_HEAD,
        header_style="bold",
        expand=natural > console.width and any(columns[i].flex for i in shown),
        caption=Text(caption) if caption else None,
        caption_justify="left",
    )
    for i in shown:
        c = columns[i]
        table.add_column(
            c.header,
            justify=c.justify,
            width=None if c.flex else widths[i],
            ratio=c.flex or None,
            no_wrap=not c.wrap,
            overflow="fold" if c.wrap else "ellipsis",
        )
    for row in cells:
        table.add_row(*(Text(row[i]) for i in shown))
    console.print(table)


def fitting_columns(columns: Sequence[Column], widths: Sequence[int], width: int) -> list[int]:
    """Indexes of the columns to show in ``width`` cells, dropping droppable ones first."""
    shown = list(range(len(columns)))

    def needed() -> int:
        return sum(
            (MIN_FLEX_WIDTH if columns[i].flex else widths[i]) + COLUMN_OVERHEAD for i in shown
        )

    for i in sorted((i for i, c in enumerate(columns) if c.drop), key=lambda i: -columns[i].drop):
        if needed() <= width:
            break
        shown.remove(i)
    return shown
