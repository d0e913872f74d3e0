"""`leaflab` starts without importing what the invoked command does not need.

Asserted on what a real `leaflab` process imports (``-X importtime`` lists every
module it loads), not on time: `--version` and `--help` load no subcommand at
all, and the client commands' `--help` loads neither the ORM, the server stack
nor the HTTP client. And `--help` still lists every command with the summary
its docstring gives, exactly as click would from the loaded commands.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from services.cli.lazy_group import LazyGroup
from services.cli.main import COMMANDS, cli

ROOT = Path(__file__).resolve().parents[2]

# Never needed before a client command's first request (the server side's weight).
SERVER_SIDE = (
    "sqlalchemy",
    "alembic",
    "celery",
    "fastapi",
    "redis",
    "services.common.models",
    "services.cli.up",
    "services.model_sim",
    "services.sandbox",
)
# Needed only once a request is made.
CLIENT_SIDE = ("httpx", "pydantic_settings", "services.common.settings")
# What `--version` and `--help` may load of the project: the group and nothing else.
GROUP_ONLY = {"services", "services.cli", "services.cli.main", "services.cli.lazy_group"}


# What the installed `leaflab` script runs (pyproject's entry point), from this checkout.
ENTRY_POINT = "import sys; from services.cli.main import cli; sys.argv[0] = 'leaflab'; cli()"


def leaflab(*args: str) -> tuple[str, set[str]]:
    """Run ``leaflab ARGS`` in a fresh interpreter: (its stdout, every module it imported)."""
    done = subprocess.run(  # noqa: S603 - our own interpreter and CLI
        [sys.executable, "-X", "importtime", "-c", ENTRY_POINT, *args],
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "80"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    modules = {
        line.rpartition("|")[2].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and not line.endswith("imported package")
    }
    return done.stdout, modules


def loaded(modules: set[str], roots: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == r or m.startswith(f"{r}.") for r in roots))


class TestVersionAndHelpLoadNoSubcommand:
    def test_version_prints_the_version_and_imports_only_the_group(self) -> None:
        stdout, modules = leaflab("--version")
        assert stdout.startswith("leaflab, version ")
        assert loaded(modules, SERVER_SIDE + CLIENT_SIDE + ("rich",)) == []
        assert {m for m in modules if m.startswith("services")} == GROUP_ONLY

    def test_help_lists_every_command_with_its_summary(self) -> None:
        stdout, modules = leaflab("--help")
        listed = [line.split(None, 1) for line in stdout.partition("Commands:\n")[2].splitlines()]
        assert [name for name, _ in listed] == sorted(COMMANDS)
        for name, text in listed:
            # Click's help is at most 80 columns: a long summary ends in "..." where it is cut.
            summary = COMMANDS[name].summary
            assert text == summary or summary.startswith(text.removesuffix("...").rstrip())
        assert {m for m in modules if m.startswith("services")} == GROUP_ONLY


@pytest.mark.parametrize("command", ["jobs", "watch", "submit"])
def test_client_command_help_loads_no_server_side_or_http_client(command: str) -> None:
    stdout, modules = leaflab(command, "--help")
    assert stdout.startswith(f"Usage: leaflab {command} [OPTIONS]")
    assert loaded(modules, SERVER_SIDE + CLIENT_SIDE) == []


class TestTheTableMatchesTheCommands:
    """The lazy table repeats two facts of each command: its name and its summary."""

    @pytest.mark.parametrize("width", [40, 80, 120, 200])
    def test_help_is_what_click_prints_for_the_loaded_commands(self, width: int) -> None:
        eager = click.Group(
            "cli",
            help=cli.help,
            params=cli.params,
            commands=[entry.load() for entry in COMMANDS.values()],
        )
        # A fresh group: `cli` itself keeps the commands earlier tests ran.
        lazy = LazyGroup("cli", help=cli.help, params=cli.params, lazy_commands=COMMANDS)
        lazy_help = lazy.make_context("leaflab", ["--help"], resilient_parsing=True)
        eager_help = eager.make_context("leaflab", ["--help"], resilient_parsing=True)
        for ctx in (lazy_help, eager_help):
            ctx.terminal_width = ctx.max_content_width = width
        assert lazy.get_help(lazy_help) == eager.get_help(eager_help)

    def test_each_entry_loads_the_command_of_its_name(self) -> None:
        for name, entry in COMMANDS.items():
            command = entry.load()
            assert command.name == name
            assert not command.hidden
