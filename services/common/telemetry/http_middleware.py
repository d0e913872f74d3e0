"""A server span per HTTP request, in a trace the server starts (pure ASGI).

A caller's ``traceparent`` is untrusted: taken as the parent it would let one
user put spans into (and, through the job that records the trace id, read)
another user's trace. So every request starts a fresh trace, and a valid
incoming context becomes a span *link* — a caller can still find its request
from its own trace — never the parent.

Written as plain ASGI rather than with ``opentelemetry-instrumentation-fastapi``
to keep the dependency set small and to record Leaflab's own request metrics
in the same place. Route templates (``/v1/jobs/{job_id}``), not raw paths,
name the spans and label the metrics, so cardinality stays bounded.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from services.common.metrics.definitions import HTTP_REQUEST_DURATION, HTTP_REQUESTS
from services.common.telemetry.names import TRACER_HTTP
from services.common.telemetry.propagation import extract_context

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_EXCLUDED = frozenset({"/metrics", "/healthz", "/favicon.ico"})


def _route_template(scope: Scope) -> str | None:
    route = scope.get("route")
    path = getattr(route, "path", None)
    return str(path) if path else None


class TracingMiddleware:
    """``app.add_middleware(TracingMiddleware, service_name="leaflab-api")``.

    Adds an ``X-Trace-Id`` response header so a user can quote the trace of a
    failing request. An internal service (the library) passes ``trusted_token``:
    a request that presents it in ``X-Leaflab-Internal`` comes from another
    Leaflab service, whose trace context is continued (so a job's library
    searches are part of the job's trace); every other caller's stays a link.
    """

    def __init__(
        self,
        app: ASGIApp,
        service_name: str,
        excluded_paths: frozenset[str] = DEFAULT_EXCLUDED,
        trusted_token: str | None = None,
    ) -> None:
        self.app = app
        self.trusted_token = trusted_token
        self.service_name = service_name
        self.excluded_paths = excluded_paths
        self.tracer = trace.get_tracer(TRACER_HTTP)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in self.excluded_paths:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers") or []}
        method = str(scope.get("method", "GET"))
        status = {"code": 500}
        started = time.perf_counter()
        incoming = extract_context(headers)
        caller = trace.get_current_span(incoming).get_span_context()
        trusted = self._from_leaflab(headers)
        with self.tracer.start_as_current_span(
            method,
            # A new root, whatever an outside caller sent; a Leaflab service's own
            # call continues its trace.
            context=incoming if trusted else otel_context.Context(),
            links=[Link(caller)] if caller.is_valid and not trusted else None,
            kind=SpanKind.SERVER,
            attributes={
                "http.request.method": method,
                "url.path": str(scope.get("path", "")),
                "url.scheme": str(scope.get("scheme", "http")),
                "user_agent.original": headers.get("user-agent", ""),
            },
        ) as span:
            trace_id = format(span.get_span_context().trace_id, "032x").encode()

            async def send_with_status(message: Message) -> None:
                if message["type"] == "http.response.start":
                    status["code"] = int(message["status"])
                    message = dict(message)
                    message["headers"] = [*message.get("headers", []), (b"x-trace-id", trace_id)]
                await send(message)

            try:
                await self.app(scope, receive, send_with_status)
            finally:
                self._finish(span, scope, method, status["code"], started)

    def _from_leaflab(self, headers: dict[str, str]) -> bool:
        presented = headers.get("x-leaflab-internal")
        if not self.trusted_token or presented is None:
            return False
        return hmac.compare_digest(presented.encode(), self.trusted_token.encode())

    def _finish(
        self, span: trace.Span, scope: Scope, method: str, code: int, started: float
    ) -> None:
        route = _route_template(scope)
        span.update_name(f"{method} {route}" if route else method)
        if route:
            span.set_attribute("http.route", route)
        span.set_attribute("http.response.status_code", code)
        if code >= 500:
            span.set_status(Status(StatusCode.ERROR, f"HTTP {code}"))
        label = route or "unmatched"
        HTTP_REQUESTS.labels(self.service_name, method, label, str(code)).inc()
        HTTP_REQUEST_DURATION.labels(self.service_name, method, label).observe(
            time.perf_counter() - started
        )
