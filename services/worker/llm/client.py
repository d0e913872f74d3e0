"""``ModelClient``: chat completions against any OpenAI-compatible endpoint.

Requests go out over ``transport`` (pooled keep-alive ``http.client``
connections), not the ``openai`` SDK: the SDK's request building and client
machinery were about a fifth of a worker's CPU per agent step (issue 14). Every
retry is ours: counted on the response (``attempts``), reported to ``on_retry``
and logged.

Guarantees:

- Every request is shaped by the endpoint's :class:`Capabilities` (``shaping``).
- A streamed reply is bounded by silence, not length (``deadline``): a stall is a
  retryable ``timeout``; a stream that was making progress when its total deadline
  came is kept as a partial reply (finish_reason ``deadline``), never regenerated.
- A stream that ends without a finish reason (llama-cpp-python's empty 200 for any
  error inside a stream) is resent once without streaming, and what that answers —
  the reply, or the server's real error, classified — is the result; later retries
  of the call do not stream.
- A retry after an attempt that streamed text is announced to the per-call
  ``on_retry`` listener first, so a watcher can drop that text.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from services.worker.llm import json_protocol
from services.worker.llm.backoff import RetryPolicy
from services.worker.llm.capabilities import PERMISSIVE, Capabilities
from services.worker.llm.completion import UnreadableCompletion, prompt_chars, read_completion
from services.worker.llm.deadline import StreamDeadline, TimeoutPolicy
from services.worker.llm.errors import (
    ModelError,
    capability_mismatch,
    from_status,
    from_transport_error,
)
from services.worker.llm.proxy import route_for
from services.worker.llm.settings import LlmSettings
from services.worker.llm.shaping import ToolProtocol, shape_request
from services.worker.llm.stream import StreamAssembler, StreamErrorEvent, iter_sse_data
from services.worker.llm.transport import Reply, Transport
from services.worker.llm.types import ModelResponse, RetryListener, RetryNotice
from services.worker.llm.wire import TokenCounter, WireRequest

log = logging.getLogger(__name__)

# What the HTTP exchange raises: timeouts, failed connects, dropped connections.
TRANSPORT_ERRORS = (OSError, http.client.HTTPException)

CONVERSATION_HEADER = "X-Leaflab-Conversation"
USER_AGENT = "leaflab-worker"
RetryHook = Callable[[ModelError, float], None]
__all__ = ["ModelClient", "ToolProtocol", "client_from_settings"]


class _BrokenStream(Exception):
    """The stream ended (cleanly) without a finish reason."""

    def __init__(self, *, streamed: bool) -> None:
        super().__init__("stream ended without a finish reason")
        self.streamed = streamed


class ModelClient:
    """A thread-safe client for one endpoint; share one instance across worker threads.

    ``timeout_s`` bounds the connect and the wait for the first token;
    ``idle_timeout_s`` the silence between two chunks of a streamed reply;
    ``total_timeout_s`` a whole call (see ``deadline``). ``capabilities`` is read
    for every call (a getter, so discovery can refresh it); None is permissive.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout_s: float = 120.0,
        idle_timeout_s: float = 60.0,
        total_timeout_s: float = 1800.0,
        timeouts: TimeoutPolicy | None = None,
        max_retries: int = 2,
        provider: str | None = None,
        retry_policy: RetryPolicy | None = None,
        on_retry: RetryHook | None = None,
        capabilities: Callable[[], Capabilities] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url
        self.provider = provider or urlsplit(base_url).netloc or base_url
        self.timeouts = timeouts or TimeoutPolicy(
            first_token_s=timeout_s, idle_s=idle_timeout_s, total_s=total_timeout_s
        )
        self.timeout_s = self.timeouts.first_token_s
        self.policy = retry_policy or RetryPolicy(max_retries=max_retries)
        self._on_retry = on_retry
        self._capabilities = capabilities
        self._sleep = sleep
        route = route_for(base_url)
        self._transport = Transport(route, timeout_s=self.timeouts.first_token_s)
        self._target = f"{route.target_prefix}/chat/completions"
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"

    def close(self) -> None:
        """Close the pooled connections (a later call opens a connection of its own)."""
        self._transport.close()

    def capabilities(self) -> Capabilities:
        """What this endpoint accepts now (permissive when nothing was discovered)."""
        if self._capabilities is None:
            return PERMISSIVE
        try:
            return self._capabilities()
        except Exception:  # a lost cache must not fail the call: the defaults still work
            log.exception("reading the capabilities of %s failed; using defaults", self.provider)
            return PERMISSIVE

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
        on_retry: RetryListener | None = None,
    ) -> ModelResponse:
        """One chat completion, retried on retryable failures; raises :class:`ModelError`.

        After a retry, ``on_token`` sees the new attempt's tokens from the start;
        ``on_retry`` hears first when the failed attempt had streamed text. A reply
        that was not streamed reaches ``on_token`` once, whole. With
        ``tool_protocol="json"`` (or an endpoint whose tool_mode is json) the tools
        are described in the prompt and tool requests parsed from the reply's text.
        """
        shaped = shape_request(
            messages=messages,
            tools=tools,
            response_format=response_format,
            stream=stream,
            capabilities=self.capabilities(),
            tool_protocol=tool_protocol,
        )
        headers = self._headers
        if conversation_key:
            headers = {**headers, CONVERSATION_HEADER: conversation_key}
        request = WireRequest(shaped, model, max_tokens, headers, on_token, on_retry)
        attempt = 0
        while True:
            attempt += 1
            tokens = TokenCounter(on_token)
            try:
                response = self._attempt(request, tokens, attempt)
                break
            except ModelError as err:
                err.attempts = attempt
                if not err.retryable or attempt > self.policy.max_retries:
                    raise
                self._wait_before_retry(request, err, attempt, streamed=tokens.count > 0)
        if attempt > 1:
            response = replace(response, attempts=attempt)
        return json_protocol.apply_to_response(response) if shaped.json_tools else response

    def _wait_before_retry(
        self, request: WireRequest, err: ModelError, attempt: int, *, streamed: bool
    ) -> None:
        wait = self.policy.delay_s(attempt, err.retry_after)
        log.warning(
            "model call failed (attempt %d/%d), retrying in %.2fs: %s",
            attempt,
            self.policy.max_retries + 1,
            wait,
            err,
        )
        if streamed and request.on_retry is not None:
            request.on_retry(RetryNotice(attempt, str(err), wait))
        if self._on_retry is not None:
            self._on_retry(err, wait)
        self._sleep(wait)

    def _attempt(self, request: WireRequest, tokens: TokenCounter, attempt: int) -> ModelResponse:
        if not request.stream:
            return self._send(request, tokens, stream=False)
        try:
            return self._send(request, tokens, stream=True)
        except _BrokenStream as broken:
            # llama-cpp-python answers every error inside a stream with an empty 200:
            # only the same request without streaming says what went wrong.
            request.streaming_broken = True
            log.warning("%s: %s; resending without streaming", self.provider, broken)
            if broken.streamed and request.on_retry is not None:
                request.on_retry(RetryNotice(attempt, str(broken), 0.0))
            response = self._send(request, TokenCounter(request.on_token), stream=False)
            return replace(response, extra={**response.extra, "resent_without_stream": True})

    def _send(self, request: WireRequest, tokens: TokenCounter, *, stream: bool) -> ModelResponse:
        started = time.monotonic()
        request_id = None
        timeouts = self.timeouts
        wait = timeouts.first_token_s if stream else timeouts.whole_reply_s(request.max_tokens)
        payload = request.payload(stream)
        try:
            with self._transport.post(self._target, payload, request.headers, wait_s=wait) as reply:
                request_id = reply.header("x-request-id")
                if not 200 <= reply.status < 300:
                    raise from_status(
                        reply.status, reply.headers(), reply.read(), provider=self.provider
                    )
                if stream:
                    return self._stream(reply, request, tokens, started, request_id)
                whole = reply.read()
        except TRANSPORT_ERRORS as exc:
            raise from_transport_error(exc, provider=self.provider, request_id=request_id) from exc
        try:
            response = read_completion(
                whole,
                messages=request.shaped.messages,
                request_id=request_id,
                latency_s=time.monotonic() - started,
                model=request.model,
            )
        except UnreadableCompletion as exc:
            raise self._error(str(exc), "bad_response", request_id) from exc
        if response.content and tokens.on_token is not None:
            tokens(response.content)  # watchers see a reply that could not stream, once
        return response

    def _stream(
        self,
        reply: Reply,
        request: WireRequest,
        tokens: TokenCounter,
        started: float,
        request_id: str | None,
    ) -> ModelResponse:
        assembler = StreamAssembler(tokens)
        deadline = StreamDeadline(self.timeouts, max_tokens=request.max_tokens, started=started)
        cut = False
        try:
            cut = _read_events(reply, assembler, deadline)
        except json.JSONDecodeError as exc:
            message = f"unreadable stream chunk: {exc}"
            raise self._error(message, "bad_response", request_id) from exc
        except StreamErrorEvent as exc:
            mismatch = capability_mismatch(str(exc))
            error_type = mismatch or "stream_error"
            raise self._error(str(exc), error_type, request_id, mismatch is None) from exc
        except TimeoutError as exc:
            # A read bounded by the deadline wakes at it, give or take the timer's grain.
            if not (deadline.progressing and deadline.passed(time.monotonic() + 0.01)):
                raise self._stalled(deadline, request_id) from exc
            cut = True
        if cut:
            log.warning(
                "%s: stream reached its deadline after %d tokens (%.0fs); partial reply kept",
                self.provider,
                deadline.tokens,
                time.monotonic() - started,
            )
        elif not assembler.complete:
            raise _BrokenStream(streamed=assembler.started)
        return assembler.response(
            # Only an endpoint that reports no usage needs the prompt's size (an estimate).
            prompt_chars=prompt_chars(request.shaped.messages) if assembler.usage is None else 0,
            request_id=request_id,
            latency_s=time.monotonic() - started,
            requested=request.model,
            finish_reason="deadline" if cut else None,
        )

    def _stalled(self, deadline: StreamDeadline, request_id: str | None) -> ModelError:
        if deadline.progressing:
            message = f"stream stalled: no chunk for {self.timeouts.idle_s:g}s"
        elif deadline.passed(time.monotonic()):
            message = f"no output within the total timeout ({self.timeouts.total_s:g}s)"
        else:
            message = f"no first token within {self.timeouts.first_token_s:g}s"
        return self._error(message, "timeout", request_id)

    def _error(
        self, message: str, error_type: str, request_id: str | None, retryable: bool = True
    ) -> ModelError:
        return ModelError(
            message,
            provider=self.provider,
            error_type=error_type,
            request_id=request_id,
            retryable=retryable,
        )


