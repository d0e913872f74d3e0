"""MCP tool servers an admin registers, and the limits their tools run under (env prefix LEAFLAB_).

``LEAFLAB_MCP_SERVERS`` is a JSON list of servers::

    [{"name": "time", "command": ["mcp-server-time"]},
     {"name": "wiki", "url": "https://mcp.lab.example/mcp", "projects": ["thesis"],
      "approval": true}]

- ``name``: letters, digits, ``_`` and ``-``; the tools appear as ``mcp.<name>.<tool>``.
- exactly one of ``command`` (a stdio server: argv, run as a child of the worker)
  and ``url`` (a streamable-HTTP server, reached through the address guard).
- ``projects``: project names or ids the server is offered to; absent: every job.
- ``approval``: every call of its tools waits for a human's approval, in every
  approval mode.

A malformed list is refused when the worker starts, with a message naming the
entry and the field (:class:`McpConfigError`), never half-applied.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")


class McpConfigError(ValueError):
    """LEAFLAB_MCP_SERVERS (or the stored list) is not a valid server list."""


class McpServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=SERVER_NAME.pattern)
    command: tuple[str, ...] | None = None
    url: str | None = None
    projects: tuple[str, ...] | None = None
    approval: bool = False

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of 'command' (a stdio server) and 'url'")
        if self.command is not None and (not self.command or not self.command[0]):
            raise ValueError("'command' must name a program: a non-empty list of strings")
        if self.url is not None and not re.match(r"^https?://", self.url):
            raise ValueError("'url' must be an http:// or https:// URL")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def offered_to(self, project_id: str | None, project_name: str | None) -> bool:
        """Whether jobs of this project may see and call the server's tools."""
        if self.projects is None:
            return True
        return any(p is not None and p in self.projects for p in (project_id, project_name))


def parse_servers(raw: Any, *, source: str = "LEAFLAB_MCP_SERVERS") -> tuple[McpServerConfig, ...]:
    """The servers in ``raw`` (JSON text or an already decoded list); McpConfigError
    naming the entry and field when anything is wrong."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return ()
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise McpConfigError(
                f"{source} is not valid JSON: {exc.msg} at position {exc.pos}"
            ) from None
    if not isinstance(raw, list):
        raise McpConfigError(f"{source} must be a JSON list of servers, not {type(raw).__name__}")
    servers: list[McpServerConfig] = []
    for index, entry in enumerate(raw):
        label = f"{source}[{index}]"
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            label += f" ({entry['name']!r})"
        try:
            servers.append(McpServerConfig.model_validate(entry))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(entry)'}: {err['msg']}"
                for err in exc.errors()
            )
            raise McpConfigError(f"{label}: {problems}") from None
    names = [s.name for s in servers]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise McpConfigError(f"{source}: server names must be unique; repeated: {twice}")
    return tuple(servers)


class McpSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LEAFLAB_", env_file=".env", extra="ignore")

    # The JSON list above, as text (parsed by ``servers()``: a clear error, not pydantic's).
    mcp_servers: str = ""
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

    def servers(self) -> tuple[McpServerConfig, ...]:
        return parse_servers(self.mcp_servers)
