"""``ModelClient``: chat completions against any OpenAI-compatible endpoint.

The SDK's own retries are switched off so that every retry is ours: counted
on the response (``attempts``), reported to ``on_retry`` and logged.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, Literal
from urllib.parse import urlsplit

import openai

from services.worker.llm import json_protocol
from services.worker.llm.backoff import RetryPolicy
from services.worker.llm.errors import ModelError, from_sdk_error
from services.worker.llm.settings import LlmSettings
from services.worker.llm.stream import (
    StreamAssembler,
    StreamErrorEvent,
    estimated_usage,
    iter_sse_data,
    usage_from,
)
from services.worker.llm.types import ModelResponse, ToolCall

try:  # recent openai releases talk over httpx2, older ones over httpx
    import httpx2 as _http
except ImportError:  # pragma: no cover - depends on the installed openai
    import httpx as _http  # type: ignore[no-redef]

log = logging.getLogger(__name__)


class _DeadlineExceeded(Exception):
    """The whole streamed reply took longer than the request timeout."""


# Raised by the HTTP library while we read a stream body ourselves.
TIMEOUT_ERRORS = (_http.TimeoutException,)
TRANSPORT_ERRORS = (_http.TransportError,)

CONVERSATION_HEADER = "X-Leaflab-Conversation"
ToolProtocol = Literal["native", "json"]
RetryHook = Callable[[ModelError, float], None]


def _prompt_chars(messages: list[dict[str, Any]]) -> int:
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


class ModelClient:
    """A thread-safe client for one endpoint; share one instance across worker threads."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout_s: float = 120.0,
        max_retries: int = 2,
        provider: str | None = None,
        retry_policy: RetryPolicy | None = None,
        on_retry: RetryHook | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url
        self.provider = provider or urlsplit(base_url).netloc or base_url
        self.timeout_s = timeout_s
        self.policy = retry_policy or RetryPolicy(max_retries=max_retries)
        self._on_retry = on_retry
        self._sleep = sleep
        self._sdk = openai.OpenAI(
            base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout_s
        )

    def close(self) -> None:
        self._sdk.close()

    def complete(
        self,
        *,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int,
        conversation_key: str | None = None,
        on_token: Callable[[str], None] | None = None,
        stream: bool = True,
        tool_protocol: ToolProtocol = "native",
        response_format: dict[str, Any] | None = None,
    ) -> ModelResponse:
        """One chat completion, retried on retryable failures; raises :class:`ModelError`.

        After a retry, ``on_token`` sees the new attempt's tokens from the start
        (``on_retry`` is called first, so a listener can discard the partial text).
        With ``tool_protocol="json"`` the tools are described in the system prompt
        and tool requests are parsed from the reply text (models without native tools).
        """
        json_tools = tool_protocol == "json" and bool(tools)
        if json_tools:
            messages = json_protocol.to_json_protocol(messages, tools or [])
        kwargs = self._request_kwargs(
            model, messages, None if json_tools else tools, max_tokens, conversation_key, stream
        )
        if response_format is not None:
            # Structured output (a survey stage's JSON schema) travels as is, like messages.
            kwargs["extra_body"]["response_format"] = response_format
        prompt_chars = _prompt_chars(messages)
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._attempt(kwargs, stream, on_token, prompt_chars, model)
                break
            except ModelError as err:
                err.attempts = attempt
                if not err.retryable or attempt > self.policy.max_retries:
                    raise
                self._wait_before_retry(err, attempt)
        response = replace(response, attempts=attempt)
        return json_protocol.apply_to_response(response) if json_tools else response

    def _request_kwargs(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        max_tokens: int,
        conversation_key: str | None,
        stream: bool,
    ) -> dict[str, Any]:
        # The SDK walks typed parameters recursively before sending (~0.5 ms CPU per
        # message, 50 ms for a 100-message history, under the worker's GIL). Ours are
        # plain JSON already, so they travel in extra_body, which the SDK sends as is
        # and which takes precedence over the placeholder.
        body: dict[str, Any] = {"messages": messages}
        if tools:
            body["tools"] = tools
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": [],
            "max_tokens": max_tokens,
            "timeout": self.timeout_s,
            "extra_body": body,
        }
        if conversation_key:
            kwargs["extra_headers"] = {CONVERSATION_HEADER: conversation_key}
        if stream:
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}
        return kwargs

    def _wait_before_retry(self, err: ModelError, attempt: int) -> None:
        wait = self.policy.delay_s(attempt, err.retry_after)
        log.warning(
            "model call failed (attempt %d/%d), retrying in %.2fs: %s",
            attempt,
            self.policy.max_retries + 1,
            wait,
            err,
        )
        if self._on_retry is not None:
            self._on_retry(err, wait)
        self._sleep(wait)

    def _attempt(
        self,
        kwargs: dict[str, Any],
        stream: bool,
        on_token: Callable[[str], None] | None,
        prompt_chars: int,
        model: str,
    ) -> ModelResponse:
        started = time.monotonic()
        try:
            if stream:
                return self._stream(kwargs, on_token, prompt_chars, started, model)
            raw = self._sdk.chat.completions.with_raw_response.create(**kwargs)
            request_id = raw.headers.get("x-request-id")
            return self._read_whole(raw.parse(), prompt_chars, request_id, started, model)
        except openai.OpenAIError as exc:
            raise from_sdk_error(exc, provider=self.provider) from exc

    def _stream(
        self,
        kwargs: dict[str, Any],
        on_token: Callable[[str], None] | None,
        prompt_chars: int,
        started: float,
        model: str,
    ) -> ModelResponse:
        assembler = StreamAssembler(on_token)
        # The SDK raises status errors on entering; the body is ours to read.
        with self._sdk.chat.completions.with_streaming_response.create(**kwargs) as resp:
            request_id = resp.headers.get("x-request-id")
            try:
                self._read_events(resp.iter_lines(), assembler, started + self.timeout_s)
            except TIMEOUT_ERRORS as exc:
                raise self._error(f"stream read timed out: {exc}", "timeout", request_id) from exc
            except TRANSPORT_ERRORS as exc:
                raise self._error(f"connection dropped: {exc}", "disconnect", request_id) from exc
            except json.JSONDecodeError as exc:
                message = f"unreadable stream chunk: {exc}"
                raise self._error(message, "bad_response", request_id) from exc
            except StreamErrorEvent as exc:
                raise self._error(str(exc), "stream_error", request_id) from exc
            except _DeadlineExceeded as exc:
                message = "stream exceeded the request timeout"
                raise self._error(message, "timeout", request_id) from exc
        if not assembler.complete:
            raise self._error("stream ended without a finish reason", "disconnect", request_id)
        return assembler.response(
            prompt_chars=prompt_chars,
            request_id=request_id,
            latency_s=time.monotonic() - started,
            requested=model,
        )

    @staticmethod
    def _read_events(lines: Iterator[str], assembler: StreamAssembler, deadline: float) -> None:
        events = iter_sse_data(lines)
        for data in events:
            if data.startswith("[DONE]"):
                break
            assembler.feed(json.loads(data))
            # The HTTP timeout bounds each read; this bounds the whole reply.
            if time.monotonic() > deadline:
                raise _DeadlineExceeded
        # Read the (normally empty) rest of the body: a response closed unread is
        # dropped instead of going back to the pool, and every call would reconnect
        # (a TLS handshake per call on remote endpoints). The reply is complete, so
        # a failure here changes nothing.
        with contextlib.suppress(*TIMEOUT_ERRORS, *TRANSPORT_ERRORS):
            for _ in events:
                pass

    def _read_whole(
        self, completion: Any, prompt_chars: int, request_id: str | None, started: float, model: str
    ) -> ModelResponse:
        if not completion.choices:
            raise self._error("response has no choices", "bad_response", request_id)
        choice = completion.choices[0]
        message = choice.message
        calls = [
            ToolCall(id=c.id or f"call_{i}", name=c.function.name, arguments=c.function.arguments)
            for i, c in enumerate(message.tool_calls or [])
            if getattr(c, "function", None) is not None
        ]
        usage = (
            usage_from(completion.usage.model_dump())
            if completion.usage is not None
            else estimated_usage(prompt_chars, message.content, calls)
        )
        return ModelResponse(
            content=message.content,
            tool_calls=calls,
            finish_reason=choice.finish_reason,
            usage=usage,
            model=completion.model or model,
            request_id=request_id,
            latency_s=time.monotonic() - started,
            response_id=completion.id,
        )

    def _error(self, message: str, error_type: str, request_id: str | None) -> ModelError:
        return ModelError(
            message,
            provider=self.provider,
            error_type=error_type,
            request_id=request_id,
            retryable=True,
        )


def client_from_settings(settings: LlmSettings, **kwargs: Any) -> ModelClient:
    """The client for the configured endpoint (``LEAFLAB_LLM_BASE_URL`` etc.)."""
    policy = RetryPolicy(
        max_retries=settings.llm_max_retries,
        base_delay_s=settings.llm_retry_base_s,
        max_delay_s=settings.llm_retry_max_s,
        max_retry_after_s=settings.llm_retry_after_cap_s,
    )
    return ModelClient(
        settings.llm_base_url,
        settings.llm_api_key,
        timeout_s=settings.llm_timeout_s,
        retry_policy=policy,
        **kwargs,
    )
