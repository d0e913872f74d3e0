"""MCP tool servers as agent tools: ``mcp.<server>.<tool>`` (see settings.py for the list).

settings (the server list, limits) → connection (one session per server on a
private event loop; stdio children without the worker's secrets, HTTP through
the address guard) → discovery (tool lists within limits) → tool (validated,
bounded calls, results as text) → catalog (what a job's project is offered).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from services.worker.tools.mcp.settings import McpConfigError, McpServerConfig, McpSettings

if TYPE_CHECKING:
    from services.worker.tools.mcp.catalog import McpCatalog, Offer, Problem
    from services.worker.tools.mcp.tool import McpTool


def __getattr__(name: str) -> Any:
    # The MCP SDK (and its HTTP stack) loads only when a server is registered: a
    # worker with none starts as fast as before.
    if name in ("McpCatalog", "Offer", "Problem"):
        from services.worker.tools.mcp import catalog

        return getattr(catalog, name)
    if name == "McpTool":
        from services.worker.tools.mcp.tool import McpTool

        return McpTool
    raise AttributeError(name)


__all__ = [
    "McpCatalog",
    "McpConfigError",
    "McpServerConfig",
    "McpSettings",
    "McpTool",
    "Offer",
    "Problem",
]
