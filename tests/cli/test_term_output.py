"""Values from the API print as data: escaped control bytes, no rich markup, cut to
fit on a terminal, whole and tab-separated in a pipe."""

from __future__ import annotations

import io
import re

from rich.console import Console

from services.cli.term.literal import literal
from services.cli.term.tables import Column, print_table
from tests.cli.conftest import HOSTILE, LONG, visible

COLUMNS = [Column("ID"), Column("TITLE", flex=1), Column("N", justify="right")]
HEADER = re.compile(r"^\s*ID\s+TITLE\s+N\s*$", re.MULTILINE)


def _render(terminal: bool, rows: list[list[object]], width: int = 80) -> str:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=terminal, width=width, color_system="standard")
    print_table(COLUMNS, rows, console=console)
    return buf.getvalue()


class TestLiteral:
    def test_control_characters_become_visible_escapes(self) -> None:
        shown = literal(HOSTILE)
        assert "\x1b" not in shown and "\r" not in shown and "\x07" not in shown
        assert "\u202e" not in shown
        assert shown.startswith("\\x1b[31mred\\x1b[0m [bold]not bold[/bold] \\x1b]0;pwned\\x07")
        assert "\\rhidden \\u202eevil" in shown

    def test_multiline_text_keeps_its_line_breaks_only(self) -> None:
        assert literal("a\nb\tc\rd\x1b", multiline=True) == "a\nb\tc\\rd\\x1b"
        assert literal("a\nb\tc") == "a\\nb\\tc"
        assert literal(None) == ""


class TestTables:
    def test_pipe_gets_tab_separated_rows_with_whole_escaped_values(self) -> None:
        out = _render(False, [["j1", HOSTILE + LONG, 3], ["j2", "plain", 10]])
        lines = out.splitlines()
        assert lines[0] == "ID\tTITLE\tN"
        assert lines[1].split("\t") == ["j1", literal(HOSTILE) + LONG, "3"]
        assert lines[2] == "j2\tplain\t10"
        assert len(lines) == 3 and "\x1b" not in out

    def test_terminal_gets_a_table_that_fits_and_shows_values_literally(self) -> None:
        out = _render(True, [["j1", HOSTILE + LONG, 3]])
        assert "\x1b[31mred" not in out and "\x1b]0;" not in out  # not handed to the terminal
        shown = visible(out)
        assert "\x1b" not in shown
        assert HEADER.search(shown) and "───" in shown  # a rich table, not plain text
        assert "\\x1b[31mred" in shown and "[bold]not" in shown  # markup printed as written
        assert all(len(line) <= 80 for line in shown.splitlines())
        assert "…" in shown and LONG not in shown  # cut with an ellipsis to fit

    def test_a_wide_terminal_keeps_short_values_next_to_each_other(self) -> None:
        shown = visible(_render(True, [["j1", "short title", 3]], width=240))
        row = next(line for line in shown.splitlines() if "short title" in line)
        # The number sits a few columns after the title, not at the far edge of 240.
        assert len(row.rstrip()) < 40, row
        assert re.search(r"short title\s{1,6}3", row), row
