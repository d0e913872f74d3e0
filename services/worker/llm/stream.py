"""Reading a streamed chat completion: SSE events in, one :class:`ModelResponse` out.

Chunks are read as plain JSON rather than through the SDK's typed models: a
model streams one chunk per token, and building a typed object per chunk costs
about twenty times as much CPU as ``json.loads`` (bench/llm_sim_latency.py), CPU
that a thread-pool worker running dozens of generations shares under one GIL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from services.worker.llm.types import ModelResponse, ToolCall, Usage, estimate_tokens


class StreamErrorEvent(Exception):
    """The server reported an error inside the stream (vLLM does this on engine failures)."""


def iter_sse_data(lines: Iterable[str]) -> Iterator[str]:
    """The ``data`` of each server-sent event (multi-line data joined with newlines)."""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)


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

    def feed(self, chunk: Any) -> bool:
        """Take one decoded ``chat.completion.chunk``; True when it carried output
        (text or tool-call pieces: the tokens a deadline measures the pace by)."""
        if not isinstance(chunk, dict):
            raise StreamErrorEvent(f"stream chunk is not a JSON object: {chunk!r:.100}")
        if chunk.get("error"):
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else str(error)
            raise StreamErrorEvent(message or "error event in stream")
        self.model = chunk.get("model") or self.model
        self.response_id = chunk.get("id") or self.response_id
        if chunk.get("usage"):
            self.usage = usage_from(chunk["usage"])
        produced = False
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue  # we ask for one choice
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if content:
                produced = True
                self._content.append(content)
                if self._on_token is not None:
                    self._on_token(content)
            for call_delta in delta.get("tool_calls") or []:
                produced = True
                self._feed_call(call_delta)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return produced

    def _feed_call(self, delta: dict[str, Any]) -> None:
        # Some servers send the whole call in one chunk, others spread id, name and
        # argument pieces over many; all of them key the pieces by index.
        call = self._calls.setdefault(delta.get("index") or 0, _PartialCall())
        if delta.get("id"):
            call.id = delta["id"]
        function = delta.get("function") or {}
        if function.get("name"):
            call.name += function["name"]
        if function.get("arguments"):
            call.arguments.append(function["arguments"])

    @property
    def complete(self) -> bool:
        return self.finish_reason is not None

    @property
    def started(self) -> bool:
        """Some output (text or a tool call) arrived."""
        return bool(self._content or self._calls)

    def response(
        self,
        *,
        prompt_chars: int,
        request_id: str | None,
        latency_s: float,
        requested: str,
        finish_reason: str | None = None,
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
            finish_reason=finish_reason or self.finish_reason,
            usage=usage,
            model=self.model or requested,
            request_id=request_id,
            latency_s=latency_s,
            response_id=self.response_id,
        )


def usage_from(raw: dict[str, Any]) -> Usage:
    """Our :class:`Usage` from an OpenAI usage object (cached tokens may be absent)."""
    details = raw.get("prompt_tokens_details") or {}
    return Usage(
        input_tokens=raw.get("prompt_tokens") or 0,
        output_tokens=raw.get("completion_tokens") or 0,
        cached_tokens=details.get("cached_tokens") or 0,
    )


def estimated_usage(prompt_chars: int, content: str | None, calls: list[ToolCall]) -> Usage:
    """Usage for an endpoint that reported none: a spend of 0 would let budgets leak."""
    produced = (content or "") + "".join(c.name + c.arguments for c in calls)
    return Usage(
        input_tokens=(prompt_chars + 2) // 3,
        output_tokens=estimate_tokens(produced),
        estimated=True,
    )
