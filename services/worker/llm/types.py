"""What a model call returns: content, tool calls, usage."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """One tool call; ``arguments`` is the raw JSON text the model produced (may be invalid)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Usage:
    """Token counts of one call. ``estimated`` is set when the endpoint reported none
    and the counts are a local estimate (≈ characters / 3)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    estimated: bool = False


@dataclass(frozen=True)
class ModelResponse:
    """One completed model call (after any retries)."""

    content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    usage: Usage
    model: str
    request_id: str | None
    latency_s: float
    response_id: str | None = None
    attempts: int = 1
    extra: dict[str, Any] = field(default_factory=dict)


def estimate_tokens(text: str) -> int:
    """Local token estimate used when an endpoint reports no usage: ≈ characters / 3."""
    return estimate_tokens_of_chars(len(text))


def estimate_tokens_of_chars(chars: int) -> int:
    """:func:`estimate_tokens` of a text ``chars`` characters long."""
    return (chars + 2) // 3
