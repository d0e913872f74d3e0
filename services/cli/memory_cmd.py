"""Project memory review: ``leaflab memory proposals PROJECT``, ``leaflab memory decide …``.

A project member who is not an owner cannot write project memory directly:
her agent's write waits as a proposal. Any member lists them; an owner (or an
admin) approves or rejects. Proposed text is other people's: printed through
``literal`` so it can never drive the terminal.
"""

from __future__ import annotations

from typing import Any

import click

from services.cli.client import LeaflabClient
from services.cli.term.literal import literal
from services.cli.term.output import write_plain


def render_proposal(p: dict[str, Any], *, with_text: bool) -> str:
    who = literal(p.get("proposed_by_email") or "unknown")
    lines = [f"{p['id']}  {p['status']:<9} project/{p['kind']:<9} by {who}  {p['created_at']}"]
    if p.get("error"):
        lines.append(f"    error: {literal(p['error'])}")
    if with_text and p["status"] == "pending":
        lines.append("    proposed (replaces the whole document):")
        lines += ["    | " + literal(line) for line in str(p["content"]).splitlines()]
        current = p.get("current")
        lines.append("    now:" if current is not None else "    now: (no document yet)")
        lines += ["    | " + literal(line) for line in str(current or "").splitlines()]
    return "\n".join(lines)


@click.group()
def memory() -> None:
    """Review project memory writes by members who are not owners."""


@memory.command()
@click.argument("project")
@click.option("--all", "everything", is_flag=True, help="decided ones too, not only pending")
def proposals(project: str, everything: bool) -> None:
    """List a project's memory proposals (pending ones with their text)."""
    params = None if everything else {"status": "pending"}
    path = f"/v1/projects/{project}/memory/proposals"
    items = LeaflabClient().request("GET", path, params=params)["items"]
    if not items:
        click.echo("no proposals")
    for p in items:
        write_plain(render_proposal(p, with_text=True))


@memory.command()
@click.argument("project")
@click.argument("proposal_id")
@click.option("--reject", is_flag=True, help="reject it (project memory stays as it is)")
def decide(project: str, proposal_id: str, reject: bool) -> None:
    """Approve a pending proposal (default: its text becomes the document), or --reject it."""
    body = {"decision": "reject" if reject else "approve"}
    path = f"/v1/projects/{project}/memory/proposals/{proposal_id}"
    write_plain(render_proposal(LeaflabClient().request("POST", path, json=body), with_text=False))
