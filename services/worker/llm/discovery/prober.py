"""The probes' HTTP: one endpoint, every request bounded by the discovery's deadline.

Probes go out raw (httpx, not :class:`~services.worker.llm.client.ModelClient`):
the client shapes requests by the capabilities this package is finding out, and
a probe must send exactly what it tests.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

# Every probe tells the simulator (and server logs) who asks.
CONVERSATION_HEADER = "X-Leaflab-Conversation"
# A status that says nothing about the request itself: load, an outage, a proxy.
TRANSIENT_STATUSES = frozenset({408, 429, 502, 503, 504})


class BudgetSpent(Exception):
    """The discovery's deadline has passed: the remaining probes are skipped."""


@dataclass
class ProbeReply:
    """What one probe got back; ``status`` None means no answer at all."""

    status: int | None
    body: Any = None
    text: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def refused(self) -> bool:
        """The server answered and turned this request down (not load, not an outage)."""
        return self.status is not None and self.status >= 400 and not self.transient

    @property
    def transient(self) -> bool:
        return self.status is None or self.status in TRANSIENT_STATUSES

    def message(self) -> str:
        """The error's message (OpenAI-shaped body), else the start of the body."""
        if self.error is not None:
            return self.error
        inner = self.body.get("error", self.body) if isinstance(self.body, dict) else None
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
        return self.text[:300]


def root_of(base_url: str) -> str:
    """The server's root: the base URL without its trailing ``/v1``."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


class Prober:
    """Sends one endpoint's probes; each waits at most ``probe_timeout_s`` and none
    starts after ``deadline`` (monotonic)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        *,
        deadline: float,
        probe_timeout_s: float = 20.0,
    ) -> None:
        self.base = base_url.rstrip("/")
        self.root = root_of(base_url)
        self.model = model
        self.deadline = deadline
        self.probe_timeout_s = probe_timeout_s
        headers = {"User-Agent": "leaflab-discovery", CONVERSATION_HEADER: "leaflab-discovery"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.Client(headers=headers)

    def close(self) -> None:
        self._http.close()

    def host_path(self, url: str) -> str:
        """``url``'s path relative to the host (what ``Capabilities.tokenize_path`` holds)."""
        return urlsplit(url).path

    def _timeout(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0.05:
            raise BudgetSpent
        return min(self.probe_timeout_s, left)

    def get(self, url: str) -> ProbeReply:
        return self._send("GET", url, None)

    def post(self, url: str, body: dict[str, Any]) -> ProbeReply:
        return self._send("POST", url, body)

    def chat(self, messages: list[dict[str, Any]], **extra: Any) -> ProbeReply:
        """One non-streamed completion of at most ``max_tokens`` (default 1) tokens."""
        body = {"model": self.model, "messages": messages, "max_tokens": 1, **extra}
        return self.post(f"{self.base}/chat/completions", body)

    def chat_stream(self, messages: list[dict[str, Any]], **extra: Any) -> StreamProbe:
        """One streamed completion, read to its end (or the probe's timeout)."""
        body = {"model": self.model, "messages": messages, "max_tokens": 1, "stream": True}
        timeout = self._timeout()
        result = StreamProbe()
        try:
            with self._http.stream(
                "POST", f"{self.base}/chat/completions", json={**body, **extra}, timeout=timeout
            ) as reply:
                result.status = reply.status_code
                for line in reply.iter_lines():
                    result.feed(line)
        except httpx.HTTPError as exc:
            result.error = f"{type(exc).__name__}: {exc}"
        return result

    def _send(self, method: str, url: str, body: dict[str, Any] | None) -> ProbeReply:
        timeout = self._timeout()
        try:
            reply = self._http.request(method, url, json=body, timeout=timeout)
        except httpx.HTTPError as exc:
            return ProbeReply(None, error=f"{type(exc).__name__}: {exc}")
        text = reply.text
        try:
            parsed: Any = json.loads(text) if text else None
        except ValueError:
            parsed = None
        headers = {k.lower(): v for k, v in reply.headers.items()}
        return ProbeReply(reply.status_code, parsed, text, headers)


@dataclass
class StreamProbe:
    """What a streamed probe carried: events, text, tool-call deltas."""

    status: int | None = None
    events: int = 0
    tool_calls: bool = False
    finished: bool = False
    error: str | None = None

    def feed(self, line: str) -> None:
        if not line.startswith("data:"):
            return
        data = line[len("data:") :].strip()
        if data == "[DONE]":
            self.finished = True
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            return
        self.events += 1
        for choice in chunk.get("choices") or [] if isinstance(chunk, dict) else []:
            delta = choice.get("delta") or {}
            if delta.get("tool_calls"):
                self.tool_calls = True
            if choice.get("finish_reason"):
                self.finished = True

    @property
    def empty(self) -> bool:
        """HTTP 200 and not one event: how llama-cpp-python reports an error in a stream."""
        return self.status == 200 and self.events == 0
