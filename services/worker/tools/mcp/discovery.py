"""A server's tool list → the tools Leaflab offers, each within the limits, or skipped with why.

A listed tool is offered only when its name is a plain identifier, its input
schema is a JSON-Schema object that ``jsonschema`` accepts and its JSON is at
most ``max_schema_bytes``; at most ``max_tools`` per server. Anything else is
skipped, and the reason is kept so the job's events and the log can say it.

The declared effect follows the server's annotations (MCP ``ToolAnnotations``):
``readOnlyHint`` → read-only, ``idempotentHint`` → idempotent, both retry-safe
and simply run again after a crash; anything else may have half-run, so an
interrupted call is reported to the model as interrupted, never repeated
(as sandbox runs are).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from jsonschema import Draft202012Validator, SchemaError

from services.worker.tools.base import ToolEffect

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_DESCRIPTION_CHARS = 2_000


@dataclass(frozen=True)
class McpToolSpec:
    server: str
    tool: str  # the server's own name for it
    description: str
    input_schema: dict[str, Any]
    effect: ToolEffect
    approval: bool

    @property
    def name(self) -> str:
        return f"mcp.{self.server}.{self.tool}"

    @property
    def retry_safe(self) -> bool:
        return self.effect in (ToolEffect.READ_ONLY, ToolEffect.IDEMPOTENT)


@dataclass
class Listing:
    tools: list[McpToolSpec] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (tool, reason)


def effect_of(annotations: types.ToolAnnotations | None) -> ToolEffect:
    if annotations is not None and annotations.read_only_hint is True:
        return ToolEffect.READ_ONLY
    if annotations is not None and annotations.idempotent_hint is True:
        return ToolEffect.IDEMPOTENT
    return ToolEffect.EXTERNAL


def listing_of(
    server: str,
    tools: list[types.Tool],
    *,
    approval: bool,
    max_schema_bytes: int,
    max_tools: int,
) -> Listing:
    listing = Listing()
    for tool in tools:
        if len(listing.tools) >= max_tools:
            listing.skipped.append((tool.name[:80], f"more than {max_tools} tools on this server"))
            continue
        reason = _problem(tool, max_schema_bytes)
        if reason is not None:
            listing.skipped.append((tool.name[:80], reason))
            continue
        listing.tools.append(
            McpToolSpec(
                server=server,
                tool=tool.name,
                description=_description(tool),
                input_schema=_schema(tool.input_schema),
                effect=effect_of(tool.annotations),
                approval=approval,
            )
        )
    return listing


def _problem(tool: types.Tool, max_schema_bytes: int) -> str | None:
    if not TOOL_NAME.match(tool.name):
        return "its name is not 1-64 letters, digits, '_' or '-'"
    schema = tool.input_schema
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return "its input schema is not a JSON-Schema object"
    size = len(json.dumps(schema))
    if size > max_schema_bytes:
        return f"its input schema is {size} bytes of JSON, over the {max_schema_bytes} allowed"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"its input schema is not valid JSON Schema: {exc.message[:200]}"
    return None


def _schema(schema: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in schema.items() if k not in ("title", "$schema")}
    out["type"] = "object"
    out.setdefault("properties", {})
    return out


def _description(tool: types.Tool) -> str:
    text = (tool.description or tool.title or tool.name).strip()
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 1] + "…"
    return text
