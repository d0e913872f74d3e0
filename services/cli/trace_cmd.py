"""``leaflab trace JOB_ID``: a job's trace as a tree with durations, tokens and cost."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import click

from services.cli.client import LeaflabClient


def _seconds(value: Any) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def _duration(span: Mapping[str, Any]) -> float:
    if span.get("duration_ms") is not None:
        return float(span["duration_ms"]) / 1000
    return max(0.0, _seconds(span["end"]) - _seconds(span["start"]))


def _format_duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.1f} ms"
    if seconds < 120:
        return f"{seconds:.2f} s"
    return f"{int(seconds // 60)} m {seconds % 60:.0f} s"


def _usage(attrs: Mapping[str, Any]) -> tuple[int, int, int, float]:
    return (
        int(attrs.get("gen_ai.usage.input_tokens") or 0),
        int(attrs.get("gen_ai.usage.output_tokens") or 0),
        int(attrs.get("leaflab.cached_tokens") or 0),
        float(attrs.get("leaflab.cost_usd") or 0.0),
    )


def _label(span: Mapping[str, Any]) -> str:
    attrs = span.get("attributes") or {}
    parts = [str(span["name"]), _format_duration(_duration(span))]
    tokens_in, tokens_out, cached, cost = _usage(attrs)
    if tokens_in or tokens_out:
        cached_text = f", {cached} cached" if cached else ""
        parts.append(f"tokens {tokens_in}→{tokens_out}{cached_text}")
    if cost:
        parts.append(f"${cost:.6f}")
    if attrs.get("leaflab.fallback"):
        parts.append("fallback")
    if span.get("status") == "ERROR":
        message = span.get("status_message") or attrs.get("error.type") or ""
        parts.append(f"ERROR {message}".rstrip())
    return "  ".join(parts)


def render_trace_tree(spans: Sequence[Mapping[str, Any]]) -> str:
    """The spans as an indented tree (children by start time), then a totals line.

    Spans whose parent is not in the list (a parent still in flight, or one
    from another service that was not stored) are shown as roots.
    """
    if not spans:
        return "(no spans recorded yet)"
    ids = {span["span_id"] for span in spans}
    children: dict[str | None, list[Mapping[str, Any]]] = {}
    for span in spans:
        parent = span.get("parent_span_id")
        children.setdefault(parent if parent in ids else None, []).append(span)
    for group in children.values():
        group.sort(key=lambda s: (_seconds(s["start"]), s["name"]))
    lines: list[str] = []

    def walk(span: Mapping[str, Any], prefix: str, last: bool, root: bool) -> None:
        branch = "" if root else ("└─ " if last else "├─ ")
        lines.append(f"{prefix}{branch}{_label(span)}")
        kids = children.get(span["span_id"], [])
        deeper = prefix if root else prefix + ("   " if last else "│  ")
        for i, kid in enumerate(kids):
            walk(kid, deeper, i == len(kids) - 1, False)

    for root_span in children.get(None, []):
        walk(root_span, "", True, True)
    totals = [_usage(span.get("attributes") or {}) for span in spans]
    tokens_in = sum(t[0] for t in totals)
    tokens_out = sum(t[1] for t in totals)
    cost = sum(t[3] for t in totals)
    lines.append(f"{len(spans)} spans; tokens in {tokens_in}, out {tokens_out}; cost ${cost:.6f}")
    return "\n".join(lines)


def fetch_job_trace(client: LeaflabClient, job_id: str) -> dict[str, Any]:
    """The job's trace (``GET /v1/jobs/{id}`` for its trace id, then the trace)."""
    job = client.request("GET", f"/v1/jobs/{job_id}")
    trace_id = job.get("trace_id") if isinstance(job, dict) else None
    if not trace_id:
        raise click.ClickException(f"job {job_id} has no trace (tracing was off when it ran)")
    trace: dict[str, Any] = client.request("GET", f"/v1/traces/{trace_id}")
    return trace


@click.command("trace")
@click.argument("job_id")
@click.option("--json", "as_json", is_flag=True, help="Print the raw trace JSON.")
def trace_cmd(job_id: str, as_json: bool) -> None:
    """Show the trace of JOB_ID: every span with duration, tokens and cost."""
    trace = fetch_job_trace(LeaflabClient(), job_id)
    if as_json:
        click.echo(json.dumps(trace, indent=2))
        return
    click.echo(f"trace {trace['trace_id']}")
    click.echo(render_trace_tree(trace["spans"]))
