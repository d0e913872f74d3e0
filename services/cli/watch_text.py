"""Words both views of `leaflab watch` use: durations, usage, progress, errors."""

from __future__ import annotations

from typing import Any

import click

from services.cli.term.literal import literal
from services.cli.watch_state import WatchState


def format_seconds(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60}m {whole % 60:02d}s" if whole >= 60 else f"{whole}s"


def usage_line(st: WatchState) -> str:
    return (
        f"tokens {st.input_tokens:,} in · {st.output_tokens:,} out "
        f"({st.cached_tokens:,} cached) · cost ${st.cost_usd:.4f}"
    )


def progress_line(st: WatchState) -> str:
    """`[read (3/7)] papers 4/10 read · sections 0/6 written · $0.0123 · ETA 40s`."""
    parts = [
        f"[{literal(st.stage_label or 'survey')}]",
        f"papers {st.papers.done}/{st.papers_found} read",
        f"· sections {st.sections.done}/{st.sections.total} written",
        f"· ${st.cost_usd:.4f}",
    ]
    eta = st.sections.eta_s() if st.sections.total else st.papers.eta_s()
    if eta is not None:
        parts.append(f"· ETA {format_seconds(eta)}")
    return " ".join(parts)


def paused_for_budget(event: dict[str, Any]) -> bool:
    # Paused until an admin raises the budget: stop watching; the error says why.
    data = event.get("data") or {}
    return event.get("event") == "status" and data.get("status") == "budget_exhausted"


def report_error(job: dict[str, Any]) -> None:
    if job["status"] != "succeeded" and job.get("error"):
        click.echo(f"error: {literal(job['error'])}", err=True)


def retry_marker(data: dict[str, Any], st: WatchState) -> str:
    """`[retrying model call (attempt 2): timeout; its 40 chars of text above are dropped]`."""
    attempt = data.get("attempt")
    wait = data.get("wait_s")
    parts = [f"retrying model call (attempt {literal(attempt)})"]
    if data.get("error"):
        parts[0] += f": {literal(data.get('error'))}"
    if isinstance(wait, int | float) and wait > 0:
        parts.append(f"in {wait:.1f}s")
    if st.dropped:
        parts.append(f"the {len(st.dropped)} chars streamed above are dropped")
    return "[" + "; ".join(parts) + "]"


def waiting_line(st: WatchState) -> str:
    """`[waiting for the model endpoint… (connection refused)]`: parked, not failed."""
    why = f" ({literal(st.waiting)})" if st.waiting else ""
    return f"[waiting for the model endpoint…{why}]"


def model_line(st: WatchState) -> str:
    return f"[model: {literal(st.model)}]"
