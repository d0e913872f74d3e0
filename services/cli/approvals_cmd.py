"""Client commands for approvals: ``leaflab approvals JOB_ID``, ``leaflab approve …``."""

from __future__ import annotations

from typing import Any

import click

from services.cli.client import LeaflabClient


def render_approval(a: dict[str, Any], *, with_diffs: bool) -> str:
    """One approval as text: id, status, what it would change (and the diffs)."""
    targets = ", ".join(d.get("path") or d.get("tool", "?") for d in a["diffs"])
    lines = [f"{a['id']}  {a['status']:<17} {a['tool_name']:<10} {targets}"]
    if a.get("feedback"):
        lines.append(f"    feedback: {a['feedback']}")
    if a.get("error"):
        lines.append(f"    error: {a['error']}")
    if with_diffs and a["status"] == "pending":
        for d in a["diffs"]:
            body = d.get("diff") if "diff" in d else f"$ {d.get('command', '')}"
            lines += ["    " + line for line in str(body).splitlines()]
    return "\n".join(lines)


@click.command()
@click.argument("job_id")
def approvals(job_id: str) -> None:
    """List a job's approvals, with the diffs of those still pending."""
    items = LeaflabClient().request("GET", f"/v1/jobs/{job_id}/approvals")["items"]
    if not items:
        click.echo("no approvals")
    for a in items:
        click.echo(render_approval(a, with_diffs=True))


@click.command()
@click.argument("job_id")
@click.argument("approval_id")
@click.option("--reject", is_flag=True, help="reject the change (it is not applied)")
@click.option("--changes", metavar="TEXT", help="do not apply; send TEXT to the model instead")
def approve(job_id: str, approval_id: str, reject: bool, changes: str | None) -> None:
    """Apply a pending change (default), or --reject it, or ask for --changes."""
    if reject and changes:
        raise click.UsageError("give either --reject or --changes, not both")
    body: dict[str, Any] = {"decision": "apply"}
    if reject:
        body = {"decision": "reject"}
    elif changes is not None:
        body = {"decision": "request_changes", "feedback": changes}
    path = f"/v1/jobs/{job_id}/approvals/{approval_id}"
    a = LeaflabClient().request("POST", path, json=body)
    click.echo(render_approval(a, with_diffs=False))
