"""A hostile MCP server over stdio, for the tests: built on the SDK's low-level server.

Tools: ``echo`` (answers; no annotations, so not retry-safe), ``env`` (its
environment's names and working directory), ``hang`` (never
answers), ``crash`` (the process exits mid-call), ``garbage`` (writes a reply
that is not a valid tool result, then never answers properly), ``huge`` (an
input schema far over any sane size), ``broken_schema`` (not JSON Schema).
Run: ``python tests/worker/mcp/hostile_server.py [CALL_LOG]``; with a path, each
call's tool name is appended to that file as it starts (to count runs).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

# The SDK points fd 1 at stderr while it serves (so prints cannot corrupt the
# protocol); a copy taken first still writes to the client's pipe.
WIRE = os.dup(1)
TEXT_ARG = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
HUGE = {
    "type": "object",
    "properties": {f"field_{i}": {"type": "string", "description": "x" * 40} for i in range(5000)},
}
TOOLS = [
    types.Tool(name="echo", description="Echo the text back", input_schema=TEXT_ARG),
    types.Tool(name="env", description="Its environment's names", input_schema={"type": "object"}),
    types.Tool(name="hang", description="Never answers", input_schema={"type": "object"}),
    types.Tool(name="crash", description="Exits mid-call", input_schema={"type": "object"}),
    types.Tool(name="garbage", description="Malformed reply", input_schema={"type": "object"}),
    types.Tool(name="huge", description="Enormous schema", input_schema=HUGE),
    types.Tool(
        name="broken_schema",
        description="Not JSON Schema",
        input_schema={"type": "object", "properties": {"x": {"type": "no-such-type"}}},
    ),
]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if len(sys.argv) > 1:
        with open(sys.argv[1], "a") as log:
            log.write(params.name + "\n")
    if params.name == "echo":
        text = f"echo: {args['text']}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
    if params.name == "env":
        names = json.dumps({"names": sorted(os.environ), "cwd": os.getcwd()})
        return types.CallToolResult(content=[types.TextContent(type="text", text=names)])
    if params.name == "hang":
        await anyio.sleep(3600)
    if params.name == "crash":
        os._exit(3)
    if params.name == "garbage":
        reply = {"jsonrpc": "2.0", "id": ctx.request_id, "result": {"content": "not a list"}}
        os.write(WIRE, (json.dumps(reply) + "\n").encode())
        os.write(WIRE, b"this line is not JSON at all\n")
        await anyio.sleep(3600)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"no tool {params.name}")], is_error=True
    )


async def main() -> None:
    server = Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    print("hostile server starting", file=sys.stderr)
    anyio.run(main)
