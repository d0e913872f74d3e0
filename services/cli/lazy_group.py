"""A click group that imports a subcommand's module only when that command runs.

Every `leaflab` call used to import every subcommand (the ORM, the embedded
stack, the model simulator): seconds before `--version` could answer. Here a
command is a ``"module:attribute"`` path plus its one-line summary, so
``leaflab --help`` lists every command from the table alone and
``leaflab jobs …`` imports ``jobs``'s module and nothing else.

The summary is the first sentence of the command's docstring; click shortens
it to the terminal's width exactly as it would the docstring itself
(tests/cli/test_startup_imports.py keeps the two in step).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from gettext import gettext as _
from typing import Any

import click


@dataclass(frozen=True)
class LazyCommand:
    """Where a subcommand lives (``"package.module:attribute"``) and what it does."""

    target: str
    summary: str

    def load(self) -> click.Command:
        module_name, _, attribute = self.target.partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.target} is not a click command")
        return command


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use (see the module docstring)."""

    def __init__(self, *args: Any, lazy_commands: dict[str, LazyCommand], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = lazy_commands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy_commands:
            command = self.lazy_commands[cmd_name].load()
            if command.name != cmd_name:
                # The table is the only place names are given: a mismatch is a typo there.
                raise RuntimeError(f"{cmd_name!r} loads a command named {command.name!r}")
            self.add_command(command)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Click's own listing, but a command not yet imported is described by its summary."""
        rows: list[tuple[str, click.Command]] = []
        for name in self.list_commands(ctx):
            command = self.commands.get(name) or _summary_stub(name, self.lazy_commands[name])
            if not command.hidden:
                rows.append((name, command))
        if not rows:
            return
        # Same width rule as click.Group.format_commands: three times the default spacing.
        limit = formatter.width - 6 - max(len(name) for name, _ in rows)
        with formatter.section(_("Commands")):
            formatter.write_dl([(name, cmd.get_short_help_str(limit)) for name, cmd in rows])


def _summary_stub(name: str, lazy: LazyCommand) -> click.Command:
    # A bare Command carrying the summary as its help, so click shortens it its own way.
    return click.Command(name, help=lazy.summary)
