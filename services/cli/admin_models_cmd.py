"""`leaflab admin models`: each routed endpoint's capabilities, discovered by the
workers and read through the admin API (configured values win; each is marked)."""

from __future__ import annotations

import json

import click

from services.cli.client import LeaflabClient


@click.command("models")
@click.option("--refresh", is_flag=True, help="ask the workers to rediscover every endpoint")
@click.option("--json", "as_json", is_flag=True, help="print the API's answer as JSON")
def models(refresh: bool, as_json: bool) -> None:
    """The model endpoints: context window, structured output, tools, roles,
    concurrency, and whether each value was configured, discovered or a default."""
    from services.worker.operator import record_lines

    params = {"refresh": "true"} if refresh else {}
    report = LeaflabClient().request("GET", "/v1/admin/models", params=params, timeout=90)
    if as_json:
        click.echo(json.dumps(report, indent=2, sort_keys=True))
        return
    items = report.get("items") or []
    if not items:
        click.echo("no endpoint discovered yet: start a worker (it discovers its endpoints)")
    for record in items:
        for line in record_lines(record):
            click.echo(line)
    if report.get("refresh_pending"):
        click.echo("refresh requested; not every worker has answered yet (try again shortly)")
