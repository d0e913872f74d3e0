"""One stack (simulator, API, worker) shared by the terminal tests of tests/cli,
and the CLI run as a user runs it: on a terminal or in a pipe."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result

from services.cli.main import cli
from tests.conftest import Stack
from tests.fixtures.processes import RunningStack, running_stack

# rich's own styling (CSI sequences); anything ESC left after removing it came from data.
RICH_CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# A job input, title or file name someone made to attack a terminal: colours, an
# OSC title change, a carriage return that hides text, rich markup, and length.
HOSTILE = "\x1b[31mred\x1b[0m [bold]not bold[/bold] \x1b]0;pwned\x07 \rhidden \u202eevil"
LONG = "L" * 400


@pytest.fixture(scope="package")
def lab(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    with running_stack(stack, tmp_path_factory.mktemp("cli_lab"), concurrency=2) as running:
        yield running


def run_cli(url: str, key: str, *args: str, terminal: bool = False, ok: bool = True) -> Result:
    """``leaflab ARGS`` with stdout a pipe, or (``terminal``) an 80-column terminal."""
    env = {
        "LEAFLAB_URL": url,
        "LEAFLAB_API_KEY": key,
        "TTY_COMPATIBLE": "1" if terminal else "0",
        "FORCE_COLOR": None,
        "COLUMNS": "80",
    }
    result = CliRunner().invoke(cli, list(args), env=env)
    if ok:
        assert result.exit_code == 0, result.output + repr(result.exception)
    return result


def visible(output: str) -> str:
    """What a terminal shows: rich's styling removed (any other ESC stays, to be caught)."""
    return RICH_CSI.sub("", output)
