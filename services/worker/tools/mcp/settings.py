"""MCP tool servers an admin registers, and the limits their tools run under (env prefix LEAFLAB_).

``LEAFLAB_MCP_SERVERS`` is a JSON list of servers in the schema of
services/common/mcp_servers.py (name, command | url, projects, approval,
isolation). An admin may store a list instead (``PUT /v1/admin/mcp-servers``):
once stored, the stored list is the one in force and the env list is ignored
until the stored one is deleted (``DELETE``) — see live.py for how workers
follow it without a restart.

A malformed env list is refused when the worker starts, with a message naming
the entry and the field (:class:`McpConfigError`), never half-applied.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from services.common.mcp_servers import (
    McpConfigError,
    McpServerConfig,
    McpServersSetting,
    parse_servers,
)

__all__ = ["McpConfigError", "McpServerConfig", "McpSettings", "parse_servers"]


class McpSettings(McpServersSetting):
    model_config = SettingsConfigDict(env_prefix="LEAFLAB_", env_file=".env", extra="ignore")

    # Isolated stdio servers: the Docker client that starts their containers, and
    # the Python environment mounted read-only into them (it holds the servers'
    # packages; unset: the worker's own, sys.prefix). Image and limits are the
    # sandbox's (LEAFLAB_SANDBOX_IMAGE, LEAFLAB_SANDBOX_MEMORY_MB, ...).
    mcp_docker: str = "docker"
    mcp_python_env: Path | None = None
    # One tool call; an overrun is the structured error ``timeout`` (the call is cancelled).
    mcp_call_timeout_s: float = Field(default=60.0, gt=0)
    # Starting a server and listing its tools; a server that takes longer is skipped.
    mcp_start_timeout_s: float = Field(default=20.0, gt=0)
    # How long a server's tool list is reused before it is listed again.
    mcp_discovery_ttl_s: float = Field(default=300.0, ge=0)
    # One tool's JSON schema (bytes of JSON) and tools per server; past them the
    # tool (or the rest of the list) is skipped with the reason logged.
    mcp_max_schema_bytes: int = Field(default=32_000, gt=0)
    mcp_max_tools_per_server: int = Field(default=64, gt=0)
    # What one call's result may hand the ledger and the model (characters).
    mcp_max_result_chars: int = Field(default=100_000, gt=0)
    # How often a worker checks whether the stored server list changed (one tiny
    # SELECT); a change is in force for jobs that start after it is seen.
    mcp_reload_s: float = Field(default=5.0, ge=0)