def _read_events(reply: Reply, assembler: StreamAssembler, deadline: StreamDeadline) -> bool:
    """Feed the stream's events to ``assembler``; True when its deadline cut it short.

    Raises ``TimeoutError`` when a read waits longer than the silence allowed (or
    than what is left to the deadline)."""
    timeout = deadline.read_timeout(time.monotonic())
    reply.set_read_timeout(timeout)
    events: Iterator[str] = iter_sse_data(reply.lines())
    for data in events:
        if data.startswith("[DONE]"):
            break
        now = time.monotonic()
        if assembler.feed(json.loads(data)):
            deadline.token(now)
        if deadline.progressing and deadline.passed(now):
            return True
        wanted = deadline.read_timeout(now)
        # A socket's timeout is a syscall to change: only when it moves by a tenth or more.
        if wanted > timeout or wanted < timeout * 0.9:
            reply.set_read_timeout(wanted)
            timeout = wanted
    # Read the (normally empty) rest of the body: only a connection whose reply was read
    # to its end goes back to the pool, else every call would reconnect (a TLS handshake
    # per call on remote endpoints). The reply is complete, so a failure here changes
    # nothing.
    with contextlib.suppress(*TRANSPORT_ERRORS):
        for _ in events:
            pass
    return False


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
        idle_timeout_s=settings.llm_idle_timeout_s,
        total_timeout_s=settings.llm_total_timeout_s,
        retry_policy=policy,
        **kwargs,
    )
