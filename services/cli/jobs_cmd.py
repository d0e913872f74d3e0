"""Client commands: submit, watch, jobs, cancel, batch (survey: survey_cmd.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from services.cli.client import LeaflabClient
from services.cli.watch import watch_job


def _finish(client: LeaflabClient, job_id: str, watch: bool) -> None:
    if not watch:
        click.echo(job_id)
        return
    job = watch_job(client, job_id)
    if job["status"] != "succeeded":
        raise SystemExit(1)


@click.command()
@click.argument("text")
@click.option("--session", "session_id", help="continue this session (default: a new one)")
@click.option("--project", help="project name for a new session")
@click.option("--watch", is_flag=True, help="stream the job live until it ends")
def submit(text: str, session_id: str | None, project: str | None, watch: bool) -> None:
    """Submit one agent turn; prints the job id (or streams it with --watch)."""
    client = LeaflabClient()
    body: dict[str, Any] = {"kind": "turn", "input": {"content": text}}
    if session_id:
        body["session_id"] = session_id
    if project:
        body["project"] = project
    job = client.request("POST", "/v1/jobs", json=body)
    _finish(client, job["id"], watch)


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--watch", is_flag=True)
def batch(file: Path, watch: bool) -> None:
    """Submit a batch: FILE.json is {"tasks": [{"content": …}], "max_concurrency": N}."""
    try:
        payload = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise click.ClickException(f"{file}: not valid JSON ({exc})") from None
    client = LeaflabClient()
    job = client.request("POST", "/v1/jobs", json={"kind": "batch", "input": payload})
    _finish(client, job["id"], watch)


@click.command()
@click.argument("job_id")
def watch(job_id: str) -> None:
    """Stream a job's progress live until it ends."""
    _finish(LeaflabClient(), job_id, True)


@click.command()
@click.argument("job_id")
def cancel(job_id: str) -> None:
    """Cancel a job (at once if queued, else at its next step)."""
    job = LeaflabClient().request("POST", f"/v1/jobs/{job_id}/cancel")
    click.echo(f"{job['id']} {job['status']} (cancel requested)")
