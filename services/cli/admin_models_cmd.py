"""`leaflab admin models`: each routed endpoint's capabilities, discovered by the
workers and read through the admin API (configured values win; each is marked)."""

from __future__ import annotations

import json

import click

from services.cli.client import LeaflabClient


@click.command("models")
@click.option("--refresh", is_flag=True, help="ask the workers to rediscover every endpoint")
@click.option(
    "--wait",
    "wait_s",
    type=click.FloatRange(0, 25),
    default=20.0,
    show_default=True,
    help="with --refresh: seconds to wait for the workers' rediscovery",
)
@click.option("--json", "as_json", is_flag=True, help="print the API's answer as JSON")
def models(refresh: bool, wait_s: float, as_json: bool) -> None:
    """The model endpoints: context window, structured output, tools, roles,
    concurrency, and whether each value was configured, discovered or a default."""
    from services.worker.operator import record_lines

    params = {"refresh": "true", "wait_s": str(wait_s)} if refresh else {}
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
