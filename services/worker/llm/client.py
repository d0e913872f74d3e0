"""``ModelClient``: chat completions against any OpenAI-compatible endpoint.

The SDK's own retries are switched off so that every retry is ours: counted
on the response (``attempts``), reported to ``on_retry`` and logged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal
from urllib.parse import urlsplit

import openai

from services.worker.llm import json_protocol
from services.worker.llm.backoff import RetryPolicy
from services.worker.llm.errors import ModelError, from_sdk_error
from services.worker.llm.settings import LlmSettings
from services.worker.llm.stream import StreamAssembler, estimated_usage, usage_from
from services.worker.llm.types import ModelResponse, ToolCall

log = logging.getLogger(__name__)

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
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "max_tokens": max_tokens,
            "timeout": self.timeout_s,
        }
        if tools:
            kwargs["tools"] = tools
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
            raw = self._sdk.chat.completions.with_raw_response.create(**kwargs)
            request_id = raw.headers.get("x-request-id")
            if stream:
                chunks = raw.parse()
                return self._read_stream(chunks, on_token, prompt_chars, request_id, started, model)
            return self._read_whole(raw.parse(), prompt_chars, request_id, started, model)
        except openai.OpenAIError as exc:
            raise from_sdk_error(exc, provider=self.provider) from exc

    def _read_stream(
        self,
        chunks: Any,
        on_token: Callable[[str], None] | None,
        prompt_chars: int,
        request_id: str | None,
        started: float,
        model: str,
    ) -> ModelResponse:
        assembler = StreamAssembler(on_token)
        deadline = started + self.timeout_s
        with chunks:
            for chunk in chunks:
                assembler.feed(chunk)
                # The HTTP timeout bounds each read; this bounds the whole reply.
                if time.monotonic() > deadline:
                    raise self._error("stream exceeded the request timeout", "timeout", request_id)
        if not assembler.complete:
            raise self._error("stream ended without a finish reason", "disconnect", request_id)
        return assembler.response(
            prompt_chars=prompt_chars,
            request_id=request_id,
            latency_s=time.monotonic() - started,
            requested=model,
        )

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
            usage_from(completion.usage)
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
