"""Which parts of a request auto mode may quote: the user's words and tool results.

System messages (Leaflab's persona, rules, memory, a survey stage's instructions)
and the tool descriptions a client adds for the JSON tool protocol are the
client's words, not the user's: a reply that quoted them would read as a leaked
prompt. Earlier assistant turns are the simulator's own output. So only user
messages and tool results (native ``tool`` messages, or the JSON protocol's
"Result of tool call …" user messages) are sources.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from services.model_sim.state import message_text

# The JSON tool protocol's marker lines, as services/worker/llm/json_protocol.py
# writes them (a test keeps the two in step; the simulator must not import the worker).
PROTOCOL_HEADER = "# Tools\nTo use a tool, answer with one fenced block"
PROTOCOL_LIST = "Available tools (arguments follow the JSON Schema shown):"
RESULT_HEADER = re.compile(r"\AResult of tool call [^\n]*:\n?")
# The protocol's tool list: "- name: description\n  arguments schema: {...}" per tool.
_LISTED_TOOL = re.compile(r"^- ([\w.\-]+): .*?\n  arguments schema: (\{[^\n]*\})$", re.M | re.S)
# A tool asked for in the JSON protocol: ``{"tool": "name", ...}`` inside an assistant's text.
PROTOCOL_CALL = re.compile(r'"tool"\s*:\s*"([\w.\-]+)"')


@dataclass(frozen=True)
class ToolResult:
    name: str | None
    text: str


@dataclass(frozen=True)
class Sources:
    """The quotable text of one request."""

    request: str  # the latest user request ("" when there is none)
    requests: tuple[str, ...]  # every user request, latest first
    results: tuple[ToolResult, ...]  # tool results after the latest request, in order
    earlier_results: tuple[ToolResult, ...]  # tool results before it
    called: tuple[str, ...] = ()  # tools the assistant called since the latest request

    def texts(self) -> list[str]:
        """Everything quotable, the latest request first."""
        return [
            *self.requests,
            *(r.text for r in self.results),
            *(r.text for r in self.earlier_results),
        ]


def without_protocol(text: str) -> str:
    """``text`` less any JSON-protocol tool instructions pasted into it."""
    start = text.find(PROTOCOL_HEADER)
    if start < 0:
        return text
    return text[:start].rstrip()


def _call_names(messages: list[dict[str, Any]]) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                name = (call.get("function") or {}).get("name")
                if isinstance(name, str):
                    names[call["id"]] = name
    return names


def _protocol_result(text: str) -> str | None:
    """The result text of a JSON-protocol tool-result message, None for a real request."""
    match = RESULT_HEADER.match(text)
    return text[match.end() :] if match else None


def gather(messages: list[dict[str, Any]]) -> Sources:
    """Split the request's messages into user requests and tool results."""
    names = _call_names(messages)
    pending: list[str] = []  # JSON-protocol calls of the last assistant turn, in order
    called: list[str] = []
    requests: list[str] = []
    results: list[ToolResult] = []
    earlier: list[ToolResult] = []
    for message in messages:
        role = message.get("role")
        text = message_text(message) if role in ("user", "tool") else ""
        if role == "assistant":
            pending = PROTOCOL_CALL.findall(str(message.get("content") or ""))
            calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
            native = [(c.get("function") or {}).get("name") for c in calls]
            called += [n for n in native if isinstance(n, str)] + pending
        elif role == "tool":
            call_id = message.get("tool_call_id")
            name = names.get(call_id) if isinstance(call_id, str) else None
            if name is None and isinstance(message.get("name"), str):
                name = message["name"]
            results.append(ToolResult(name, text))
        elif role == "user":
            result = _protocol_result(text)
            if result is not None:
                results.append(ToolResult(pending.pop(0) if pending else None, result))
                continue
            requests.append(without_protocol(text))
            earlier.extend(results)
            results, called = [], []
    return Sources(
        request=requests[-1] if requests else "",
        requests=tuple(reversed(requests)),
        results=tuple(results),
        earlier_results=tuple(earlier),
        called=tuple(called),
    )


def protocol_tools(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools a JSON-protocol prompt lists, in the OpenAI ``tools`` shape."""
    for message in messages:
        text = message_text(message) if message.get("role") in ("system", "user") else ""
        start = text.find(PROTOCOL_LIST)
        if start < 0:
            continue
        tools = []
        for name, raw in _LISTED_TOOL.findall(text[start:]):
            try:
                parameters = json.loads(raw)
            except json.JSONDecodeError:
                parameters = {"type": "object", "properties": {}}
            tools.append({"type": "function", "function": {"name": name, "parameters": parameters}})
        return tools
    return []
