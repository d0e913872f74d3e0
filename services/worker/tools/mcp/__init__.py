"""MCP tool servers as agent tools: ``mcp.<server>.<tool>`` (see settings.py for the list).

settings (the server list, limits) → connection (one session per server on a
private event loop; stdio children without the worker's secrets, HTTP through
the address guard) → discovery (tool lists within limits) → tool (validated,
bounded calls, results as text) → catalog (what a job's project is offered).
"""

from services.worker.tools.mcp.catalog import McpCatalog, Offer, Problem
from services.worker.tools.mcp.settings import McpConfigError, McpServerConfig, McpSettings
from services.worker.tools.mcp.tool import McpTool

__all__ = [
    "McpCatalog",
    "McpConfigError",
    "McpServerConfig",
    "McpSettings",
    "McpTool",
    "Offer",
    "Problem",
]
