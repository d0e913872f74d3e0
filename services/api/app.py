"""The API service: `uvicorn services.api.app:create_app --factory`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from services.api.admin.router import router as admin_router
from services.api.approvals.router import router as approvals_router
from services.api.errors import error_responses
from services.api.events.router import router as events_router
from services.api.health.router import router as health_router
from services.api.invites.router import router as invites_router
from services.api.jobs.artifacts import router as artifacts_router
from services.api.jobs.router import router as jobs_router
from services.api.library.edit import router as library_edit_router
from services.api.library.events import router as library_events_router
from services.api.library.imports import IMPORT_PATH
from services.api.library.imports import router as library_imports_router
from services.api.library.pdf import router as library_pdf_router
from services.api.library.router import UPLOAD_PATH
from services.api.library.router import router as library_router
from services.api.limits import BodySizeLimit, RouteKey
from services.api.log_privacy import install_log_filters
from services.api.memory.router import router as memory_router
from services.api.metrics_access import mount_api_metrics
from services.api.notifications.router import router as notifications_router
from services.api.outages import install_outage_handlers
from services.api.schedules.loop import ScheduleLoop
from services.api.schedules.router import router as schedules_router
from services.api.sessions.commands import router as session_commands_router
from services.api.sessions.router import router as sessions_router
from services.api.settings import ApiSettings
from services.api.state import AppState
from services.api.surveys.router import router as surveys_router
from services.api.traces.router import router as traces_router
from services.api.web.router import mount_web
from services.api.webhooks.router import router as webhooks_router
from services.common.celery_app import build_celery
from services.common.db import build_engine, build_sessionmaker
from services.common.http_errors import install_error_handlers
from services.common.metrics import register_platform_collectors
from services.common.migrate import ensure_migrated
from services.common.redis_client import build_async_redis, build_redis
from services.common.telemetry import (
    TracingMiddleware,
    instrument_celery,
    setup_tracing,
    shutdown_tracing,
)
from services.common.telemetry.names import SERVICE_API

# Routes whose bodies may exceed ``max_request_bytes`` (exact method and path).
# The library upload streams to disk under its own cap (LEAFLAB_MAX_UPLOAD_BYTES).
# Bibliography imports are read under LEAFLAB_MAX_IMPORT_BYTES.
BODY_CAPS: dict[RouteKey, int | None] = {("POST", UPLOAD_PATH): None, ("POST", IMPORT_PATH): None}


def build_state(settings: ApiSettings) -> AppState:
    database_url = settings.require_database_url()
    engine = build_engine(database_url, pool_size=10)
    ensure_migrated(engine, database_url)
    redis_url = settings.require_redis_url()
    return AppState(
        settings=settings,
        engine=engine,
        session_factory=build_sessionmaker(engine),
        redis=build_redis(redis_url, socket_timeout_s=settings.redis_socket_timeout_s),
        aredis=build_async_redis(redis_url, socket_timeout_s=settings.redis_socket_timeout_s),
        celery=build_celery(settings),
    )


def create_app(settings: ApiSettings | None = None) -> FastAPI:
    cfg = settings or ApiSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        setup_tracing(SERVICE_API, cfg)
        install_log_filters()
        state = build_state(cfg)
        instrument_celery(state.celery)
        register_platform_collectors(engine=state.engine, redis_client=state.redis)
        app.state.leaflab = state
        # Due schedule slots become jobs (services/api/schedules/firing.py).
        schedules = ScheduleLoop(state.session_factory, settings=cfg, celery=state.celery)
        schedules.start()
        try:
            yield
        finally:
            schedules.stop()
            shutdown_tracing()
            await state.aredis.aclose()
            state.redis.close()
            state.engine.dispose()

    app = FastAPI(
        title="Leaflab",
        version="0.1.0",
        lifespan=lifespan,
        # FastAPI's own request spans would continue the caller's traceparent
        # (a way into another user's trace) and its logs carry request values:
        # TracingMiddleware makes the request span; FastAPI adds only the
        # dependency/endpoint spans beneath it.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    install_error_handlers(app)
    install_outage_handlers(app)
    routers = (
        health_router,
        admin_router,
        invites_router,
        webhooks_router,
        schedules_router,
        notifications_router,
        sessions_router,
        jobs_router,
        artifacts_router,
        approvals_router,
        events_router,
        traces_router,
        library_router,
        library_imports_router,
        library_edit_router,
        surveys_router,
        library_events_router,
        library_pdf_router,
        session_commands_router,
        memory_router,
    )
    for router in routers:
        # Every authenticated route may answer 429 (the per-key rate limit).
        limited = error_responses(429) if router is not health_router else None
        app.include_router(router, responses=limited)
    mount_api_metrics(app)
    mount_web(app)
    app.add_middleware(BodySizeLimit, max_bytes=cfg.max_request_bytes, caps=BODY_CAPS)
    # Outermost, so the server span covers everything including size refusals.
    app.add_middleware(TracingMiddleware, service_name=SERVICE_API)
    return app
