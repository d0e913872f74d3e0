"""`leaflab watch`: follow a job's events until it ends.

On a terminal the rich live view (watch_live.py); otherwise plain lines that
scripts and tests parse: the streamed text, `→ tool … status (1.23s)`, the todo
list, `[status]` and survey progress lines, and at the end `[status] after N
tool call(s)` and a line with tokens and cost. Every value from the job is
printed literally (term/literal.py).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from services.cli.client import LeaflabClient
from services.cli.term.literal import literal
from services.cli.term.output import stdout_console
from services.cli.watch_live import LiveWatch
from services.cli.watch_state import TERMINAL, WAITING_MODEL, WatchState
from services.cli.watch_text import (
    model_line,
    paused_for_budget,
    progress_line,
    report_error,
    retry_marker,
    usage_line,
    waiting_line,
)

STATUS_MARK = {"completed": "x", "in_progress": ">", "pending": " "}


def render_event(event: dict[str, Any], state: dict[str, Any]) -> str | None:
    """Plain text for one event (None prints nothing); ``state`` carries what came before."""
    model: WatchState = state.setdefault("watch", WatchState())
    model.apply(event)
    return plain_text(event, model)


def plain_text(event: dict[str, Any], st: WatchState) -> str | None:
    """The plain rendering of ``event``, already folded into ``st``."""
    kind, data = event.get("event"), event.get("data") or {}
    if kind == "token":
        text = literal(data.get("text", ""), multiline=True)
        return text if st.previous == "token" else "\n" + text
    if kind == "tool_start":
        return f"\n  → {literal(data.get('name'))} …"
    if kind == "tool_end":
        seconds = st.last_ended.seconds if st.last_ended else None
        took = f" ({seconds:.2f}s)" if seconds is not None else ""
        ended = f" {literal(data.get('status'))}{took}"
        if st.previous == "tool_start":
            return ended  # on the line its start opened
        return f"\n  ← {literal(data.get('name'))}{ended}"  # other output came in between
    if kind == "todo":
        lines = [f"\n  todo {st.todo_done}/{len(st.todo)}:"]
        lines += [
            f"    [{STATUS_MARK.get(str(i.get('status')), '?')}] {literal(i.get('content'))}"
            for i in st.todo
        ]
        return "\n".join(lines)
    if kind == "model":
        # Said once per turn, and again whenever another model answers (a fallback).
        return "\n  " + model_line(st) if st.model_changed else None
    if kind == "model_retry":
        return "\n  " + retry_marker(data, st)
    if kind == "status":
        if data.get("status") in TERMINAL:
            return None  # the final event reports it
        if data.get("status") == WAITING_MODEL:
            return "\n" + waiting_line(st)
        progress = data.get("progress")
        extra = f" {literal(progress)}" if progress else ""
        return f"\n[{literal(data.get('status'))}{extra}]"
    if kind == "progress":
        return "\n" + progress_line(st)
    if kind == "approval":
        files = ", ".join(data.get("files") or []) or data.get("tool", "")
        approval = f"approval {data.get('approval_id')} {data.get('status')}"
        return f"\n  [{literal(approval)}] {literal(files)}"
    if kind == "budget":
        if data.get("state") == "soft_limit":
            return f"\n  (budget past its soft limit: calls now use {literal(data.get('model'))})"
        return f"\n  ({literal(data.get('message'))})"
    if kind == "events_lost":
        return "\n  (some live events were lost; the result below is read from the job)"
    if kind == "final":
        return f"\n[{literal(data.get('status'))}] after {len(st.tools)} tool call(s)\n"
    return None


def watch_job(
    client: LeaflabClient, job_id: str, *, console: Console | None = None
) -> dict[str, Any]:
    """Follow ``job_id`` until it ends (or pauses for budget); returns the job as read last."""
    console = console or stdout_console()
    if console.is_terminal:
        return LiveWatch(client, job_id, console).run()
    state = WatchState(job_id=job_id)
    out = console.file
    for event in client.events(job_id):
        state.apply(event)
        text = plain_text(event, state)
        if text:
            out.write(text)
            out.flush()
        if paused_for_budget(event):
            break
    job: dict[str, Any] = client.request("GET", f"/v1/jobs/{job_id}")
    state.usage_from(job)
    out.write(usage_line(state) + "\n")
    out.flush()
    report_error(job)
    return job
