"""The library HTTP service (internal), run with uvicorn:
``uvicorn --factory services.library.app:create_app --port 8200``.

Callers are the API (which authenticates users) and workers; they present the
internal token and name the acting user in X-Leaflab-User (see access.py).
The process also consumes the `library` queue, sweeps stuck ingestions, traces
its requests into the caller's trace and serves Prometheus `/metrics`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from services.common.http_errors import install_error_handlers
from services.common.metrics.exposition import mount_metrics
from services.common.telemetry import (
    TracingMiddleware,
    instrument_celery,
    setup_tracing,
    shutdown_tracing,
)
from services.common.telemetry.names import SERVICE_LIBRARY
from services.library.routes.claims import router as claims_router
from services.library.routes.documents import router as documents_router
from services.library.routes.health import router as health_router
from services.library.routes.search import router as search_router
from services.library.runtime import build_runtime
from services.library.settings import LibrarySettings, get_library_settings
from services.library.sweeper import IngestSweeper
from services.library.tasks import EmbeddedConsumer, register_ingest_task


def create_app(settings: LibrarySettings | None = None) -> FastAPI:
    """App factory; the lifespan opens the store and models, starts the consumer and sweeper."""
    settings = settings or get_library_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        setup_tracing(SERVICE_LIBRARY, settings)
        runtime = await asyncio.to_thread(build_runtime, settings)
        app.state.runtime = runtime
        instrument_celery(runtime.celery)
        register_ingest_task(runtime.celery, lambda: runtime)
        consumer = None
        if settings.embedded_consumer:
            consumer = EmbeddedConsumer(runtime.celery, concurrency=settings.consumer_concurrency)
            consumer.start()
        sweeper = IngestSweeper(
            runtime.session_factory,
            runtime.celery,
            interval_s=settings.ingest_sweep_interval_s,
            requeue_after_s=settings.ingest_requeue_after_s,
            max_attempts=settings.ingest_max_attempts,
        )
        sweeper.start()
        try:
            yield
        finally:
            sweeper.stop()
            if consumer is not None:
                await asyncio.to_thread(consumer.stop)
            runtime.close()
            shutdown_tracing()

    app = FastAPI(title="Leaflab library", lifespan=lifespan)
    install_error_handlers(app)
    for router in (health_router, documents_router, search_router, claims_router):
        app.include_router(router)
    mount_metrics(app)
    # Only callers holding the internal token (the API, the worker) continue
    # their trace here; any other caller's traceparent stays a link.
    app.add_middleware(
        TracingMiddleware, service_name=SERVICE_LIBRARY, trusted_token=settings.internal_token
    )
    return app
