"""`leaflab admin budget …` and `leaflab admin spend`: budgets and the spend ledger over HTTP."""

from __future__ import annotations

from typing import Any

import click

from services.cli.client import LeaflabClient


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


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
def budget_list() -> None:
    """Every budget with what is spent, reserved and left."""
    items = LeaflabClient().request("GET", "/v1/admin/budgets")["items"]
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
    headers = ["SCOPE", "WHO", "LIMIT", "SPENT", "RESERVED", "LEFT", "TOKENS", "USED", "PERIOD"]
    click.echo(_table(headers, rows))


@click.command("spend")
@click.option("--by", type=click.Choice(["user", "project", "model", "day"]), default="user")
@click.option("--since", help="a date or time (ISO 8601), e.g. 2026-11-01")
def spend(by: str, since: str | None) -> None:
    """What model calls cost, from the spend ledger, grouped by user/project/model/day."""
    params = {"by": by, **({"since": since} if since else {})}
    report = LeaflabClient().request("GET", "/v1/admin/spend", params=params)
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
    headers = [by.upper(), "CALLS", "IN", "OUT", "CACHED", "COST"]
    click.echo(_table(headers, rows))
    click.echo(f"total {_usd(report['total_usd'])}")
