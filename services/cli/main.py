"""The `leaflab` command line."""

from __future__ import annotations

import click

from services.cli.admin_cmd import admin
from services.cli.approvals_cmd import approvals, approve
from services.cli.jobs_cmd import batch, cancel, submit, watch
from services.cli.jobs_list_cmd import jobs
from services.cli.library_cmd import library
from services.cli.migrate_cmd import migrate
from services.cli.sandbox_cmd import sandbox
from services.cli.serve_cmd import serve
from services.cli.survey_cmd import survey
from services.cli.trace_cmd import trace_cmd
from services.cli.up.command import up
from services.model_sim.command import model_sim


@click.group()
@click.version_option(package_name="leaflab")
def cli() -> None:
    """Leaflab: a self-hosted research-agent platform for a lab."""


for command in (
    up,
    migrate,
    submit,
    watch,
    jobs,
    cancel,
    survey,
    batch,
    admin,
    model_sim,
    sandbox,
    trace_cmd,
    library,
    serve,
    approvals,
    approve,
):
    cli.add_command(command)


if __name__ == "__main__":
    cli()
