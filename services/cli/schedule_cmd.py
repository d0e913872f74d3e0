"""Recurring jobs: ``leaflab schedule add CRON``, ``list``, ``runs ID``, ``pause ID``,
``resume ID``, ``rm ID``.

``add`` takes the job as ``--turn TEXT``, ``--survey TOPIC`` or ``--job FILE.json``
(a POST /v1/jobs body). Expressions, errors and job texts come from the server
and are printed through ``literal`` so they can never drive the terminal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from services.cli.client import LeaflabClient
from services.cli.term.literal import literal
from services.cli.term.output import write_plain


@click.group()
def schedule() -> None:
    """Recurring jobs on a cron schedule (add, list, runs, pause, resume, rm)."""


def _job_body(turn: str | None, survey: str | None, job_file: Path | None) -> dict[str, Any]:
    given = [x for x in (turn, survey, job_file) if x is not None]
    if len(given) != 1:
        raise click.UsageError("give exactly one of --turn, --survey or --job")
    if turn is not None:
        return {"kind": "turn", "input": {"content": turn}}
    if survey is not None:
        return {"kind": "survey", "input": {"topic": survey}}
    assert job_file is not None
    try:
        body = json.loads(job_file.read_text())
    except (OSError, ValueError) as err:
        raise click.UsageError(f"{job_file}: not a JSON job body ({err})") from None
    if not isinstance(body, dict):
        raise click.UsageError(f"{job_file}: a job body is a JSON object")
    return body


def _line(s: dict[str, Any]) -> str:
    state = "paused" if s["paused"] else f"next {s['next_slot']}"
    job = s["job"]
    what = job.get("input", {}).get("content") or job.get("input", {}).get("topic") or ""
    return (
        f"{s['id']}  {literal(s['cron'])} ({literal(s['timezone'])})  {job.get('kind')}: "
        f"{literal(str(what)[:60])}  {state}"
    )


@schedule.command()
@click.argument("cron")
@click.option("--timezone", "tz", default="UTC", show_default=True, help="IANA name")
@click.option("--turn", help="run this message as a turn")
@click.option("--survey", help="run a survey of this topic (each run: what's new since the last)")
@click.option(
    "--job", "job_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="a POST /v1/jobs body as JSON",
)  # fmt: skip
@click.option("--project", help="the project it runs in (you must be a member)")
@click.option("--json", "as_json", is_flag=True, help="print the server's answer as JSON")
def add(
    cron: str,
    tz: str,
    turn: str | None,
    survey: str | None,
    job_file: Path | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Add a schedule, e.g. ``leaflab schedule add "0 9 * * MON" --survey "graph nets"``."""
    body: dict[str, Any] = {"cron": cron, "timezone": tz, "job": _job_body(turn, survey, job_file)}
    if project:
        body["project"] = project
    made = LeaflabClient().request("POST", "/v1/schedules", json=body)
    if as_json:
        click.echo(json.dumps(made))
        return
    write_plain(f"schedule {made['id']}  {literal(made['cron'])} ({literal(made['timezone'])})")
    write_plain(f"first run: {made['next_slot']}")


@schedule.command(name="list")
@click.option("--all", "all_users", is_flag=True, help="admins: every user's schedules")
@click.option("--json", "as_json", is_flag=True)
def list_(all_users: bool, as_json: bool) -> None:
    """Your schedules and your projects', with the next slot and the last error."""
    params = {"all": "true"} if all_users else None
    items = LeaflabClient().request("GET", "/v1/schedules", params=params)["items"]
    if as_json:
        click.echo(json.dumps(items))
        return
    if not items:
        click.echo("no schedules")
    for s in items:
        write_plain(_line(s))
        if s.get("last_error"):
            write_plain(f"    last error: {literal(s['last_error'])}")


@schedule.command()
@click.argument("schedule_id")
@click.option("--json", "as_json", is_flag=True)
def runs(schedule_id: str, as_json: bool) -> None:
    """A schedule's runs (normal jobs), the latest first."""
    items = LeaflabClient().request("GET", f"/v1/schedules/{schedule_id}/runs")["items"]
    if as_json:
        click.echo(json.dumps(items))
        return
    if not items:
        click.echo("no runs yet")
    for j in items:
        write_plain(f"{j['id']}  {j['kind']:<6} {j['status']:<16} {j['created_at']}")


@schedule.command()
@click.argument("schedule_id")
def pause(schedule_id: str) -> None:
    """Stop running it until resumed."""
    LeaflabClient().request("POST", f"/v1/schedules/{schedule_id}/pause")
    click.echo(f"paused schedule {schedule_id}")


@schedule.command()
@click.argument("schedule_id")
def resume(schedule_id: str) -> None:
    """Run it again from its next slot (slots missed while paused are skipped)."""
    made = LeaflabClient().request("POST", f"/v1/schedules/{schedule_id}/resume")
    click.echo(f"resumed schedule {schedule_id}; next run {made['next_slot']}")


@schedule.command()
@click.argument("schedule_id")
def rm(schedule_id: str) -> None:
    """Remove a schedule (the jobs it ran stay)."""
    LeaflabClient().request("DELETE", f"/v1/schedules/{schedule_id}")
    click.echo(f"removed schedule {schedule_id}")
