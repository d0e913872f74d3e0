"""A listing as a rich table on a terminal, tab-separated lines otherwise.

Plain output is a header line then one line per row, columns separated by one
tab, values escaped to a single line (literal.py) and never cut, so
``cut -f`` and ``awk -F'\\t'`` work. On a terminal long values are cut with an
ellipsis to fit the width instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from services.cli.term.literal import literal
from services.cli.term.output import stdout_console, write_plain


@dataclass(frozen=True)
class Column:
    header: str
    justify: Literal["left", "right"] = "left"
    max_width: int | None = None  # on a terminal: cut beyond this many cells
    wrap: bool = False  # on a terminal: fold onto more lines instead of cutting


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
    if not console.is_terminal:
        lines = ["\t".join(c.header for c in columns)]
        lines += ["\t".join(literal(v) for v in row) for row in rows]
        write_plain("\n".join(lines), console=console)
        if caption:  # stdout stays pure rows for scripts; the person reading sees it too
            click.echo(caption, err=True)
        return
    table = Table(
        header_style="bold", caption=Text(caption) if caption else None, caption_justify="left"
    )
    for c in columns:
        table.add_column(
            c.header,
            justify=c.justify,
            max_width=c.max_width,
            overflow="fold" if c.wrap else "ellipsis",
            no_wrap=not c.wrap,
        )
    for row in rows:
        table.add_row(*(Text(literal(v)) for v in row))
    console.print(table)
