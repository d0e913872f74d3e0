"""`leaflab admin mcp-servers`: the MCP tool servers agent jobs are offered, read and
replaced through the admin API (the same list the admin page edits)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from services.cli.client import LeaflabClient


@click.command("mcp-servers")
@click.option(
    "--set",
    "set_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="replace the stored list with this JSON file's list (or its 'servers')",
)
@click.option("--clear", is_flag=True, help="clear the stored list: LEAFLAB_MCP_SERVERS applies")
@click.option("--json", "as_json", is_flag=True, help="print the API's answer as JSON")
def mcp_servers(set_file: Path | None, clear: bool, as_json: bool) -> None:
    """The MCP tool servers in force and where the list comes from; --set or --clear
    changes it (workers pick it up for jobs that start after)."""
    if set_file is not None and clear:
        raise click.UsageError("--set and --clear are exclusive")
    client = LeaflabClient()
    if set_file is not None:
        report = client.request(
            "PUT", "/v1/admin/mcp-servers", json={"servers": _read_list(set_file)}
        )
    elif clear:
        report = client.request("DELETE", "/v1/admin/mcp-servers")
    else:
        report = client.request("GET", "/v1/admin/mcp-servers")
    if as_json:
        click.echo(json.dumps(report, indent=2, sort_keys=True))
        return
    for line in _lines(report):
        click.echo(line)


def _read_list(path: Path) -> list[Any]:
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise click.ClickException(f"{path} is not JSON: {exc}") from None
    servers = body.get("servers") if isinstance(body, dict) else body
    if not isinstance(servers, list):
        raise click.ClickException(f"{path}: expected a JSON list of servers (or 'servers')")
    return servers


def _lines(report: dict[str, Any]) -> list[str]:
    servers = report.get("servers") or []
    source, version = report.get("source"), report.get("version")
    lines = [f"{len(servers)} server(s) from the {source} (version {version})"]
    for server in servers:
        target = server.get("url") or " ".join(server.get("command") or [])
        notes = []
        if server.get("projects"):
            notes.append("projects " + ",".join(server["projects"]))
        if server.get("approval"):
            notes.append("needs approval")
        if server.get("isolation") == "none":
            notes.append("NOT isolated")
        extra = f" ({'; '.join(notes)})" if notes else ""
        lines.append(f"  mcp.{server.get('name')}: {target}{extra}")
    if report.get("environment_error"):
        lines.append(f"LEAFLAB_MCP_SERVERS is invalid: {report['environment_error']}")
    return lines
