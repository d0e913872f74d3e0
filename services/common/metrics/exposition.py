"""Serving the metrics: an HTTP server for Celery workers, a route for FastAPI apps.

Both can demand a bearer token (``LEAFLAB_METRICS_TOKEN``) for deployments
that expose the metrics port beyond a trusted network. A worker whose metrics
server cannot start (port taken, no permission) logs it and runs on: metrics
are never a reason to stop serving jobs.
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest, make_wsgi_app
from prometheus_client.registry import CollectorRegistry
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from services.common.metrics.definitions import METRICS_REGISTRY, METRICS_SERVER_FAILURES

log = logging.getLogger(__name__)

_servers: dict[int, WSGIServer] = {}
_lock = threading.Lock()
_UNAUTHORIZED = json.dumps(
    {"error": {"code": "unauthorized", "message": "metrics need Authorization: Bearer TOKEN"}}
).encode()


def configured_token() -> str | None:
    """``LEAFLAB_METRICS_TOKEN`` (None or empty: metrics are open)."""
    from services.common.telemetry.settings import TelemetrySettings

    return TelemetrySettings().metrics_token or None


def configured_bind() -> str:
    """``LEAFLAB_METRICS_BIND`` (default 127.0.0.1: a worker's metrics are not for every
    host that can reach this one, nor for sandboxes)."""
    from services.common.telemetry.settings import TelemetrySettings

    return TelemetrySettings().metrics_bind


def token_matches(header: str | None, token: str) -> bool:
    """Whether an Authorization header carries ``Bearer <token>`` (constant-time compare)."""
    scheme, _, presented = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(presented.strip(), token)


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        return  # one line per scrape would drown the worker's log


def _guarded(app: Callable[..., Iterable[bytes]], token: str | None) -> Callable[..., Any]:
    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if token and not token_matches(environ.get("HTTP_AUTHORIZATION"), token):
            start_response(
                "401 Unauthorized",
                [("Content-Type", "application/json"), ("WWW-Authenticate", "Bearer")],
            )
            return [_UNAUTHORIZED]
        return app(environ, start_response)

    return guarded


_UNSET: Any = object()


def start_metrics_server(
    port: int,
    *,
    addr: str | None = None,
    registry: CollectorRegistry = METRICS_REGISTRY,
    token: str | None = _UNSET,
) -> int | None:
    """Serve ``/metrics`` on ``port`` from a daemon thread (Celery workers).

    Idempotent per port; ``port=0`` picks a free one. Returns the bound port,
    or None when the server could not start: that is logged and counted
    (``leaflab_metrics_server_failures_total``), never raised, so a taken port
    cannot stop a worker. ``token`` defaults to ``LEAFLAB_METRICS_TOKEN``, ``addr`` to
    ``LEAFLAB_METRICS_BIND``.
    """
    if token is _UNSET:
        token = configured_token()
    if addr is None:
        addr = configured_bind()
    with _lock:
        if port and port in _servers:
            return port
        try:
            server = make_server(
                addr,
                port,
                _guarded(make_wsgi_app(registry), token),
                _ThreadingServer,
                handler_class=_QuietHandler,
            )
        except OSError as exc:
            METRICS_SERVER_FAILURES.inc()
            log.error(
                "metrics server could not listen on %s:%s (%s); this process runs on "
                "without /metrics: give each worker process its own LEAFLAB_METRICS_PORT",
                addr,
                port,
                exc,
            )
            return None
        bound = int(server.server_address[1])
        threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
        _servers[bound] = server
        return bound


def stop_metrics_server(port: int) -> None:
    """Stop a server started by :func:`start_metrics_server` (tests, clean shutdown)."""
    with _lock:
        server = _servers.pop(port, None)
    if server is not None:
        server.shutdown()
        server.server_close()


def metrics_response(registry: CollectorRegistry = METRICS_REGISTRY) -> Response:
    """The Prometheus text exposition of ``registry``."""
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


def mount_metrics(
    app: Starlette,
    *,
    path: str = "/metrics",
    registry: CollectorRegistry = METRICS_REGISTRY,
    token: str | None = _UNSET,
) -> None:
    """Add ``GET /metrics`` to a FastAPI/Starlette app (``token``: as for the server).

    The endpoint is a plain function so Starlette runs it in its thread pool:
    the scrape-time collectors query Postgres and Redis with blocking clients.
    """
    required = configured_token() if token is _UNSET else token

    def endpoint(request: Request) -> Response:
        if required and not token_matches(request.headers.get("authorization"), required):
            return JSONResponse(
                json.loads(_UNAUTHORIZED), status_code=401, headers={"WWW-Authenticate": "Bearer"}
            )
        return metrics_response(registry)

    app.add_route(path, endpoint, methods=["GET"], include_in_schema=False)
