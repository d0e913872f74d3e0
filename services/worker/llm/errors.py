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
)
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
    if status in (400, 413, 422) and any(h in message.lower() for h in _CONTEXT_OVERFLOW_HINTS):
        error_type = "context_overflow"
    return ModelError(
        message,
        provider=provider,
        status=status,
        error_type=error_type,
        request_id=headers.get("x-request-id"),
        retryable=is_retryable_status(status),
        retry_after=parse_retry_after(headers),
    )


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
