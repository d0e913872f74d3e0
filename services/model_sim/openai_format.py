"""OpenAI chat-completions wire format: whole responses, stream chunks and errors."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from services.model_sim.script import ScriptEntry

# Small pieces so clients see several deltas per reply, as from a real model.
ARGUMENT_PIECE_CHARS = 16
_WORDS = re.compile(r"\s*\S+|\s+")

ERROR_TYPES = {
    400: ("invalid_request_error", "bad_request"),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "permission_denied"),
    404: ("not_found_error", "model_not_found"),
    408: ("timeout_error", "request_timeout"),
    409: ("conflict_error", "conflict"),
    422: ("invalid_request_error", "unprocessable_entity"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    500: ("server_error", "internal_error"),
    502: ("server_error", "bad_gateway"),
    503: ("server_error", "service_unavailable"),
    504: ("server_error", "gateway_timeout"),
}


@dataclass(frozen=True)
class Completion:
    """Everything that identifies one simulated completion."""

    id: str
    model: str
    created: int
    slot: int
    entry: ScriptEntry
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    # Set when the reply was cut (``honour_max_tokens``): "length".
    finish: str | None = None

    @property
    def finish_reason(self) -> str:
        if self.finish is not None:
            return self.finish
        return "tool_calls" if self.entry.tool_calls else "stop"

    def usage(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens},
        }

    def tool_call_id(self, index: int) -> str:
        # Deterministic: a replayed request gets the same ids.
        return f"call_{self.slot}_{index}"


def now() -> int:
    return int(time.time())


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    """The ``{"error": {...}}`` body OpenAI sends with a failed request."""
    fallback = (
        ("invalid_request_error", "bad_request") if status < 500 else ("server_error", "error")
    )
    error_type, code = ERROR_TYPES.get(status, fallback)
    text = message or f"simulated {status} ({code})"
    return {"error": {"message": text, "type": error_type, "param": None, "code": code}}


def completion_body(c: Completion) -> dict[str, Any]:
    """A whole (non-streaming) ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "content": c.entry.content}
    if c.entry.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.tool_call_id(i),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json()},
            }
            for i, call in enumerate(c.entry.tool_calls)
        ]
    return {
        "id": c.id,
        "object": "chat.completion",
        "created": c.created,
        "model": c.model,
        "system_fingerprint": "leaflab-sim",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": c.finish_reason}
        ],
        "usage": c.usage(),
    }


def _chunk(c: Completion, delta: dict[str, Any], finish: str | None, usage: bool) -> str:
    body: dict[str, Any] = {
        "id": c.id,
        "object": "chat.completion.chunk",
        "created": c.created,
        "model": c.model,
        "system_fingerprint": "leaflab-sim",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if usage:
        # With include_usage OpenAI sends "usage": null on every chunk but the last.
        body["usage"] = None
    return sse(body)


def sse(body: dict[str, Any] | str) -> str:
    data = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    return f"data: {data}\n\n"


def content_pieces(text: str) -> list[str]:
    """Split text into word-sized deltas (leading whitespace kept with each word)."""
    return _WORDS.findall(text) or [text]


CHARS_PER_TOKEN = 3  # the simulator's token estimate (state.estimate_tokens)


def cut_at_max_tokens(entry: ScriptEntry, max_tokens: int | None) -> ScriptEntry | None:
    """The reply cut to ``max_tokens`` (≈ 3 characters a token), or None when it fits.

    Text is cut; tool calls of a reply whose text alone is too long are dropped, as a
    server stopping mid-reply would never have reached them."""
    if max_tokens is None:
        return None
    limit = max_tokens * CHARS_PER_TOKEN
    if len(entry.reply_text()) <= limit:
        return None
    content = (entry.content or "")[:limit]
    return entry.model_copy(update={"content": content, "tool_calls": None})


def stream_events(c: Completion, *, include_usage: bool) -> Iterator[str]:
    """Every SSE event of a streamed reply, ending with ``[DONE]``."""
    for _, event in stream_parts(c, include_usage=include_usage):
        yield event


def stream_parts(c: Completion, *, include_usage: bool) -> Iterator[tuple[bool, str]]:
    """(is a token, event) for every SSE event of a streamed reply: content pieces and
    tool-call argument pieces are tokens (a paced stream waits before each)."""
    yield False, _chunk(c, {"role": "assistant", "content": ""}, None, include_usage)
    if c.entry.content:
        for piece in content_pieces(c.entry.content):
            yield True, _chunk(c, {"content": piece}, None, include_usage)
    for index, call in enumerate(c.entry.tool_calls or []):
        head = {
            "index": index,
            "id": c.tool_call_id(index),
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        yield False, _chunk(c, {"tool_calls": [head]}, None, include_usage)
        args = call.arguments_json()
        for start in range(0, len(args), ARGUMENT_PIECE_CHARS):
            piece = args[start : start + ARGUMENT_PIECE_CHARS]
            delta = {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
            yield True, _chunk(c, delta, None, include_usage)
    yield False, _chunk(c, {}, c.finish_reason, include_usage)
    if include_usage:
        yield (
            False,
            sse(
                {
                    "id": c.id,
                    "object": "chat.completion.chunk",
                    "created": c.created,
                    "model": c.model,
                    "system_fingerprint": "leaflab-sim",
                    "choices": [],
                    "usage": c.usage(),
                }
            ),
        )
    yield False, sse("[DONE]")


def partial_stream(c: Completion) -> str:
    """What a connection carries before an injected mid-stream disconnect."""
    events = [_chunk(c, {"role": "assistant", "content": ""}, None, False)]
    pieces = content_pieces(c.entry.content or "partial reply")
    for piece in pieces[: max(1, len(pieces) // 2)]:
        events.append(_chunk(c, {"content": piece}, None, False))
    return "".join(events)
