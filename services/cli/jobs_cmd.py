"""Client commands: submit, watch, jobs, cancel, batch (survey: survey_cmd.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from services.cli.client import LeaflabClient

# A budget pause is not an end: by default the watch follows the job through an
# admin's raise to its answer; --no-wait is for scripts that would rather stop there.
WAIT_HELP = (
    "with --watch: when the budget runs out, keep watching until a raise resumes the job "
    "(default); --no-wait stops there and exits 1"
)


def _finish(client: LeaflabClient, job_id: str, watch: bool, wait: bool = True) -> None:
    if not watch:
        click.echo(job_id)
        return
    # Imported here: the live view pulls in rich, which `submit`/`batch` without --watch never use.
    from services.cli.watch import watch_job

    job = watch_job(client, job_id, wait_budget=wait)
    if job["status"] != "succeeded":
        raise SystemExit(1)


@click.command()
@click.argument("text")
@click.option("--session", "session_id", help="continue this session (default: a new one)")
@click.option("--project", help="project name for a new session")
@click.option("--watch", is_flag=True, help="stream the job live until it ends")
@click.option("--wait/--no-wait", default=True, help=WAIT_HELP)
def submit(text: str, session_id: str | None, project: str | None, watch: bool, wait: bool) -> None:
    """Submit one agent turn; prints the job id (or streams it with --watch)."""
    client = LeaflabClient()
    body: dict[str, Any] = {"kind": "turn", "input": {"content": text}}
    if session_id:
        body["session_id"] = session_id
    if project:
        body["project"] = project
    job = client.request("POST", "/v1/jobs", json=body)
    _finish(client, job["id"], watch, wait)


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--watch", is_flag=True, help="stream the batch's progress until it ends")
@click.option("--wait/--no-wait", default=True, help=WAIT_HELP)
def batch(file: Path, watch: bool, wait: bool) -> None:
    """Submit a batch: FILE.json is {"tasks": [{"content": …}], "max_concurrency": N}."""
    try:
        payload = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise click.ClickException(f"{file}: not valid JSON ({exc})") from None
    client = LeaflabClient()
    job = client.request("POST", "/v1/jobs", json={"kind": "batch", "input": payload})
    _finish(client, job["id"], watch, wait)


@click.command()
@click.argument("job_id")
@click.option(
    "--wait/--no-wait",
    default=True,
    help="when the budget runs out, keep watching until a raise resumes the job (default)",
)
def watch(job_id: str, wait: bool) -> None:
    """Stream a job's progress live until it succeeds, fails or is cancelled."""
    _finish(LeaflabClient(), job_id, True, wait)


@click.command()
@click.argument("job_id")
def cancel(job_id: str) -> None:
    """Cancel a job (at once if queued, else at its next step)."""
    job = LeaflabClient().request("POST", f"/v1/jobs/{job_id}/cancel")
    click.echo(f"{job['id']} {job['status']} (cancel requested)")
