"""`leaflab admin budget …` and `leaflab admin spend`: budgets and the spend ledger over HTTP."""

from __future__ import annotations

from typing import Any

import click

from services.cli.client import LeaflabClient
from services.cli.term.output import json_option, print_json
from services.cli.term.tables import Column, print_table

BUDGET_COLUMNS = [
    Column("SCOPE"),
    Column("WHO", flex=1),
    Column("LIMIT", justify="right"),
    Column("SPENT", justify="right"),
    Column("RESERVED", justify="right", drop=3),
    Column("LEFT", justify="right"),
    Column("TOKENS", justify="right", drop=2),
    Column("USED", justify="right", drop=2),
    Column("PERIOD", drop=1),
]


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.4f}"


def _tokens(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


@click.group()
def budget() -> None:
    """Per-user and per-project budgets (US$ and tokens)."""


@budget.command("set")
@click.option("--user", "email", help="the user's email")
@click.option("--project", help="the project's name")
@click.option("--usd", type=float, required=True, help="the US$ limit")
@click.option("--tokens", type=int, help="a token limit as well")
@click.option("--period", type=click.Choice(["monthly", "total"]), default="monthly")
@click.option("--reset-day", type=click.IntRange(1, 28), default=1, help="monthly: day it resets")
@click.option("--soft-threshold", type=click.FloatRange(0, 1, min_open=True), help="e.g. 0.8")
def budget_set(
    email: str | None,
    project: str | None,
    usd: float,
    tokens: int | None,
    period: str,
    reset_day: int,
    soft_threshold: float | None,
) -> None:
    """Set the budget of one user (--user) or one project (--project)."""
    if (email is None) == (project is None):
        raise click.UsageError("give exactly one of --user or --project")
    body: dict[str, Any] = {"usd": usd, "period": period, "reset_day": reset_day}
    body.update({"user_email": email} if email else {"project": project})
    if tokens is not None:
        body["tokens"] = tokens
    if soft_threshold is not None:
        body["soft_threshold"] = soft_threshold
    out = LeaflabClient().request("PUT", "/v1/admin/budgets", json=body)
    who = out["user_email"] or out["project"]
    click.echo(
        f"budget of {out['scope']} {who}: {_usd(out['usd_limit'])} "
        f"({out['period']}), {_usd(out['usd_remaining'])} left"
    )
    if out["resumed_jobs"]:
        click.echo(f"resumed {len(out['resumed_jobs'])} job(s) paused for budget")


@budget.command("list")
@json_option
def budget_list(as_json: bool) -> None:
    """Every budget with what is spent, reserved and left."""
    listing = LeaflabClient().request("GET", "/v1/admin/budgets")
    if as_json:
        print_json(listing)
        return
    items = listing["items"]
    rows = [
        [
            b["scope"],
            str(b["user_email"] or b["project"]),
            _usd(b["usd_limit"]),
            _usd(b["spent_usd"]),
            _usd(b["reserved_usd"]),
            _usd(b["usd_remaining"]),
            _tokens(b["token_limit"]),
            _tokens(b["spent_tokens"]),
            b["period"],
        ]
        for b in items
    ]
    print_table(BUDGET_COLUMNS, rows)


@click.command("spend")
@click.option("--by", type=click.Choice(["user", "project", "model", "day"]), default="user")
@click.option("--since", help="a date or time (ISO 8601), e.g. 2026-11-01")
@json_option
def spend(by: str, since: str | None, as_json: bool) -> None:
    """What model calls cost, from the spend ledger, grouped by user/project/model/day."""
    params = {"by": by, **({"since": since} if since else {})}
    report = LeaflabClient().request("GET", "/v1/admin/spend", params=params)
    if as_json:
        print_json(report)
        return
    rows = [
        [
            str(i["key"] if i["key"] is not None else "(none)"),
            str(i["calls"]),
            _tokens(i["input_tokens"]),
            _tokens(i["output_tokens"]),
            _tokens(i["cached_tokens"]),
            _usd(i["cost_usd"]),
        ]
        for i in report["items"]
    ]
    numbers = (Column(h, justify="right") for h in ("CALLS", "IN", "OUT", "CACHED", "COST"))
    print_table(
        [Column(by.upper(), flex=1), *numbers],
        rows,
        caption=f"total {_usd(report['total_usd'])}",
    )
