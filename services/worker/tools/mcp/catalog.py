"""The MCP tools a job is offered, per server, discovered once per TTL.

Guarantees:
- A server's tools are listed at most once per ``LEAFLAB_MCP_DISCOVERY_TTL_S``
  (one lister at a time per server; other jobs reuse the list). A server that
  fails to start or to list is skipped — its tools absent, the reason kept and
  returned to the caller (the job's events say it) — and tried again after
  ``FAILED_RETRY_S``; the worker keeps running whatever a server does.
- Scoping: a server with ``projects`` is offered only to jobs of those projects
  (by name or id), and a call to one of its tools from any other job is refused
  (``not_offered``) without the server being contacted.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from services.common.net_guard import NetGuard
from services.worker.tools.base import ToolError
from services.worker.tools.mcp.connection import McpCallFailed, McpUnavailable, ServerConnection
from services.worker.tools.mcp.discovery import listing_of
from services.worker.tools.mcp.loop import McpLoop
from services.worker.tools.mcp.settings import McpServerConfig, McpSettings
from services.worker.tools.mcp.tool import McpTool

log = logging.getLogger(__name__)
FAILED_RETRY_S = 30.0


@dataclass(frozen=True)
class Problem:
    """Why a server's tools (or one of them) are not offered."""

    server: str
    reason: str
    tool: str | None = None


@dataclass
class _Discovered:
    at: float
    tools: dict[str, McpTool] = field(default_factory=dict)  # by full name
    problems: list[Problem] = field(default_factory=list)
    failed: bool = False


@dataclass(frozen=True)
class Offer:
    tools: list[McpTool]
    problems: list[Problem]


class McpCatalog:
    def __init__(
        self,
        servers: tuple[McpServerConfig, ...],
        settings: McpSettings,
        *,
        guard: NetGuard,
    ) -> None:
        self.settings = settings
        self._servers = {s.name: s for s in servers}
        self._loop = McpLoop()
        self._connections = {
            s.name: ServerConnection(
                s,
                loop=self._loop,
                guard=guard,
                start_timeout_s=settings.mcp_start_timeout_s,
                settings=settings,
            )
            for s in servers
        }
        self._cache: dict[str, _Discovered] = {}
        self._locks = {s.name: threading.Lock() for s in servers}

    @classmethod
    def from_settings(cls, settings: McpSettings, *, guard: NetGuard) -> McpCatalog | None:
        """The catalog for the configured servers (McpConfigError when malformed); None: none."""
        servers = settings.servers()
        return cls(servers, settings, guard=guard) if servers else None

    def server_names(self) -> list[str]:
        return sorted(self._servers)

    def offer(self, project_id: str | None, project_name: str | None) -> Offer:
        """Every tool of every server offered to this project, and why any are missing."""
        tools: list[McpTool] = []
        problems: list[Problem] = []
        for name, server in sorted(self._servers.items()):
            if not server.offered_to(project_id, project_name):
                continue
            found = self._discovered(name)
            tools.extend(found.tools[n] for n in sorted(found.tools))
            problems.extend(found.problems)
        return Offer(tools, problems)

    def tool(self, full_name: str, project_id: str | None, project_name: str | None) -> McpTool:
        """The tool ``mcp.<server>.<tool>`` for a call from this project; ToolError otherwise."""
        _, _, rest = full_name.partition(".")
        server_name, _, tool_name = rest.partition(".")
        server = self._servers.get(server_name)
        if server is None or not tool_name:
            raise ToolError(
                "unknown_tool",
                f"unknown tool {full_name!r}: no MCP server named {server_name!r} is registered",
                category="validation",
            )
        if not server.offered_to(project_id, project_name):
            raise ToolError(
                "not_offered",
                f"MCP server {server_name!r} is not offered to this job's project",
                category="security",
            )
        found = self._discovered(server_name)
        tool = found.tools.get(full_name)
        if tool is None:
            why = "; ".join(p.reason for p in found.problems if p.tool in (None, tool_name))
            offered = ", ".join(sorted(found.tools)) or "none"
            raise ToolError(
                "unknown_tool",
                f"{full_name!r} is not offered"
                + (f" ({why})" if why else "")
                + f"; tools of MCP server {server_name!r}: {offered}",
                category="validation",
            )
        return tool

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()

    def _discovered(self, name: str) -> _Discovered:
        with self._locks[name]:
            now = time.monotonic()
            cached = self._cache.get(name)
            ttl = FAILED_RETRY_S if cached is not None and cached.failed else None
            ttl = ttl if ttl is not None else self.settings.mcp_discovery_ttl_s
            if cached is not None and now - cached.at < ttl:
                return cached
            found = self._list(name)
            self._cache[name] = found
            return found

    def _list(self, name: str) -> _Discovered:
        server = self._servers[name]
        connection = self._connections[name]
        started = time.monotonic()
        try:
            listed = connection.list_tools()
        except (McpUnavailable, McpCallFailed) as exc:
            reason = f"MCP server {name!r} skipped: {exc}"
            log.warning("%s", reason)
            return _Discovered(at=started, problems=[Problem(name, reason)], failed=True)
        except Exception as exc:  # a bug or a reply the SDK choked on: still only this server
            reason = f"MCP server {name!r} skipped: {type(exc).__name__}: {exc}"
            log.exception("%s", reason)
            return _Discovered(at=started, problems=[Problem(name, reason)], failed=True)
        listing = listing_of(
            name,
            listed,
            approval=server.approval,
            max_schema_bytes=self.settings.mcp_max_schema_bytes,
            max_tools=self.settings.mcp_max_tools_per_server,
        )
        found = _Discovered(at=started)
        for spec in listing.tools:
            found.tools[spec.name] = McpTool.of(
                spec,
                connection,
                timeout_s=self.settings.mcp_call_timeout_s,
                max_chars=self.settings.mcp_max_result_chars,
            )
        for tool_name, why in listing.skipped:
            reason = f"MCP tool mcp.{name}.{tool_name} skipped: {why}"
            log.warning("%s", reason)
            found.problems.append(Problem(name, reason, tool=tool_name))
        return found
