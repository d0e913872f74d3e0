"""The `leaflab` command line.

Subcommands are imported only when invoked (lazy_group.py): `leaflab --version`
and `leaflab jobs --help` must not pay for the ORM, the embedded stack or the
model simulator. Each entry's summary is the first sentence of that command's
docstring; tests/cli/test_startup_imports.py fails if the two drift apart.
"""

from __future__ import annotations

import click

from services.cli.lazy_group import LazyCommand, LazyGroup

COMMANDS = {
    "admin": LazyCommand(
        "services.cli.admin_cmd:admin",
        "Administer users, API keys and projects.",
    ),
    "approvals": LazyCommand(
        "services.cli.approvals_cmd:approvals",
        "List a job's approvals, with the diffs of those still pending.",
    ),
    "approve": LazyCommand(
        "services.cli.approvals_cmd:approve",
        "Apply a pending change (default), or --reject it, or ask for --changes.",
    ),
    "artifacts": LazyCommand(
        "services.cli.artifacts_cmd:artifacts",
        "List a job's artifacts (a survey's report, a plot, a file); --out downloads them.",
    ),
    "batch": LazyCommand(
        "services.cli.jobs_cmd:batch",
        'Submit a batch: FILE.json is {"tasks": [{"content": …}], "max_concurrency": N}.',
    ),
    "cancel": LazyCommand(
        "services.cli.jobs_cmd:cancel",
        "Cancel a job (at once if queued, else at its next step).",
    ),
    "jobs": LazyCommand(
        "services.cli.jobs_list_cmd:jobs",
        "List recent jobs (yours, or with --user/--all as an admin), newest first.",
    ),
    "library": LazyCommand(
        "services.cli.library_cmd:library",
        "The lab's paper library.",
    ),
    "memory": LazyCommand(
        "services.cli.memory_cmd:memory",
        "Review project memory writes by members who are not owners.",
    ),
    "migrate": LazyCommand(
        "services.cli.migrate_cmd:migrate",
        "Apply Alembic migrations to LEAFLAB_DATABASE_URL.",
    ),
    "model-sim": LazyCommand(
        "services.model_sim.command:model_sim",
        "Serve scripted or auto-mode replies at http://HOST:PORT/v1"
        " (chat completions, streaming, faults).",
    ),
    "sandbox": LazyCommand(
        "services.cli.sandbox_cmd:sandbox",
        "The sandbox that runs the agent's python and bash tools.",
    ),
    "serve": LazyCommand(
        "services.cli.serve_cmd:serve",
        "Run one Leaflab service in the foreground.",
    ),
    "submit": LazyCommand(
        "services.cli.jobs_cmd:submit",
        "Submit one agent turn; prints the job id (or streams it with --watch).",
    ),
    "survey": LazyCommand(
        "services.cli.survey_cmd:survey",
        "Submit a literature survey; prints its estimate, then the job id (or follows it).",
    ),
    "trace": LazyCommand(
        "services.cli.trace_cmd:trace_cmd",
        "Show the trace of JOB_ID: every span with duration, tokens and cost.",
    ),
    "schedule": LazyCommand(
        "services.cli.schedule_cmd:schedule",
        "Recurring jobs on a cron schedule (add, list, runs, pause, resume, rm).",
    ),
    "notify": LazyCommand(
        "services.cli.notify_cmd:notify",
        "Your notifications and notification settings (settings, list, read).",
    ),
    "up": LazyCommand(
        "services.cli.up.command:up",
        "Start Leaflab here: database, Redis, API, workers (embedded services when no URLs).",
    ),
    "watch": LazyCommand(
        "services.cli.jobs_cmd:watch",
        "Stream a job's progress live until it succeeds, fails or is cancelled.",
    ),
    "webhooks": LazyCommand(
        "services.cli.webhooks_cmd:webhooks",
        "Signed webhooks when your jobs end (add, list, deliveries, rm).",
    ),
}


@click.group(cls=LazyGroup, lazy_commands=COMMANDS)
@click.version_option(package_name="leaflab")
def cli() -> None:
    """Leaflab: a self-hosted research-agent platform for a lab."""


if __name__ == "__main__":
    cli()
