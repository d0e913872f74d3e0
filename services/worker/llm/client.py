"""``ModelClient``: chat completions against any OpenAI-compatible endpoint.

Requests go out over ``transport`` (pooled keep-alive ``http.client``
connections), not the ``openai`` SDK: the SDK's request building and client
machinery were about a fifth of a worker's CPU per agent step (issue 14). Every
retry is ours: counted on the response (``attempts``), reported to ``on_retry``
and logged.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, Literal
from urllib.parse import urlsplit

from services.worker.llm import json_protocol
from services.worker.llm.backoff import RetryPolicy
from services.worker.llm.capabilities import PERMISSIVE, Capabilities
from services.worker.llm.errors import ModelError, from_status, from_transport_error
from services.worker.llm.proxy import route_for
from services.worker.llm.same_object import SameObject
from services.worker.llm.settings import LlmSettings
from services.worker.llm.stream import (
    StreamAssembler,
    StreamErrorEvent,
    estimated_usage,
    iter_sse_data,
    usage_from,
)
from services.worker.llm.transport import Reply, Transport
from services.worker.llm.types import ModelResponse, ToolCall

log = logging.getLogger(__name__)


class _DeadlineExceeded(Exception):
    """The whole streamed reply took longer than the request timeout."""


# What the HTTP exchange raises: timeouts, failed connects, dropped connections.
TRANSPORT_ERRORS = (OSError, http.client.HTTPException)

CONVERSATION_HEADER = "X-Leaflab-Conversation"
USER_AGENT = "leaflab-worker"
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


def _encode(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


_TOOLS_JSON = SameObject(_encode)


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
        capabilities: Callable[[], Capabilities] | None = None,
    ) -> None:
        self.base_url = base_url
        self._capabilities = capabilities
        self.provider = provider or urlsplit(base_url).netloc or base_url
        self.timeout_s = timeout_s
        self.policy = retry_policy or RetryPolicy(max_retries=max_retries)
        self._on_retry = on_retry
        self._sleep = sleep
        route = route_for(base_url)
        self._transport = Transport(route, timeout_s=timeout_s)
        self._target = f"{route.target_prefix}/chat/completions"
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"

    def capabilities(self) -> Capabilities:
        """What the endpoint accepts now (discovered, configured values winning)."""
        return self._capabilities() if self._capabilities is not None else PERMISSIVE

    def close(self) -> None:
        """Close the pooled connections (a later call opens a connection of its own)."""
        self._transport.close()

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
        body: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": max_tokens}
        if response_format is not None:
            # Structured output (a survey stage's JSON schema) travels as is, like messages.
            body["response_format"] = response_format
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        # Encoded once for every attempt, as the SDK (httpx's defaults) encoded it: compact,
        # non-ASCII text as UTF-8 rather than \u escapes, NaN refused rather than sent.
        payload = _encode(body)
        if tools and not json_tools:
            # The same schemas go with every call: their encoding is reused (same_object).
            payload = b"".join((payload[:-1], b',"tools":', _TOOLS_JSON(tools), b"}"))
        headers = self._headers
        if conversation_key:
            headers = {**headers, CONVERSATION_HEADER: conversation_key}
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._attempt(payload, headers, stream, on_token, messages, model)
                break
            except ModelError as err:
                err.attempts = attempt
                if not err.retryable or attempt > self.policy.max_retries:
                    raise
                self._wait_before_retry(err, attempt)
        if attempt > 1:
            response = replace(response, attempts=attempt)
        return json_protocol.apply_to_response(response) if json_tools else response

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
        payload: bytes,
        headers: dict[str, str],
        stream: bool,
        on_token: Callable[[str], None] | None,
        messages: list[dict[str, Any]],
        model: str,
    ) -> ModelResponse:
        started = time.monotonic()
        request_id = None
        try:
            with self._transport.post(self._target, payload, headers) as reply:
                request_id = reply.header("x-request-id")
                if not 200 <= reply.status < 300:
                    raise from_status(
                        reply.status, reply.headers(), reply.read(), provider=self.provider
                    )
                if stream:
                    return self._stream(reply, on_token, messages, started, model, request_id)
                whole = reply.read()
        except TRANSPORT_ERRORS as exc:
            raise from_transport_error(exc, provider=self.provider, request_id=request_id) from exc
        return self._read_whole(whole, messages, request_id, started, model)

    def _stream(
        self,
        reply: Reply,
        on_token: Callable[[str], None] | None,
        messages: list[dict[str, Any]],
        started: float,
        model: str,
        request_id: str | None,
    ) -> ModelResponse:
        assembler = StreamAssembler(on_token)
        try:
            self._read_events(reply.lines(), assembler, started + self.timeout_s)
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
            # Only an endpoint that reports no usage needs the prompt's size (an estimate).
            prompt_chars=_prompt_chars(messages) if assembler.usage is None else 0,
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
            # The socket timeout bounds each read; this bounds the whole reply.
            if time.monotonic() > deadline:
                raise _DeadlineExceeded
        # Read the (normally empty) rest of the body: only a connection whose reply
        # was read to its end goes back to the pool, else every call would reconnect
        # (a TLS handshake per call on remote endpoints). The reply is complete, so
        # a failure here changes nothing.
        with contextlib.suppress(*TRANSPORT_ERRORS):
            for _ in events:
                pass

    def _read_whole(
        self,
        body: bytes,
        messages: list[dict[str, Any]],
        request_id: str | None,
        started: float,
        model: str,
    ) -> ModelResponse:
        try:
            completion = json.loads(body)
        except ValueError as exc:
            raise self._error(f"unreadable response: {exc}", "bad_response", request_id) from exc
        choices = completion.get("choices") if isinstance(completion, dict) else None
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            raise self._error("response has no choices", "bad_response", request_id)
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise self._error("response choice has no message", "bad_response", request_id)
        content = message.get("content")
        calls = _tool_calls(message.get("tool_calls"))
        usage = completion.get("usage")
        return ModelResponse(
            content=content,
            tool_calls=calls,
            finish_reason=choice.get("finish_reason"),
            usage=(
                usage_from(usage)
                if isinstance(usage, dict)
                else estimated_usage(_prompt_chars(messages), content, calls)
            ),
            model=completion.get("model") or model,
            request_id=request_id,
            latency_s=time.monotonic() - started,
            response_id=completion.get("id"),
        )

    def _error(self, message: str, error_type: str, request_id: str | None) -> ModelError:
        return ModelError(
            message,
            provider=self.provider,
            error_type=error_type,
            request_id=request_id,
            retryable=True,
        )


def _tool_calls(raw: Any) -> list[ToolCall]:
    """Tool calls of a whole (non-streamed) reply; entries without a function are skipped."""
    calls = []
    for i, call in enumerate(raw if isinstance(raw, list) else []):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments")
        if not isinstance(arguments, str):  # some servers send an object, not its JSON text
            arguments = json.dumps(arguments if arguments is not None else {})
        calls.append(
            ToolCall(
                id=call.get("id") or f"call_{i}",
                name=function.get("name") or "",
                arguments=arguments,
            )
        )
    return calls


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
