"""``leaflab survey TOPIC``: estimate a survey against the budget, then submit it."""

from __future__ import annotations

from typing import Any

import click

from services.cli.artifacts_cmd import job_artifacts
from services.cli.client import LeaflabClient
from services.cli.term.literal import literal
from services.cli.watch import watch_job


def survey_input(
    topic: str,
    seeds: tuple[str, ...],
    years: str | None,
    venues: tuple[str, ...],
    length: str,
    formats: tuple[str, ...],
) -> dict[str, Any]:
    body: dict[str, Any] = {"topic": topic, "length": length, "seed_papers": list(seeds)}
    if years:
        body["years"] = years
    if venues:
        body["venues"] = list(venues)
    if formats:
        body["formats"] = list(formats)
    return body


def estimate_line(estimate: dict[str, Any]) -> str:
    tokens = estimate["input_tokens"] + estimate["output_tokens"]
    left = estimate["budget_remaining_usd"]
    budget = "no budget set" if left is None else f"${left:.4f} left in the budget"
    return (
        f"estimate: {estimate['model_calls']} model calls over {estimate['papers']} papers, "
        f"~{tokens} tokens, ~${estimate['cost_usd']:.4f} ({budget})"
    )


@click.command()
@click.argument("topic")
@click.option("--seed", "seeds", multiple=True, help="a seed paper's DOI (repeatable)")
@click.option("--years", help="publication years, e.g. 2019-2026")
@click.option("--venue", "venues", multiple=True, help="a venue to focus on (repeatable)")
@click.option("--length", type=click.Choice(["short", "medium", "long"]), default="medium")
@click.option(
    "--format", "formats", multiple=True, type=click.Choice(["md", "tex"]), help="default: both"
)
@click.option("--project", help="run in this project (its library and budget)")
@click.option("--session", "session_id", help="run in this session (default: a new one)")
@click.option("--force", is_flag=True, help="submit even when the estimate exceeds the budget")
@click.option("--watch", is_flag=True, help="follow the survey's progress until it ends")
def survey(
    topic: str,
    seeds: tuple[str, ...],
    years: str | None,
    venues: tuple[str, ...],
    length: str,
    formats: tuple[str, ...],
    project: str | None,
    session_id: str | None,
    force: bool,
    watch: bool,
) -> None:
    """Submit a literature survey; prints its estimate, then the job id (or follows it)."""
    client = LeaflabClient()
    body = survey_input(topic, seeds, years, venues, length, formats)
    scope = {"project": project} if project else {}
    estimate = client.request("POST", "/v1/surveys/estimate", json={**body, **scope})
    click.echo(estimate_line(estimate), err=True)
    if not estimate["within_budget"] and not force:
        raise click.ClickException(
            "the estimate exceeds the remaining budget; ask an admin to raise it, "
            "or submit anyway with --force (the survey pauses at the limit)"
        )
    submit: dict[str, Any] = {"kind": "survey", "input": body, **scope}
    if session_id:
        submit["session_id"] = session_id
    job = client.request("POST", "/v1/jobs", json=submit)
    if not watch:
        click.echo(job["id"])
        return
    if watch_job(client, job["id"])["status"] != "succeeded":
        raise SystemExit(1)
    print_where(client, str(job["id"]))


def print_where(client: LeaflabClient, job_id: str) -> None:
    """Where the finished survey is: its page, each file's URL, and how to download them."""
    click.echo(f"report: {client.absolute(f'/surveys/{job_id}')}")
    for item in job_artifacts(client, job_id):
        click.echo(f"  {literal(item['display_name'])}: {client.absolute(str(item['url']))}")
    click.echo(f"download them: leaflab artifacts {job_id} --out DIR")
