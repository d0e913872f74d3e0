"""`leaflab jobs`: recent jobs as a table (terminal), tab-separated lines (pipe) or JSON."""

from __future__ import annotations

from typing import Any

import click

from services.cli.client import LeaflabClient
from services.cli.term.output import json_option, print_json
from services.cli.term.tables import Column, print_table
from services.common.job_states import JOB_KINDS, JOB_STATUSES

COLUMNS = [
    Column("ID"),  # whole: it is what `leaflab watch` and `cancel` take
    Column("KIND", drop=1),
    Column("STATUS"),
    Column("TOKENS", justify="right", drop=2),
    Column("COST", justify="right"),
    Column("CREATED", drop=3),
    Column("INPUT", flex=1),
]


def job_subject(job: dict[str, Any]) -> str:
    """What the job is about, in a few words: the prompt, the topic or the batch size."""
    given = job.get("input") or {}
    if given.get("topic") is not None:
        return str(given["topic"])
    if isinstance(given.get("tasks"), list):
        return f"{len(given['tasks'])} task(s)"
    return str(given.get("content") or "")


def job_row(job: dict[str, Any]) -> list[object]:
    usage = job.get("usage") or {}
    tokens = int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)
    created = str(job.get("created_at") or "")[:19].replace("T", " ")
    return [
        job["id"],
        job["kind"],
        job["status"],
        f"≈{tokens}" if usage.get("estimated") else tokens,  # ≈: a local estimate
        f"${float(job.get('cost_usd') or 0):.4f}",
        created,
        job_subject(job),
    ]


@click.command()
@click.option("--status", type=click.Choice(JOB_STATUSES), help="only jobs with this status")
@click.option("--kind", type=click.Choice(JOB_KINDS), help="only jobs of this kind")
@click.option("--user", "owner", help="admins: only this user's jobs (email or id)")
@click.option("--all", "all_users", is_flag=True, help="admins: every user's jobs")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 500))
@json_option
def jobs(
    status: str | None,
    kind: str | None,
    owner: str | None,
    all_users: bool,
    limit: int,
    as_json: bool,
) -> None:
    """List recent jobs (yours, or with --user/--all as an admin), newest first."""
    params: dict[str, Any] = {"limit": limit}
    for name, value in (("status", status), ("kind", kind), ("user", owner)):
        if value:
            params[name] = value
    if all_users:
        params["all"] = "true"
    listing = LeaflabClient().request("GET", "/v1/jobs", params=params)
    if as_json:
        print_json(listing)
        return
    print_table(COLUMNS, [job_row(j) for j in listing["items"]])
