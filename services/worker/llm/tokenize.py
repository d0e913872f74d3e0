"""Counting prompt tokens with the server's own tokenizer, for the budget reservation.

Only an endpoint whose discovery found a tokenizer route
(``Capabilities.tokenize_path``: vLLM and llama.cpp ``/tokenize``,
llama-cpp-python ``/extras/tokenize``) is asked; every other endpoint (the
simulator, hosted APIs) keeps the local estimate and costs no round trip. Counts
are cached per text (a conversation's earlier messages are counted once, not
every round), each request is bounded by a short timeout, and any failure falls
back to the local estimate for that text; after a failure the endpoint is not
asked again for ``retry_after_s``, so a broken route never slows every call.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit

import httpx

from services.worker.llm.capabilities import Capabilities
from services.worker.llm.types import estimate_tokens

# Tokens of chat framing per message (role markers, separators) beyond its text.
MESSAGE_FRAMING_TOKENS = 4


def _body(server: str, text: str, model: str | None) -> dict[str, Any]:
    """The request body each server's tokenizer reads."""
    if server == "llama-cpp-python":
        return {"input": text}
    if server == "vllm":
        return {"prompt": text, **({"model": model} if model else {})}
    # llama.cpp's server reads ``content``; unknown servers get both spellings.
    return {"content": text, "prompt": text}


def _count(data: Any) -> int | None:
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("count"), int):
        return int(data["count"])
    tokens = data.get("tokens")
    return len(tokens) if isinstance(tokens, list) else None


class ServerTokenizer:
    """Token counts from one endpoint's tokenizer; thread-safe, share one per endpoint."""

    def __init__(
        self,
        url: str,
        *,
        server: str = "unknown",
        model: str | None = None,
        timeout_s: float = 2.0,
        cache_size: int = 4096,
        retry_after_s: float = 60.0,
    ) -> None:
        self.url = url
        self._server = server
        self._model = model
        self._timeout = httpx.Timeout(timeout_s)
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._cache_size = cache_size
        self._retry_after_s = retry_after_s
        self._down_until = 0.0
        self._lock = threading.Lock()
        self.requests = 0  # how many times the server was asked (tests, metrics)

    def count(self, text: str) -> int:
        """Tokens of ``text`` by the server's tokenizer, else the local estimate."""
        if not text:
            return 0
        key = hashlib.sha256(text.encode()).hexdigest()
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            if time.monotonic() < self._down_until:
                return estimate_tokens(text)
        counted = self._ask(text)
        if counted is None:
            with self._lock:
                self._down_until = time.monotonic() + self._retry_after_s
            return estimate_tokens(text)
        with self._lock:
            self._cache[key] = counted
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return counted

    def _ask(self, text: str) -> int | None:
        self.requests += 1
        try:
            reply = httpx.post(
                self.url, json=_body(self._server, text, self._model), timeout=self._timeout
            )
            if reply.status_code != 200:
                return None
            return _count(reply.json())
        except (httpx.HTTPError, ValueError):
            return None

    def prompt_tokens(self, messages: list[dict[str, Any]], tools: Any) -> int:
        """The prompt of a chat request: each message's text, its framing, the tools."""
        total = 0
        for message in messages:
            total += MESSAGE_FRAMING_TOKENS + self.count(_message_text(message))
        if tools:
            total += self.count(json.dumps(tools, ensure_ascii=False, separators=(",", ":")))
        return total


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    parts = [content if isinstance(content, str) else ""]
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        parts.append(f"{function.get('name', '')}{function.get('arguments', '')}")
    return "".join(parts)


def tokenize_url(base_url: str, path: str) -> str:
    """The tokenizer's URL: ``path`` is relative to the base URL's host (not its /v1)."""
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}/{path.lstrip('/')}"


_TOKENIZERS: dict[str, ServerTokenizer] = {}
_TOKENIZERS_LOCK = threading.Lock()


def tokenizer_for(
    base_url: str | None, caps: Capabilities, *, model: str | None = None
) -> ServerTokenizer | None:
    """The shared tokenizer of an endpoint, or None when it has no tokenizer route."""
    if not base_url or not caps.tokenize_path:
        return None
    url = tokenize_url(base_url, caps.tokenize_path)
    with _TOKENIZERS_LOCK:
        found = _TOKENIZERS.get(url)
        if found is None:
            found = ServerTokenizer(url, server=caps.server, model=model)
            _TOKENIZERS[url] = found
        return found
