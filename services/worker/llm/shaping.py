"""Requests shaped by what the endpoint accepts (:class:`Capabilities`): pure functions.

Guarantees, for every request the client sends:

- Native tools always go with ``tool_choice: "auto"`` (llama-cpp-python ignores
  ``tools`` without it); a call that carries native tools is not streamed when the
  endpoint cannot stream tool calls.
- ``tool_mode == "json"`` (or the profile's ``json_tool_protocol`` flag) describes
  the tools in the system prompt instead (``json_protocol``).
- With ``alternation`` no ``tool`` role is sent (tool exchanges become text) and no
  two consecutive messages share a role (they are merged, in order); the first turn
  after the system message is the user's.
- Without ``system_role`` the system message is folded into the first user turn.
- Structured output follows ``structured_output``: ``json_schema`` as given,
  ``json_object`` as ``{"type": "json_object", "schema": ...}``, ``prompt`` as no
  ``response_format`` and the schema plus "answer with JSON only" appended to the
  last user message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from services.worker.llm import json_protocol
from services.worker.llm.capabilities import Capabilities

ToolProtocol = Literal["native", "json"]
# Where a conversation resumes with the assistant, a template that needs alternation
# wants a user turn first; this one says nothing the model must act on.
CONTINUE_TURN = "(continue)"
JSON_ONLY = (
    "Answer with JSON only: one JSON object, no text before or after it, "
    "valid against this JSON Schema:"
)
MERGE_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Shaped:
    """What goes on the wire, and how the reply must be read."""

    messages: list[dict[str, Any]]
    # Tools sent in the request's ``tools`` (None: none, or described in the prompt).
    native_tools: list[dict[str, Any]] | None
    tool_choice: str | None
    response_format: dict[str, Any] | None
    stream: bool
    # The reply's text carries JSON-protocol tool blocks to parse into tool calls.
    json_tools: bool


def shape_request(
    *,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    response_format: dict[str, Any] | None,
    stream: bool,
    capabilities: Capabilities,
    tool_protocol: ToolProtocol = "native",
) -> Shaped:
    """The request as this endpoint accepts it (the caller's lists are not modified)."""
    json_tools = bool(tools) and (tool_protocol == "json" or capabilities.tool_mode == "json")
    native = tools if tools and not json_tools else None
    out = json_protocol.to_json_protocol(messages, tools or []) if json_tools else list(messages)
    fmt, instruction = structured_form(response_format, capabilities)
    if instruction is not None:
        out = append_to_last_user(out, instruction)
    if capabilities.alternation:
        out = json_protocol.tool_history_as_text(out)
    if not capabilities.system_role:
        out = fold_system(out)
    if capabilities.alternation:
        out = user_turn_first(merge_same_roles(out))
    return Shaped(
        messages=out,
        native_tools=native,
        tool_choice="auto" if native else None,
        response_format=fmt,
        stream=stream and not (native and not capabilities.stream_tool_calls),
        json_tools=json_tools,
    )


def structured_form(
    response_format: dict[str, Any] | None, capabilities: Capabilities
) -> tuple[dict[str, Any] | None, str | None]:
    """(response_format to send, instruction to add to the prompt) for this endpoint."""
    if response_format is None or capabilities.structured_output == "json_schema":
        return response_format, None
    schema = schema_of(response_format)
    if capabilities.structured_output == "json_object":
        if schema is None:
            return {"type": "json_object"}, None
        return {"type": "json_object", "schema": schema}, None
    if schema is None:
        return None, "Answer with JSON only: one JSON object, no text before or after it."
    return None, f"{JSON_ONLY}\n{json.dumps(schema, ensure_ascii=False)}"


def schema_of(response_format: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema inside an OpenAI ``json_schema`` (or a ``json_object`` with a
    ``schema``) response_format; None for a plain ``json_object`` or ``text``."""
    inner = response_format.get("json_schema")
    if isinstance(inner, dict) and isinstance(inner.get("schema"), dict):
        return dict(inner["schema"])
    schema = response_format.get("schema")
    return dict(schema) if isinstance(schema, dict) else None


def append_to_last_user(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """``text`` appended to the last user message (a new user message when the
    conversation does not end with one)."""
    if messages and messages[-1].get("role") == "user":
        last = messages[-1]
        return [*messages[:-1], {**last, "content": _joined(last.get("content"), text)}]
    return [*messages, {"role": "user", "content": text}]


def fold_system(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """No system role: the system messages before the first user turn go at the start
    of that turn; a later system message becomes a user message of its own."""
    leading: list[Any] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") != "system":
            out.append(dict(message))
        elif not any(m.get("role") == "user" for m in out):
            leading.append(message.get("content"))
        else:
            out.append({**message, "role": "user"})
    if not leading:
        return out
    prefix = MERGE_SEPARATOR.join(str(c) for c in leading if c)
    for i, message in enumerate(out):
        if message.get("role") == "user":
            out[i] = {**message, "content": _joined(prefix, message.get("content"))}
            return out
    return [{"role": "user", "content": prefix}, *out]


def merge_same_roles(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive messages of one role merged into one, in order (texts joined by a
    blank line, tool calls concatenated)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if out and out[-1].get("role") == message.get("role"):
            merged = dict(out[-1])
            merged["content"] = _joined(merged.get("content"), message.get("content"))
            calls = [*(merged.get("tool_calls") or []), *(message.get("tool_calls") or [])]
            if calls:
                merged["tool_calls"] = calls
            out[-1] = merged
        else:
            out.append(dict(message))
    return out


def user_turn_first(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A conversation (after its system message) that starts with the assistant gets a
    neutral user turn first: alternating templates start with the user."""
    start = 1 if messages and messages[0].get("role") == "system" else 0
    if len(messages) > start and messages[start].get("role") == "assistant":
        return [*messages[:start], {"role": "user", "content": CONTINUE_TURN}, *messages[start:]]
    return messages


def _joined(first: Any, second: Any) -> Any:
    """Two message contents as one: text joined by a blank line; content-part lists
    (images, text parts) concatenated; a missing side is dropped."""
    if first in (None, ""):
        return second if second is not None else ""
    if second in (None, ""):
        return first
    if isinstance(first, str) and isinstance(second, str):
        return f"{first}{MERGE_SEPARATOR}{second}"
    return [*_parts(first), *_parts(second)]


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, list):
        return list(content)
    return [{"type": "text", "text": str(content)}]
