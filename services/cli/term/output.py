"""How a command prints: rich on a terminal, plain text in a pipe, JSON on request.

One decision for every command: the console's ``is_terminal`` (stdout is a TTY,
or ``FORCE_COLOR``/``TTY_COMPATIBLE`` say so). Plain output is what scripts and
tests parse, so it never depends on the terminal's width; ``--json`` prints the
API's answer as one JSON document, ASCII-escaped so no control byte reaches the
terminal either.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.console import Console

F = TypeVar("F", bound=Callable[..., Any])


def stdout_console() -> Console:
    # No highlighting: rich would colour numbers and URLs inside user text.
    return Console(highlight=False, emoji=False)


def json_option(func: F) -> F:
    """The ``--json`` flag of a listing command (passed as ``as_json``)."""
    return click.option(
        "--json", "as_json", is_flag=True, help="print the API's JSON (one document) for scripts"
    )(func)


def print_json(doc: Any, *, console: Console | None = None) -> None:
    write_plain(json.dumps(doc, indent=2), console=console)


def write_plain(text: str, *, console: Console | None = None) -> None:
    """Write ``text`` and a newline as is: no wrapping, markup or colour."""
    out = (console or stdout_console()).file
    out.write(text + "\n")
    out.flush()
