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

    def to_dict(self) -> dict[str, Any]:
        """The OpenAI message form, for the assistant message in the history."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True)
class Usage:
    """Token counts of one call. ``estimated`` is set when the endpoint reported none
    and the counts are a local estimate (≈ characters / 3)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    estimated: bool = False

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            estimated=self.estimated or other.estimated,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
        }


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

    def to_message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        return message


def estimate_tokens(text: str) -> int:
    """Local token estimate used when an endpoint reports no usage: ≈ characters / 3."""
    return (len(text) + 2) // 3
