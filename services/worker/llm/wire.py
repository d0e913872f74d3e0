"""One model call as it goes on the wire: its bodies, encoded once for every attempt."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.worker.llm.same_object import SameObject
from services.worker.llm.shaping import Shaped
from services.worker.llm.types import RetryListener


def _encode(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


_TOOLS_JSON = SameObject(_encode)


class TokenCounter:
    """The caller's ``on_token``, counting what one attempt streamed."""

    def __init__(self, on_token: Callable[[str], None] | None) -> None:
        self.on_token = on_token
        self.count = 0

    def __call__(self, text: str) -> None:
        self.count += 1
        if self.on_token is not None:
            self.on_token(text)


@dataclass
class WireRequest:
    """One shaped call: the streamed and the whole body, each encoded once when first sent."""

    shaped: Shaped
    model: str
    max_tokens: int
    headers: dict[str, str]
    on_token: Callable[[str], None] | None
    on_retry: RetryListener | None
    # The stream broke once: the server cannot stream this request, so no attempt does.
    streaming_broken: bool = False
    _bodies: dict[bool, bytes] = field(default_factory=dict)

    @property
    def stream(self) -> bool:
        return self.shaped.stream and not self.streaming_broken

    def payload(self, stream: bool) -> bytes:
        if stream not in self._bodies:
            self._bodies[stream] = self._encode(stream)
        return self._bodies[stream]

    def _encode(self, stream: bool) -> bytes:
        shaped = self.shaped
        body: dict[str, Any] = {
            "model": self.model,
            "messages": shaped.messages,
            "max_tokens": self.max_tokens,
        }
        if shaped.response_format is not None:
            body["response_format"] = shaped.response_format
        if shaped.tool_choice is not None:
            body["tool_choice"] = shaped.tool_choice
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        # Compact, non-ASCII text as UTF-8 rather than \u escapes, NaN refused rather than
        # sent (as the SDK's httpx defaults encoded it).
        payload = _encode(body)
        if shaped.native_tools:
            # The same schemas go with every call: their encoding is reused (same_object).
            tools = _TOOLS_JSON(shaped.native_tools)
            payload = b"".join((payload[:-1], b',"tools":', tools, b"}"))
        return payload
