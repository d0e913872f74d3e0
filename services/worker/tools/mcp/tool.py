"""``mcp.<server>.<tool>``: one MCP server tool as a Leaflab :class:`Tool`.

Arguments are validated against the server's JSON Schema before anything is
sent (invalid ones never reach the server). A call is bounded by
``LEAFLAB_MCP_CALL_TIMEOUT_S`` on the private loop: an overrun is cancelled
(the SDK tells the server) and fails as ``timeout``. What comes back is text
for the model — text blocks joined, structured content as JSON, images and
other binary blocks described, not inlined — capped in characters; a result
the server flagged ``isError`` is a ``mcp_tool_error`` the model reads.
"""

from __future__ import annotations

import json
import time
from typing import Any, ClassVar

import mcp_types as types
from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict

from services.worker.tools.base import Tool, ToolContext, ToolError, ToolResult
from services.worker.tools.mcp.connection import McpCallFailed, McpUnavailable, ServerConnection
from services.worker.tools.mcp.discovery import McpToolSpec
from services.worker.tools.mcp.loop import LoopTimeout


class McpArguments(BaseModel):
    """Whatever the server's schema allows (checked by jsonschema, not by pydantic)."""

    model_config = ConfigDict(extra="allow")


class McpTool(Tool[McpArguments]):
    args_model = McpArguments
    spec: ClassVar[McpToolSpec]

    def __init__(self, connection: ServerConnection, *, timeout_s: float, max_chars: int) -> None:
        self._connection = connection
        self._call_timeout_s = timeout_s
        self._max_chars = max_chars
        self._validator = Draft202012Validator(self.spec.input_schema)

    @classmethod
    def of(
        cls, spec: McpToolSpec, connection: ServerConnection, *, timeout_s: float, max_chars: int
    ) -> McpTool:
        """A tool for ``spec``: a subclass of its own, since a tool's name, effect and
        limits are class attributes the runtime reads."""
        bound = type(
            f"McpTool_{spec.server}_{spec.tool}",
            (cls,),
            {
                "spec": spec,
                "name": spec.name,
                "description": f"[MCP server {spec.server}] {spec.description}",
                "effect": spec.effect,
                "retry_safe": spec.retry_safe,
                "approval_required": spec.approval,
            },
        )
        return bound(connection, timeout_s=timeout_s, max_chars=max_chars)

    def parse(self, raw: dict[str, Any]) -> McpArguments:
        problems = [
            {"loc": ".".join(str(p) for p in err.absolute_path), "msg": err.message[:300]}
            for err in sorted(self._validator.iter_errors(raw), key=lambda e: list(e.path))[:10]
        ]
        if problems:
            raise ToolError(
                "invalid_arguments",
                f"invalid arguments for {self.name}: "
                + "; ".join(f"{p['loc'] or '(root)'}: {p['msg']}" for p in problems),
                category="validation",
                details={"errors": problems},
            )
        return McpArguments.model_validate(raw)

    def openai_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.spec.input_schema,
            },
        }

    def run(self, args: McpArguments, ctx: ToolContext) -> ToolResult:
        arguments = args.model_dump(mode="json")
        started = time.monotonic()
        try:
            result = self._connection.call(
                self.spec.tool, arguments, timeout_s=self._call_timeout_s
            )
        except LoopTimeout:
            unreadable = self._connection.unreadable_since(started)
            if unreadable:
                raise ToolError(
                    "mcp_bad_reply",
                    f"MCP server {self.spec.server} sent a reply that is not valid MCP "
                    f"({'; '.join(unreadable)}) and no valid answer within "
                    f"{self._call_timeout_s:g} s",
                    category="upstream",
                ) from None
            raise ToolError(
                "timeout",
                f"{self.name} did not finish within {self._call_timeout_s:g} s; the call "
                "was cancelled",
                category="timeout",
                retryable=self.retry_safe,
                details={"timeout_s": self._call_timeout_s},
            ) from None
        except McpUnavailable as exc:
            raise ToolError(
                "mcp_unavailable",
                f"MCP server {self.spec.server} is unavailable: {exc}",
                category="upstream",
                retryable=self.retry_safe,
            ) from None
        except McpCallFailed as exc:
            raise ToolError(
                "mcp_error",
                f"MCP server {self.spec.server} failed the call: {str(exc)[:1000]}",
                category="upstream",
            ) from None
        text, data = result_text(result, max_chars=self._max_chars)
        if result.is_error:
            raise ToolError(
                "mcp_tool_error",
                f"{self.name} reported an error: {text[:2000]}",
                category="tool",
                details={"server": self.spec.server},
            )
        return ToolResult(text, {"server": self.spec.server, "tool": self.spec.tool, **data})


def result_text(result: types.CallToolResult, *, max_chars: int) -> tuple[str, dict[str, Any]]:
    """What the model reads of a tool result, and a summary for the ledger."""
    parts: list[str] = []
    kinds: list[str] = []
    for block in result.content:
        kinds.append(block.type)
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent | types.AudioContent):
            size = len(block.data) * 3 // 4
            parts.append(f"[{block.type}: {block.mime_type}, about {size} bytes, not shown]")
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource link: {block.uri}]")
        elif isinstance(block, types.EmbeddedResource):
            res = block.resource
            if isinstance(res, types.TextResourceContents):
                parts.append(f"[resource {res.uri}]\n{res.text}")
            else:
                parts.append(f"[resource {res.uri}: binary, not shown]")
        else:
            parts.append(f"[{block.type} content, not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=1))
    text = "\n\n".join(parts) or "(the tool returned no content)"
    truncated = len(text) > max_chars
    if truncated:
        text = text[:max_chars] + f"\n…[truncated: {len(text)} characters in all]"
    return text, {"content_types": kinds, "truncated": truncated}
