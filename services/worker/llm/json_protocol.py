"""The JSON tool protocol, for models without native tool calling.

Tools are described in the system prompt; the model asks for a tool with a
fenced block ```json {"tool": NAME, "arguments": {...}} ``` (or a JSON list of
such objects), which is parsed here into ordinary :class:`ToolCall` objects.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace
from typing import Any

from services.worker.llm.types import ModelResponse, ToolCall

_FENCE = re.compile(r"```[ \t]*(?:json|tool|tool_call)?[ \t]*\n(.*?)```", re.DOTALL)

INSTRUCTIONS = """\
# Tools
To use a tool, answer with one fenced block and nothing after it:
```json
{"tool": "<tool name>", "arguments": {<arguments as JSON>}}
```
Several tool calls at once: put a JSON list of such objects in the block.
Tool results come back in the next user message. When you are done, answer
in plain text without a tool block.

Available tools (arguments follow the JSON Schema shown):"""


@dataclass(frozen=True)
class ParsedReply:
    """Reply text with tool blocks removed, the tool calls found, and why any block failed."""

    content: str | None
    tool_calls: list[ToolCall]
    errors: list[str]


def _as_request(item: object) -> tuple[str, str] | None:
    """``(name, arguments JSON)`` when ``item`` looks like a tool request."""
    if not isinstance(item, dict):
        return None
    name = item.get("tool", item.get("name"))
    if not isinstance(name, str) or not name:
        return None
    arguments = item.get("arguments", {})
    if isinstance(arguments, str):
        return name, arguments
    return name, json.dumps(arguments, ensure_ascii=False)


def _requests_in(block: str) -> list[tuple[str, str]] | None:
    data = json.loads(block)
    items = data if isinstance(data, list) else [data]
    requests = [_as_request(item) for item in items]
    if not items or any(r is None for r in requests):
        return None
    return [r for r in requests if r is not None]


def parse_tool_request(text: str) -> ParsedReply:
    """Find tool requests in a model's plain-text reply (fenced blocks, or a bare JSON reply)."""
    found: list[tuple[str, str]] = []
    errors: list[str] = []
    remaining = text
    blocks = [m.group(1) for m in _FENCE.finditer(text)]
    if not blocks and text.strip().startswith(("{", "[")):
        blocks = [text.strip()]
    for block in blocks:
        try:
            requests = _requests_in(block.strip())
        except json.JSONDecodeError as exc:
            if '"tool"' in block:
                errors.append(f"tool request is not valid JSON ({exc.msg} at line {exc.lineno})")
            continue
        if requests is None:
            continue  # ordinary JSON the model wanted to show, not a tool request
        found.extend(requests)
        remaining = _remove_block(remaining, block)
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    calls = [
        ToolCall(id=f"json_{digest}_{i}", name=name, arguments=args)
        for i, (name, args) in enumerate(found)
    ]
    content = remaining.strip() or None
    return ParsedReply(content=content, tool_calls=calls, errors=errors)


def _remove_block(text: str, block: str) -> str:
    fenced = re.compile(r"```[^\n]*\n" + re.escape(block) + r"```", re.DOTALL)
    stripped, count = fenced.subn("", text, count=1)
    return stripped if count else text.replace(block, "", 1)


def tool_instructions(tools: list[dict[str, Any]]) -> str:
    """The system-prompt section describing the tools (OpenAI ``tools`` format in)."""
    lines = [INSTRUCTIONS]
    for tool in tools:
        function = tool.get("function", tool)
        schema = json.dumps(function.get("parameters", {}), ensure_ascii=False)
        description = function.get("description", "").strip()
        lines.append(f"- {function.get('name')}: {description}\n  arguments schema: {schema}")
    return "\n".join(lines)


def _tool_block(calls: list[dict[str, Any]]) -> str:
    requests = []
    for call in calls:
        function = call.get("function", {})
        raw = function.get("arguments", "{}")
        try:
            arguments: Any = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            arguments = raw
        requests.append({"tool": function.get("name"), "arguments": arguments})
    body = requests[0] if len(requests) == 1 else requests
    return "```json\n" + json.dumps(body, ensure_ascii=False) + "\n```"


def tool_history_as_text(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation with its tool exchanges written as text: an assistant's tool
    calls as a JSON block, each tool result as a user message. No ``tool`` role and
    no ``tool_calls`` remain (what a model without native tools, or a chat template
    that allows only user/assistant turns, can read)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            text = (message.get("content") or "").strip()
            block = _tool_block(message["tool_calls"])
            out.append({"role": "assistant", "content": f"{text}\n{block}".strip()})
        elif role == "tool":
            header = f"Result of tool call {message.get('tool_call_id', '')}:"
            out.append({"role": "user", "content": f"{header}\n{message.get('content', '')}"})
        else:
            out.append(dict(message))
    return out


def to_json_protocol(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The conversation as a model without native tools can read it: tool instructions in
    the system prompt, tool calls as JSON blocks, tool results as user messages."""
    instructions = tool_instructions(tools)
    out = tool_history_as_text(messages)
    if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
        out[0]["content"] = f"{out[0]['content']}\n\n{instructions}"
    else:
        out.insert(0, {"role": "system", "content": instructions})
    return out


def apply_to_response(response: ModelResponse) -> ModelResponse:
    """Turn tool blocks in a reply's text into tool calls (native calls are left alone)."""
    if response.tool_calls or not response.content:
        return response
    parsed = parse_tool_request(response.content)
    extra = {**response.extra, "tool_protocol_errors": parsed.errors} if parsed.errors else None
    if not parsed.tool_calls:
        return replace(response, extra=extra) if extra else response
    return replace(
        response,
        content=parsed.content,
        tool_calls=parsed.tool_calls,
        finish_reason="tool_calls",
        extra=extra or response.extra,
    )
