"""`leaflab serve ROLE`: run one service in the foreground, as deployments do.

The process is replaced by the role's command (``exec``), so signals from a
container runtime or a supervisor reach the service itself.
"""

from __future__ import annotations

import os

import click

from services.cli.up.roles import ROLES, RoleOptions, role_argv


def _roles_help() -> str:
    # "\b" keeps click from re-wrapping the table.
    return "\b\n" + "\n".join(f"{name:15} {role.summary}" for name, role in ROLES.items())


@click.command(
    "serve",
    help="Run one Leaflab service in the foreground.\n\nROLE is one of:\n\n" + _roles_help(),
)
@click.argument("role", type=click.Choice(sorted(ROLES)))
@click.option("--host", default="0.0.0.0", show_default=True, help="HTTP roles: listen address")  # noqa: S104
@click.option("--port", type=int, default=None, help="HTTP roles: port (default per role)")
@click.option("--concurrency", "-c", type=int, default=None, help="worker roles: threads")
@click.option("--loglevel", default="INFO", show_default=True)
@click.option("--print", "print_only", is_flag=True, help="print the command line, do not run it")
def serve(
    role: str,
    host: str,
    port: int | None,
    concurrency: int | None,
    loglevel: str,
    print_only: bool,
) -> None:
    argv = role_argv(
        role, RoleOptions(host=host, port=port, concurrency=concurrency, loglevel=loglevel)
    )
    if print_only:
        click.echo(" ".join(argv))
        return
    os.execv(argv[0], argv)  # noqa: S606 - argv is built from a fixed table, not user text
