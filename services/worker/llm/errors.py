"""Typed model-call failures that say whether retrying (or falling back) can help."""

from __future__ import annotations

import email.utils
import http.client
import json
import math
import time
from collections.abc import Mapping
from typing import Any

from services.worker.llm.transport import ConnectFailed

# 408/409 are transient on OpenAI-compatible servers; 429 and 5xx are load or outages.
RETRYABLE_STATUSES = frozenset({408, 409, 429})
_CONTEXT_OVERFLOW_HINTS = (
    "context length",
    "context_length",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    # llama.cpp: "Requested tokens (5000) exceed context window of 4096"
    "exceed context window",
    "exceeds the context window",
    "exceed_context_size",
)
# A chat template that refused the conversation's roles (Gemma's and others').
_TEMPLATE_HINTS = (
    "roles must alternate",
    "chat template",
    "chat_template",
    "jinja",
    "system role not supported",
    "only user and assistant roles",
)
# A request form the server does not take: response_format, tool_choice, a parameter.
_UNSUPPORTED_HINTS = (
    "response_format",
    "json_schema",
    "tool_choice",
    "enable-auto-tool-choice",  # vLLM started without its tool parser
    "not supported",
    "does not support",  # Ollama: "... does not support tools"
    "unsupported",
    "not implemented",
    "unrecognized request argument",
    "unknown parameter",
    # llama-cpp-python answers HTTP 500 when its request model refuses a message
    # ("7 validation errors: ... Input should be 'tool'"): our request, not an outage.
    "validation error",
)
# Statuses whose message is read for a capability mismatch: request errors, and the
# 500/501 that llama-cpp-python answers for a json_schema or a template error. A 502,
# 503 or 504 is a gateway or an outage whatever it says.
_CLASSIFIED_STATUSES = frozenset({200, 400, 404, 413, 422, 500, 501})
# Request errors that fail on any server and every retry: the endpoint answered.
CAPABILITY_ERRORS = frozenset({"context_overflow", "template", "unsupported"})
# An error body that is not OpenAI-shaped JSON goes into the message, cut to this.
_BODY_IN_MESSAGE = 500
_STATUS_TYPES = {
    400: "bad_request",
    401: "auth",
    403: "permission",
    404: "not_found",
    408: "timeout",
    409: "conflict",
    422: "unprocessable",
    429: "rate_limit",
}


class ModelError(Exception):
    """A failed model call.

    ``retryable`` is True for rate limits, server errors, timeouts and dropped
    connections (the same request may succeed later or elsewhere) and False for
    request errors (bad parameters, auth, context overflow) that fail anywhere.
    Capability mismatches (``error_type`` ``template``: the chat template refused
    the roles; ``unsupported``: a response_format, tool_choice or parameter the
    server does not take; ``context_overflow``) are never retryable, whatever the
    status they came with: the server answered, so a breaker must not count them.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        status: int | None = None,
        error_type: str,
        request_id: str | None = None,
        retryable: bool,
        retry_after: float | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status = status
        self.error_type = error_type
        self.request_id = request_id
        self.retryable = retryable
        self.retry_after = retry_after
        self.attempts = attempts

    def __str__(self) -> str:
        status = f" {self.status}" if self.status is not None else ""
        return f"{self.provider}{status} {self.error_type}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "message": self.message,
            "provider": self.provider,
            "status": self.status,
            "error_type": self.error_type,
            "request_id": self.request_id,
            "retryable": self.retryable,
            "retry_after": self.retry_after,
            "attempts": self.attempts,
        }


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUSES or status >= 500


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = lowered.get(name)
        if value is None:
            continue
        seconds = _seconds(value, divisor, allow_date=name == "retry-after")
        if seconds is not None and math.isfinite(seconds):
            return max(0.0, seconds)
    return None


def _seconds(value: str, divisor: float, *, allow_date: bool) -> float | None:
    try:
        return float(value) / divisor
    except ValueError:
        pass
    if not allow_date:
        return None
    try:
        return email.utils.parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError):
        return None  # an unreadable header is ignored; backoff still applies


def from_status(
    status: int, headers: Mapping[str, str], body: bytes, *, provider: str
) -> ModelError:
    """The error for an HTTP error response (``headers`` with lower-cased names)."""
    message = _message_of(status, body)
    error_type = _STATUS_TYPES.get(status, "server_error" if status >= 500 else "request_error")
    retryable = is_retryable_status(status)
    mismatch = capability_mismatch(message) if status in _CLASSIFIED_STATUSES else None
    if mismatch is not None:
        error_type, retryable = mismatch, False
    return ModelError(
        message,
        provider=provider,
        status=status,
        error_type=error_type,
        request_id=headers.get("x-request-id"),
        retryable=retryable,
        retry_after=parse_retry_after(headers),
    )


def capability_mismatch(message: str) -> str | None:
    """``context_overflow``, ``template`` or ``unsupported`` when a server's error message
    says the request cannot work there, else None. The message is kept as the server
    wrote it (discovery reads "context window of N" from an overflow)."""
    lowered = message.lower()
    for error_type, hints in (
        ("context_overflow", _CONTEXT_OVERFLOW_HINTS),
        ("template", _TEMPLATE_HINTS),
        ("unsupported", _UNSUPPORTED_HINTS),
    ):
        if any(h in lowered for h in hints):
            return error_type
    return None


def _message_of(status: int, body: bytes) -> str:
    """``error.message`` of an OpenAI-style error body, else the body itself."""
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        inner = parsed.get("error", parsed)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    text = body.decode("utf-8", "replace").strip()
    return f"Error code: {status} - {text[:_BODY_IN_MESSAGE]}"


def from_transport_error(
    exc: OSError | http.client.HTTPException, *, provider: str, request_id: str | None = None
) -> ModelError:
    """The error for a failed exchange: a timeout, a connect that failed, or a connection
    that broke afterwards, while sending or reading the reply (a ``disconnect``)."""
    if isinstance(exc, TimeoutError):
        error_type, message = "timeout", f"request timed out: {exc}"
    elif isinstance(exc, ConnectFailed):
        error_type, message = "connection", f"connection failed: {exc}"
    else:
        error_type, message = "disconnect", f"connection dropped: {exc!r}"
    return ModelError(
        message, provider=provider, error_type=error_type, request_id=request_id, retryable=True
    )
