"""`leaflab watch`: follow a job's events until it ends.

On a terminal the rich live view (watch_live.py); otherwise plain lines that
scripts and tests parse: the streamed text, `→ tool … status (1.23s)`, the todo
list, `[status]` and survey progress lines, and at the end `[status] after N
tool call(s)` and a line with tokens and cost. Every marker starts a line of
its own. Only a terminal status ends the watch: a job paused for its budget is
parked, so the watch says how to raise it and follows the job on once it
resumes. Every value from the job is printed literally (term/literal.py).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from services.cli.client import LeaflabClient
from services.cli.term.literal import literal
from services.cli.term.output import stdout_console
from services.cli.watch_live import LiveWatch
from services.cli.watch_state import BUDGET_EXHAUSTED, TERMINAL, WAITING_MODEL, WatchState
from services.cli.watch_text import (
    BUDGET_PAUSE,
    batch_progress_text,
    final_line,
    model_line,
    paused_for_budget,
    progress_line,
    report_error,
    resumed_line,
    retry_marker,
    unseen_answer,
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
    text = _event_text(event, st)
    if st.resumed and event.get("event") != "status":
        # Work after a pause, with no status event saying so: say it on a line of its own.
        marker = "\n" + resumed_line(st)
        return marker + (text if text and text.startswith("\n") else "\n" + (text or ""))
    return text


def _event_text(event: dict[str, Any], st: WatchState) -> str | None:
    kind, data = event.get("event"), event.get("data") or {}
    if st.typed is None:
        return None  # unknown to this CLI or breaking its contract: nothing sure to say
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
        if data.get("status") == BUDGET_EXHAUSTED:
            return f"\n[{BUDGET_EXHAUSTED}] {BUDGET_PAUSE}"
        progress = data.get("progress")
        extra = f" {batch_progress_text(progress)}" if progress else ""
        return f"\n[{literal(data.get('status'))}]{extra}"
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
        answer = unseen_answer(st)
        return ("\n" + answer if answer else "") + "\n" + final_line(st) + "\n"
    return None


def watch_job(
    client: LeaflabClient,
    job_id: str,
    *,
    console: Console | None = None,
    wait_budget: bool = True,
) -> dict[str, Any]:
    """Follow ``job_id`` until it ends; returns the job as read last. A job paused for
    its budget is followed on (the watch says so) until a raise resumes it and it
    ends; with ``wait_budget`` False the pause ends the watch instead."""
    console = console or stdout_console()
    if console.is_terminal:
        return LiveWatch(client, job_id, console, wait_budget=wait_budget).run()
    state = WatchState(job_id=job_id)
    # Its kind, for the last line; not its figures yet: replayed progress lines keep their own.
    state.kind = str(client.request("GET", f"/v1/jobs/{job_id}").get("kind") or "")
    out = console.file
    at_line_start = True
    for event in client.events(job_id):
        state.apply(event)
        text = plain_text(event, state)
        if text:
            out.write(text)
            out.flush()
            at_line_start = text.endswith("\n")
        if paused_for_budget(event) and not wait_budget:
            break
    job: dict[str, Any] = client.request("GET", f"/v1/jobs/{job_id}")
    if not at_line_start:
        out.write("\n")
    state.usage_from(job)
    out.write(usage_line(state) + "\n")
    out.flush()
    report_error(job)
    return job
