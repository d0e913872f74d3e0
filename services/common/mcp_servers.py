"""The MCP server list's schema: one definition for the env setting, the stored list and the API.

A list of servers, each::

    {"name": "time", "command": ["mcp-server-time"]}
    {"name": "wiki", "url": "https://mcp.lab.example/mcp", "projects": ["thesis"],
     "approval": true}

- ``name``: letters, digits, ``_`` and ``-``; the tools appear as ``mcp.<name>.<tool>``.
- exactly one of ``command`` (a stdio server: argv, run inside a sandbox container
  with no network, see
  services/worker/tools/mcp/isolation.py) and ``url`` (a streamable-HTTP server, reached
  through the address guard).
- ``isolation`` (stdio only): ``"sandbox"`` (the default) or ``"none"``. **Unsafe**:
  ``"none"`` runs the command as a plain child of the worker, with the worker's
  network, filesystem and user (only its environment variables withheld) — for
  trusted servers an admin installed, which need this host (a local repository,
  the network).
- ``projects``: project names or ids the server is offered to; absent: every job.
- ``approval``: every call of its tools waits for a human's approval, in every
  approval mode.

A malformed list is refused whole, with a message naming the entry and the
field (:class:`McpConfigError`): the worker does not start on a bad env list, the
API answers 422 to a bad stored one.

Which list is in force (:func:`servers_in_force`): the stored one
(``mcp_server_lists``, written by ``PUT /v1/admin/mcp-servers``) once an admin has
stored one — even an empty one, which turns every server off — else
``LEAFLAB_MCP_SERVERS``. ``DELETE`` clears the stored list, and the env list
applies again. Each change bumps the row's ``version``, which the workers watch.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy import select
from sqlalchemy.orm import Session

from services.common.models.mcp_servers import McpServerList

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
    isolation: Literal["sandbox", "none"] = "sandbox"

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of 'command' (a stdio server) and 'url'")
        if self.command is not None and (not self.command or not self.command[0]):
            raise ValueError("'command' must name a program: a non-empty list of strings")
        if self.url is not None and not re.match(r"^https?://", self.url):
            raise ValueError("'url' must be an http:// or https:// URL")
        if self.url is not None and "isolation" in self.model_fields_set:
            raise ValueError("'isolation' applies to stdio servers ('command') only")
        return self

    @property
    def isolated(self) -> bool:
        """Whether its process runs inside a sandbox container (stdio servers only)."""
        return self.command is not None and self.isolation == "sandbox"

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


class McpServersSetting(BaseSettings):
    """``LEAFLAB_MCP_SERVERS``: the worker runs the servers, the API shows the list."""

    model_config = SettingsConfigDict(env_prefix="LEAFLAB_", env_file=".env", extra="ignore")

    # The JSON list above, as text (parsed by ``servers()``: a clear error, not pydantic's).
    mcp_servers: str = ""

    def servers(self) -> tuple[McpServerConfig, ...]:
        return parse_servers(self.mcp_servers)


@dataclass(frozen=True)
class StoredList:
    """The stored list's row: ``servers`` None when none is stored (the env list applies)."""

    version: int
    servers: list[Any] | None
    updated_at: datetime | None = None
    updated_by: str | None = None


def read_stored(db: Session) -> StoredList:
    """The stored list and its version (version 0: never written)."""
    row = db.get(McpServerList, McpServerList.SINGLETON)
    if row is None:
        return StoredList(version=0, servers=None)
    by = str(row.updated_by) if row.updated_by is not None else None
    return StoredList(row.version, row.servers, row.updated_at, by)


def stored_version(db: Session) -> int:
    """Only the version: what a worker reads every few seconds to notice a change."""
    version = db.scalar(
        select(McpServerList.version).where(McpServerList.id == McpServerList.SINGLETON)
    )
    return int(version or 0)


def servers_in_force(
    stored: StoredList, env_list: str
) -> tuple[Literal["database", "environment"], tuple[McpServerConfig, ...]]:
    """("database" | "environment", the servers): the rule in the module docstring."""
    if stored.servers is not None:
        return "database", parse_servers(stored.servers, source="the stored MCP server list")
    return "environment", parse_servers(env_list)
