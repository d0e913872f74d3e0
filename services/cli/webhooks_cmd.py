"""Job notifications: ``leaflab webhooks add URL``, ``list``, ``deliveries ID``, ``rm ID``.

A webhook is POSTed a signed JSON body when one of your jobs (or, with
``--project``, any job of that project) succeeds, fails, is cancelled, waits
for approval or pauses for budget. URLs and errors come from the server and
are printed through ``literal`` so they can never drive the terminal.
"""

from __future__ import annotations

import json
from typing import Any

import click

from services.cli.client import LeaflabClient
from services.cli.term.literal import literal
from services.cli.term.output import write_plain
from services.common.webhook_events import WEBHOOK_EVENTS


@click.group()
def webhooks() -> None:
    """Signed webhooks when your jobs end (add, list, deliveries, rm)."""


@webhooks.command()
@click.argument("url")
@click.option(
    "--event",
    "events",
    multiple=True,
    type=click.Choice(WEBHOOK_EVENTS),
    help="notify on this event (repeatable; default: all)",
)
@click.option("--project", help="every job of this project (you must be a member)")
@click.option("--secret", help="the signing secret (≥ 16 characters; generated if omitted)")
@click.option("--json", "as_json", is_flag=True, help="print the server's answer as JSON")
def add(
    url: str, events: tuple[str, ...], project: str | None, secret: str | None, as_json: bool
) -> None:
    """Add a webhook; prints its id and its signing secret (shown only now)."""
    body: dict[str, Any] = {"url": url}
    if events:
        body["events"] = list(events)
    if project:
        body["project"] = project
    if secret:
        body["secret"] = secret
    made = LeaflabClient().request("POST", "/v1/webhooks", json=body)
    if as_json:
        click.echo(json.dumps(made))
        return
    write_plain(f"webhook {made['id']} → {literal(made['url'])}")
    write_plain(f"events: {', '.join(made['events'])}")
    write_plain(f"secret (shown only now): {literal(made['secret'])}")


@webhooks.command(name="list")
@click.option("--json", "as_json", is_flag=True)
def list_(as_json: bool) -> None:
    """Your webhooks and your projects', with delivered / pending / failed counts."""
    items = LeaflabClient().request("GET", "/v1/webhooks")["items"]
    if as_json:
        click.echo(json.dumps(items))
        return
    if not items:
        click.echo("no webhooks")
    for h in items:
        scope = f"project {h['project_id']}" if h["project_id"] else "your jobs"
        line = (
            f"{h['id']}  {literal(h['url'])}  ({scope}; {', '.join(h['events'])})  "
            f"delivered {h['delivered']}, pending {h['pending']}, failed {h['failed']}"
        )
        write_plain(line)
        if h.get("last_error"):
            write_plain(f"    last error: {literal(h['last_error'])}")


@webhooks.command()
@click.argument("webhook_id")
@click.option("--json", "as_json", is_flag=True)
def deliveries(webhook_id: str, as_json: bool) -> None:
    """A webhook's latest deliveries, newest first, with attempts and last error."""
    items = LeaflabClient().request("GET", f"/v1/webhooks/{webhook_id}/deliveries")["items"]
    if as_json:
        click.echo(json.dumps(items))
        return
    if not items:
        click.echo("no deliveries yet")
    for d in items:
        error = f"  {literal(d['last_error'])}" if d.get("last_error") else ""
        write_plain(
            f"{d['id']}  {d['event']:<21} job {d['job_id']}  {d['status']:<9} "
            f"attempts {d['attempts']}{error}"
        )


@webhooks.command()
@click.argument("webhook_id")
def rm(webhook_id: str) -> None:
    """Remove a webhook (its pending deliveries go with it)."""
    LeaflabClient().request("DELETE", f"/v1/webhooks/{webhook_id}")
    click.echo(f"removed webhook {webhook_id}")
