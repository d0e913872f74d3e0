"""Reading and replacing the stored MCP server list (services flush; the request commits)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import func
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from services.api.admin.mcp_servers.schemas import McpServerListOut
from services.common.mcp_servers import (
    McpConfigError,
    McpServerConfig,
    McpServersSetting,
    parse_servers,
    read_stored,
    servers_in_force,
)
from services.common.models import McpServerList


def current(db: Session, *, env: McpServersSetting) -> McpServerListOut:
    """The list in force, the stored one and the env one, side by side."""
    stored = read_stored(db)
    env_servers: tuple[McpServerConfig, ...] = ()
    env_error = None
    try:
        env_servers = env.servers()
    except McpConfigError as exc:
        env_error = str(exc)
    source, in_force = "environment", env_servers
    if stored.servers is not None or env_error is None:
        source, in_force = servers_in_force(stored, env.mcp_servers)
    return McpServerListOut(
        source=source,
        servers=list(in_force),
        stored=stored.servers,
        environment=list(env_servers),
        environment_error=env_error,
        version=stored.version,
        updated_at=stored.updated_at,
        updated_by=stored.updated_by,
    )


def replace(db: Session, *, servers: list[Any] | None, by: uuid.UUID) -> None:
    """Store ``servers`` (None: clear, the env list applies again) and bump the version.

    McpConfigError when the list is not valid; nothing is written then.
    """
    if servers is not None:
        parse_servers(servers, source="servers")
    row = {"id": McpServerList.SINGLETON, "servers": servers, "version": 1, "updated_by": by}
    statement = insert(McpServerList).values(row)
    db.execute(
        statement.on_conflict_do_update(
            index_elements=[McpServerList.id],
            set_={
                "servers": statement.excluded.servers,
                "version": McpServerList.version + 1,
                "updated_at": func.now(),
                "updated_by": by,
            },
        )
    )
    db.flush()
