"""W3C trace-context carriers: how a trace crosses HTTP, Celery and the job row.

A carrier is a small ``dict[str, str]`` (``traceparent``, ``tracestate``,
``baggage``). The API stores one on ``Job.trace_context`` when it creates a
job, so every later time slice of that job, even one re-enqueued by the
sweeper with no headers at all, continues the same trace.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import httpx
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.context import Context


def inject_carrier(ctx: Context | None = None) -> dict[str, str]:
    """The current (or given) trace context as W3C headers; ``{}`` without an active span."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=ctx)
    return carrier


def extract_context(carrier: Mapping[str, str] | None) -> Context:
    """The context a carrier describes; an empty carrier yields a fresh root context."""
    clean = {str(k).lower(): str(v) for k, v in (carrier or {}).items() if v is not None}
    return propagate.extract(clean)


def current_trace_id_hex() -> str | None:
    """The active trace id as 32 hex characters, or ``None`` outside a recorded span."""
    span_context = trace.get_current_span().get_span_context()
    if not span_context.is_valid:
        return None
    return format(span_context.trace_id, "032x")


def current_span_id_hex() -> str | None:
    """The active span id as 16 hex characters, or ``None``."""
    span_context = trace.get_current_span().get_span_context()
    if not span_context.is_valid:
        return None
    return format(span_context.span_id, "016x")


@contextmanager
def attached_context(carrier: Mapping[str, str] | None) -> Iterator[Context]:
    """Make the carrier's context current for a block (e.g. a job's stored context).

    Spans started inside become children of the span the carrier names.
    """
    ctx = extract_context(carrier)
    token = otel_context.attach(ctx)
    try:
        yield ctx
    finally:
        otel_context.detach(token)


def inject_httpx_request(request: httpx.Request) -> None:
    """httpx event hook: ``httpx.Client(event_hooks={"request": [inject_httpx_request]})``.

    Carries the trace to HTTP services (the library) that run
    :class:`~services.common.telemetry.http_middleware.TracingMiddleware`.
    """
    for key, value in inject_carrier().items():
        request.headers[key] = value


async def ainject_httpx_request(request: httpx.Request) -> None:
    """The same hook for ``httpx.AsyncClient``."""
    inject_httpx_request(request)
