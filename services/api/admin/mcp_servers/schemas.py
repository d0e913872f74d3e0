"""Bodies of /v1/admin/mcp-servers; each server in the schema of services/common/mcp_servers.py."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from services.common.mcp_servers import McpServerConfig


class McpServerListIn(BaseModel):
    servers: list[dict[str, Any]] = Field(
        max_length=200,
        description=(
            "The whole list, replacing the stored one: each entry "
            '{"name", "command": [...] | "url", "projects"?, "approval"?, "isolation"?}, '
            "checked as LEAFLAB_MCP_SERVERS is (422 naming the entry and field)"
        ),
    )


class McpServerListOut(BaseModel):
    source: Literal["database", "environment"] = Field(
        description="Where the list in force comes from: a stored list wins over the env one"
    )
    servers: list[McpServerConfig] = Field(description="The list in force")
    stored: list[Any] | None = Field(description="The stored list as sent; null: none stored")
    environment: list[McpServerConfig] = Field(description="LEAFLAB_MCP_SERVERS, parsed")
    environment_error: str | None = Field(
        default=None, description="Why LEAFLAB_MCP_SERVERS is not a valid list, if it is not"
    )
    version: int = Field(description="Bumped by every change; workers watch it")
    updated_at: datetime | None = None
    updated_by: str | None = None
