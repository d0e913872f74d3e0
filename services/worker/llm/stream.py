"""Assembling a streamed chat completion from its chunks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.worker.llm.types import ModelResponse, ToolCall, Usage, estimate_tokens


@dataclass
class _PartialCall:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamAssembler:
    """Collects content deltas (passing each to ``on_token``), tool-call deltas by index,
    the finish reason and the final usage chunk."""

    def __init__(self, on_token: Callable[[str], None] | None = None) -> None:
        self._on_token = on_token
        self._content: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.model: str | None = None
        self.response_id: str | None = None

    def feed(self, chunk: Any) -> None:
        """Take one ``ChatCompletionChunk``."""
        self.model = chunk.model or self.model
        self.response_id = chunk.id or self.response_id
        if chunk.usage is not None:
            self.usage = usage_from(chunk.usage)
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                self._content.append(delta.content)
                if self._on_token is not None:
                    self._on_token(delta.content)
            for call_delta in delta.tool_calls or []:
                self._feed_call(call_delta)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason

    def _feed_call(self, delta: Any) -> None:
        # Some servers send the whole call in one chunk, others spread id, name and
        # argument pieces over many; all of them key the pieces by index.
        call = self._calls.setdefault(delta.index or 0, _PartialCall())
        if delta.id:
            call.id = delta.id
        function = delta.function
        if function is not None:
            if function.name:
                call.name += function.name
            if function.arguments:
                call.arguments.append(function.arguments)

    @property
    def complete(self) -> bool:
        return self.finish_reason is not None

    def response(
        self, *, prompt_chars: int, request_id: str | None, latency_s: float, requested: str
    ) -> ModelResponse:
        content = "".join(self._content) or None
        calls = [
            ToolCall(id=c.id or f"call_{i}", name=c.name, arguments="".join(c.arguments))
            for i, c in sorted(self._calls.items())
        ]
        usage = self.usage or estimated_usage(prompt_chars, content, calls)
        return ModelResponse(
            content=content,
            tool_calls=calls,
            finish_reason=self.finish_reason,
            usage=usage,
            model=self.model or requested,
            request_id=request_id,
            latency_s=latency_s,
            response_id=self.response_id,
        )


def usage_from(raw: Any) -> Usage:
    """Our :class:`Usage` from an SDK ``CompletionUsage`` (cached tokens may be absent)."""
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return Usage(
        input_tokens=raw.prompt_tokens or 0,
        output_tokens=raw.completion_tokens or 0,
        cached_tokens=cached,
    )


def estimated_usage(prompt_chars: int, content: str | None, calls: list[ToolCall]) -> Usage:
    """Usage for an endpoint that reported none: a spend of 0 would let budgets leak."""
    produced = (content or "") + "".join(c.name + c.arguments for c in calls)
    return Usage(
        input_tokens=(prompt_chars + 2) // 3,
        output_tokens=estimate_tokens(produced),
        estimated=True,
    )
