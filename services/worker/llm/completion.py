"""Reading a whole (non-streamed) chat completion into a :class:`ModelResponse`."""

from __future__ import annotations

import json
from typing import Any

from services.worker.llm.stream import estimated_usage, usage_from
from services.worker.llm.types import ModelResponse, ToolCall


class UnreadableCompletion(ValueError):
    """The body is not a chat completion (the client reports a ``bad_response``)."""


def prompt_chars(messages: list[dict[str, Any]]) -> int:
    """Characters of the messages' text and tool-call arguments (the usage estimate's base)."""
    total = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(len(str(p.get("text", ""))) for p in content if isinstance(p, dict))
        for call in message.get("tool_calls") or []:
            total += len(str(call.get("function", {}).get("arguments", "")))
    return total


def read_completion(
    body: bytes,
    *,
    messages: list[dict[str, Any]],
    request_id: str | None,
    latency_s: float,
    model: str,
) -> ModelResponse:
    """The response of a whole reply; raises :class:`UnreadableCompletion`."""
    try:
        completion = json.loads(body)
    except ValueError as exc:
        raise UnreadableCompletion(f"unreadable response: {exc}") from exc
    choices = completion.get("choices") if isinstance(completion, dict) else None
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise UnreadableCompletion("response has no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise UnreadableCompletion("response choice has no message")
    content = message.get("content")
    calls = tool_calls_of(message.get("tool_calls"))
    usage = completion.get("usage")
    return ModelResponse(
        content=content,
        tool_calls=calls,
        finish_reason=choice.get("finish_reason"),
        usage=(
            usage_from(usage)
            if isinstance(usage, dict)
            else estimated_usage(prompt_chars(messages), content, calls)
        ),
        model=completion.get("model") or model,
        request_id=request_id,
        latency_s=latency_s,
        response_id=completion.get("id"),
    )


def tool_calls_of(raw: Any) -> list[ToolCall]:
    """Tool calls of a whole (non-streamed) reply; entries without a function are skipped."""
    calls = []
    for i, call in enumerate(raw if isinstance(raw, list) else []):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments")
        if not isinstance(arguments, str):  # some servers send an object, not its JSON text
            arguments = json.dumps(arguments if arguments is not None else {})
        calls.append(
            ToolCall(
                id=call.get("id") or f"call_{i}",
                name=function.get("name") or "",
                arguments=arguments,
            )
        )
    return calls
