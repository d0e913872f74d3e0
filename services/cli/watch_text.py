"""Words both views of `leaflab watch` use: durations, usage, progress, errors."""

from __future__ import annotations

from typing import Any

import click

from services.cli.term.literal import literal
from services.cli.watch_state import BUDGET_EXHAUSTED, WatchState
from services.common.contracts.statuses import JobStatus

# `leaflab admin budget set` (services/cli/budget_cmd.py) is what an admin raises it with.
BUDGET_PAUSE = (
    "paused: your budget is used up; an admin can raise it "
    "(leaflab admin budget set --user EMAIL --usd AMOUNT); still watching"
)


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


def batch_progress_text(progress: Any) -> str:
    """A batch's task counts in words (`3 tasks: 1 succeeded, 1 failed, 1 running`),
    never the event's raw dictionary. Reads both the progress of a running batch
    and the summary of a finished one, so the last line agrees with the ones before."""
    if not isinstance(progress, dict):
        return literal(progress)
    total = _whole(progress.get("total"))
    parts = [f"{_whole(progress.get('succeeded'))} succeeded"]
    for name in ("failed", "running", "queued"):
        if _whole(progress.get(name)):
            parts.append(f"{_whole(progress.get(name))} {name}")
    return f"{total} task{'' if total == 1 else 's'}: " + ", ".join(parts)


def _whole(value: object) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def final_line(st: WatchState) -> str:
    """`[succeeded] after 2 tool call(s)`; a batch's ends with its tasks' counts."""
    status = f"[{literal(st.final or st.status)}]"
    if st.kind == "batch" or (st.result is not None and "tasks" in st.result):
        counts = st.result if st.result and "total" in st.result else st.batch_progress
        return f"{status} {batch_progress_text(counts)}" if counts else status
    return f"{status} after {len(st.tools)} tool call(s)"


def paused_for_budget(event: dict[str, Any]) -> bool:
    """The job is parked until an admin raises its budget: not an end, watch goes on."""
    data = event.get("data") or {}
    return event.get("event") == "status" and data.get("status") == BUDGET_EXHAUSTED


def unseen_answer(st: WatchState) -> str | None:
    """The job's answer when none of it streamed past the last tool call (its tokens
    went out before the watch began, or were lost): the watch still ends with it."""
    content = (st.result or {}).get("content")
    if st.final != JobStatus.SUCCEEDED or not isinstance(content, str) or st.text.strip():
        return None
    return literal(content, multiline=True) or None


def report_error(job: dict[str, Any]) -> None:
    if job["status"] != JobStatus.SUCCEEDED and job.get("error"):
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


def resumed_line(st: WatchState) -> str:
    """`[running] resumed after the budget was raised`: said when a parked job moves again."""
    if st.resumed == BUDGET_EXHAUSTED:
        return "[running] resumed after the budget was raised"
    return "[running] resumed"


def model_line(st: WatchState) -> str:
    return f"[model: {literal(st.model)}]"
