"""Typed model-call failures that say whether retrying (or falling back) can help."""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Mapping
from typing import Any

import openai

# 408/409 are transient on OpenAI-compatible servers; 429 and 5xx are load or outages.
RETRYABLE_STATUSES = frozenset({408, 409, 429})
_CONTEXT_OVERFLOW_HINTS = (
    "context length",
    "context_length",
    "maximum context",
    "too many tokens",
    "prompt is too long",
)
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


def _status_error(exc: openai.APIStatusError, provider: str) -> ModelError:
    status = exc.status_code
    message = _message_of(exc)
    error_type = _STATUS_TYPES.get(status, "server_error" if status >= 500 else "request_error")
    if status in (400, 413, 422) and any(h in message.lower() for h in _CONTEXT_OVERFLOW_HINTS):
        error_type = "context_overflow"
    return ModelError(
        message,
        provider=provider,
        status=status,
        error_type=error_type,
        request_id=exc.request_id,
        retryable=is_retryable_status(status),
        retry_after=parse_retry_after(exc.response.headers),
    )


def _message_of(exc: openai.APIError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    return exc.message


def from_sdk_error(exc: openai.OpenAIError, *, provider: str) -> ModelError:
    """Translate an ``openai`` SDK exception into a :class:`ModelError`."""
    if isinstance(exc, openai.APIStatusError):
        return _status_error(exc, provider)
    if isinstance(exc, openai.APITimeoutError):
        return ModelError(
            "request timed out", provider=provider, error_type="timeout", retryable=True
        )
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        # A peer that drops the connection mid-body is a disconnect, not a refused connect.
        dropped = type(cause).__name__ in ("RemoteProtocolError", "ReadError")
        return ModelError(
            f"{'connection dropped' if dropped else 'connection failed'}: {cause or exc}",
            provider=provider,
            error_type="disconnect" if dropped else "connection",
            retryable=True,
        )
    if isinstance(exc, openai.APIError):
        # An error event inside a stream (vLLM sends these on engine failures).
        return ModelError(
            _message_of(exc), provider=provider, error_type="stream_error", retryable=True
        )
    return ModelError(str(exc), provider=provider, error_type="client_error", retryable=False)
