"""A streamable-HTTP MCP server on loopback, for the tests (the SDK's MCPServer).

Run: ``python tests/worker/mcp/http_server.py PORT``; serves ``/mcp`` with one
read-only tool, ``lookup(key)``.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("lab-notes")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup(key: str) -> str:
    """Look a key up in the lab's notes."""
    return f"notes for {key}: the centrifuge is booked on Tuesdays"


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
