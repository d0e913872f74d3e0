"""Serving the metrics: an HTTP server for Celery workers, a route for FastAPI apps."""

from __future__ import annotations

import threading
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest, start_http_server
from prometheus_client.registry import CollectorRegistry
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response

from services.common.metrics.definitions import METRICS_REGISTRY

_servers: dict[int, Any] = {}
_lock = threading.Lock()


def start_metrics_server(
    port: int, *, addr: str = "0.0.0.0", registry: CollectorRegistry = METRICS_REGISTRY
) -> int:
    """Serve ``/metrics`` on ``port`` from a daemon thread (Celery workers).

    Idempotent per port; ``port=0`` picks a free one. Returns the bound port.
    """
    with _lock:
        if port and port in _servers:
            return port
        server, _thread = start_http_server(port, addr=addr, registry=registry)
        bound = int(server.server_address[1])
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
    app: Starlette, *, path: str = "/metrics", registry: CollectorRegistry = METRICS_REGISTRY
) -> None:
    """Add ``GET /metrics`` to a FastAPI/Starlette app.

    The endpoint is a plain function so Starlette runs it in its thread pool:
    the scrape-time collectors query Postgres and Redis with blocking clients.
    """

    def endpoint(_: Request) -> Response:
        return metrics_response(registry)

    app.add_route(path, endpoint, methods=["GET"], include_in_schema=False)
