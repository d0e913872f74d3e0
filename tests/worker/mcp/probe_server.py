"""An MCP server that probes its own confinement, for the isolation tests.

Tools: ``connect(targets)`` (opens a TCP connection to each ``host:port``, sends a
GET and reports the first line of the answer, or why it failed) and
``write(path)`` (tries to create the file). Run with ``python -c <this source>``:
an isolated server sees no file of the test tree, only what its command says.
"""

from __future__ import annotations

import json
import socket

from mcp.server.mcpserver import MCPServer

server = MCPServer("probe")


@server.tool()
def connect(targets: list[str]) -> str:
    """Try each host:port; what answered, or why not."""
    seen: dict[str, str] = {}
    for target in targets:
        host, _, port = target.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=3) as sock:
                sock.sendall(f"GET / HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
                first = sock.recv(200).decode(errors="replace").splitlines()
                seen[target] = "answered: " + (first[0] if first else "")
        except OSError as exc:
            seen[target] = f"failed: {type(exc).__name__}: {exc}"
    return json.dumps(seen)


@server.tool()
def write(path: str) -> str:
    """Try to create ``path``."""
    try:
        with open(path, "w") as out:
            out.write("probe\n")
    except OSError as exc:
        return f"failed: {type(exc).__name__}: {exc}"
    return "wrote"


if __name__ == "__main__":
    server.run("stdio")
