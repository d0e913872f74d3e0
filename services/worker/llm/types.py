"""What a model call returns: content, tool calls, usage."""

from __future__ import annotations

from collections.abc import Callable
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


# Finish reasons of a reply that stopped before the model was done: the token limit
# ("length"), or the stream's total deadline ("deadline", set by the client).
TRUNCATED_FINISH_REASONS = frozenset({"length", "deadline"})


@dataclass(frozen=True)
class ModelResponse:
    """One completed model call (after any retries).

    ``finish_reason`` is what the server said ("stop", "tool_calls", "length"), or
    "deadline" when the client ended a progressing stream at its total deadline and
    kept the partial reply; :attr:`truncated` and :attr:`empty` flag weak output.
    """

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

    @property
    def truncated(self) -> bool:
        """The reply was cut (token limit or deadline): its text may end mid-sentence."""
        return self.finish_reason in TRUNCATED_FINISH_REASONS

    @property
    def empty(self) -> bool:
        """No text and no tool call: the model said nothing."""
        return not (self.content or "").strip() and not self.tool_calls


@dataclass(frozen=True)
class RetryNotice:
    """An attempt that streamed text failed and another attempt follows: a watcher
    drops that attempt's partial text (the job's ``model_retry`` event)."""

    attempt: int  # the failed attempt, from 1
    error: str
    wait_s: float  # before the next attempt starts

    def to_event(self) -> dict[str, Any]:
        return {"attempt": self.attempt, "error": self.error, "wait_s": round(self.wait_s, 3)}


RetryListener = Callable[[RetryNotice], None]


def estimate_tokens(text: str) -> int:
    """Local token estimate used when an endpoint reports no usage: ≈ characters / 3."""
    return estimate_tokens_of_chars(len(text))


def estimate_tokens_of_chars(chars: int) -> int:
    """:func:`estimate_tokens` of a text ``chars`` characters long."""
    return (chars + 2) // 3
