"""Notifications: ``leaflab notify settings [--project P] [--email on|off] [--events …]``,
``leaflab notify list`` and ``leaflab notify read [ID …|--all]``.

Settings say which job events you hear of (in the app and by e-mail) and
whether by e-mail; a project's say which of its events e-mail its owners or
all members. Titles come from jobs (model- or user-written) and are printed
through ``literal`` so they can never drive the terminal.
"""

from __future__ import annotations

import json
from typing import Any

import click

from services.cli.client import LeaflabClient
from services.cli.term.literal import literal
from services.cli.term.output import write_plain
from services.common.notification_events import NOTIFY_EVENTS, PROJECT_RECIPIENTS


@click.group()
def notify() -> None:
    """Your notifications and notification settings (settings, list, read)."""


def _events(raw: str) -> list[str]:
    events = [e.strip() for e in raw.split(",") if e.strip()]
    unknown = [e for e in events if e not in NOTIFY_EVENTS]
    if unknown:
        raise click.BadParameter(
            f"unknown events {unknown}; use any of {', '.join(NOTIFY_EVENTS)}",
            param_hint="--events",
        )
    return events


@notify.command()
@click.option("--project", help="a project's settings (members read, project owners change)")
@click.option("--email", type=click.Choice(["on", "off"]), help="e-mail on or off")
@click.option("--events", help=f"comma-separated, of: {', '.join(NOTIFY_EVENTS)}")
@click.option(
    "--recipients", type=click.Choice(PROJECT_RECIPIENTS), help="a project's: who gets e-mail"
)
@click.option("--json", "as_json", is_flag=True, help="print the server's answer as JSON")
def settings(
    project: str | None,
    email: str | None,
    events: str | None,
    recipients: str | None,
    as_json: bool,
) -> None:
    """Show your notification settings (or a project's); change them with the options."""
    params = {"project": project} if project else {}
    body: dict[str, Any] = {}
    if email is not None:
        body["email"] = email == "on"
    if events is not None:
        body["events"] = _events(events)
    if recipients is not None:
        body["recipients"] = recipients
    client = LeaflabClient()
    if body:
        got = client.request("PUT", "/v1/notifications/settings", params=params, json=body)
    else:
        got = client.request("GET", "/v1/notifications/settings", params=params)
    if as_json:
        click.echo(json.dumps(got))
        return
    scope = f"project {got['project_id']}" if got["scope"] == "project" else "your jobs"
    write_plain(f"notifications for {scope}")
    write_plain(f"e-mail: {'on' if got['email'] else 'off'}")
    write_plain(f"events: {', '.join(got['events']) or 'none'}")
    if got.get("recipients"):
        write_plain(f"recipients: {got['recipients']}")


@notify.command(name="list")
@click.option("--json", "as_json", is_flag=True)
def list_(as_json: bool) -> None:
    """Your notifications, unread first."""
    got = LeaflabClient().request("GET", "/v1/notifications")
    if as_json:
        click.echo(json.dumps(got))
        return
    write_plain(f"{got['unread']} unread")
    for n in got["items"]:
        mark = "*" if n["unread"] else " "
        write_plain(
            f"{mark} {n['id']}  {n['event']:<21} {n['kind']} job {n['job_id']}  "
            f"{literal(n['title'][:80])}"
        )


@notify.command()
@click.argument("ids", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="mark every notification read")
def read(ids: tuple[str, ...], all_: bool) -> None:
    """Mark notifications read (by id, or --all)."""
    if not ids and not all_:
        raise click.UsageError("give notification ids, or --all")
    got = LeaflabClient().request(
        "POST", "/v1/notifications/read", json={"ids": list(ids), "all": all_}
    )
    click.echo(f"marked {got['marked']} read; {got['unread']} unread")
