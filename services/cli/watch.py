"""Live view of a job: streamed text, tool calls, todo list and a progress line."""

from __future__ import annotations

from typing import Any

import click

from services.cli.client import LeaflabClient

STATUS_MARK = {"completed": "x", "in_progress": ">", "pending": " "}


def render_event(event: dict[str, Any], state: dict[str, Any]) -> str | None:
    """Text to print for one event (None prints nothing); pure, so it is testable."""
    kind, data = event.get("event"), event.get("data") or {}
    if kind == "token":
        text = str(data.get("text", ""))
        if not state.get("in_text"):
            state["in_text"] = True
            text = "\n" + text
        return text
    if kind == "tool_start":
        state["tools"] = state.get("tools", 0) + 1
        state["in_text"] = False
        return f"\n  → {data.get('name')} …"
    if kind == "tool_end":
        return f" {data.get('status')}"
    if kind == "todo":
        items = data.get("items", [])
        done = sum(1 for i in items if i.get("status") == "completed")
        lines = [f"\n  todo {done}/{len(items)}:"]
        lines += [
            f"    [{STATUS_MARK.get(i.get('status', ''), '?')}] {i.get('content')}" for i in items
        ]
        return "\n".join(lines)
    if kind == "status":
        if data.get("status") in ("succeeded", "failed", "cancelled"):
            return None  # the final event reports it
        progress = data.get("progress")
        extra = f" {progress}" if progress else ""
        return f"\n[{data.get('status')}{extra}]"
    if kind == "approval":
        files = ", ".join(data.get("files") or []) or data.get("tool", "")
        return f"\n  [approval {data.get('approval_id')} {data.get('status')}] {files}"
    if kind == "budget":
        if data.get("state") == "soft_limit":
            return f"\n  (budget past its soft limit: calls now use {data.get('model')})"
        return f"\n  ({data.get('message')})"
    if kind == "progress":  # a survey's stage and counts
        return (
            f"\n  [{data.get('stage')}] papers {data.get('papers_read')}/{data.get('papers_found')}"
            f", sections {data.get('sections_written')}/{data.get('sections_total')}"
            f", ${float(data.get('cost_usd') or 0):.4f}"
        )
    if kind == "final":
        return f"\n[{data.get('status')}] after {state.get('tools', 0)} tool call(s)\n"
    return None


def watch_job(client: LeaflabClient, job_id: str) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for event in client.events(job_id):
        text = render_event(event, state)
        if text:
            click.echo(text, nl=False)
        data = event.get("data") or {}
        if event.get("event") == "status" and data.get("status") == "budget_exhausted":
            break  # paused until an admin raises the budget: stop watching, say why below
    job: dict[str, Any] = client.request("GET", f"/v1/jobs/{job_id}")
    if job["status"] != "succeeded" and job.get("error"):
        click.echo(f"error: {job['error']}", err=True)
    return job
