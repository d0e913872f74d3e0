"""The agent worker's Celery app.

Run: `celery -A services.worker.app:app worker -Q agent --pool threads -c 64`.

Clients (engine, Redis, model client, tool ports) are built once per worker
process, on first use (the ``worker_ready`` signal or the first task), never
at import time.
"""

from __future__ import annotations

import logging
import threading
import uuid
from typing import Any

from celery import signals
from sqlalchemy.orm import Session, sessionmaker

from services.common.celery_app import build_celery
from services.common.contracts.tasks import ADVANCE_TASK
from services.common.db import build_engine, build_sessionmaker
from services.common.events import EventPublisher
from services.common.metrics import start_metrics_server
from services.common.migrate import ensure_migrated
from services.common.redis_client import build_redis
from services.common.telemetry import (
    TelemetrySettings,
    instrument_celery,
    setup_tracing,
    shutdown_tracing,
)
from services.common.telemetry.names import SERVICE_WORKER
from services.worker.llm.client import client_from_settings
from services.worker.llm.discovery import CapabilityBook
from services.worker.llm.pricing import PriceBook
from services.worker.llm.routing.setup import discovered_router
from services.worker.notify.dispatcher import EmailDispatcher, WebhookDispatcher
from services.worker.notify.settings import EmailSettings, WebhookSettings
from services.worker.runtime.runners import job_runners
from services.worker.settings import WorkerSettings
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.dispatch import advance
from services.worker.spine.drain import start_draining
from services.worker.spine.lease import LeaseKeeper
from services.worker.spine.model_probe import ModelWaitWatcher
from services.worker.spine.sweeper import Sweeper
from services.worker.tools.library_intake import CeleryIngestQueue
from services.worker.tools.mcp import McpSettings
from services.worker.tools.ports import LibraryEndpoint
from services.worker.tools.sandbox_client import CelerySandbox
from services.worker.tools.web.settings import ResearchToolSettings
from services.worker.toolset import build_registry

log = logging.getLogger(__name__)
# Job kind -> runner: what the spine's dispatch runs a slice with.
_runners = job_runners()

settings = WorkerSettings()
# A malformed LEAFLAB_MCP_SERVERS stops the worker here, naming the entry and field.
mcp_settings = McpSettings()
mcp_settings.servers()
app = build_celery(settings)
# The default when the command line gives no -c (as under `leaflab up`).
app.conf.worker_concurrency = settings.worker_concurrency
# No emulated acks on the agent queue: with them, kombu writes every delivered
# message to an "unacked" hash and index (one MULTI/EXEC pipeline) and takes it out
# again at the ack (another), only to redeliver it after the visibility timeout if
# the worker dies. Advance messages are acked as they start anyway (early ack), and
# a job whose message is lost is sent again by the sweeper (``requeue_after_s``),
# long before a visibility timeout; a duplicate is refused by the lease. Measured
# (py-spy): ≈ a fifth of the agent worker's samples were in those two pipelines.
# A warm shutdown still gives back the messages it had taken but not started
# (kombu restores its in-memory unacked ones; tests/worker/test_graceful_shutdown.py).
app.conf.broker_transport_options = {
    **(app.conf.broker_transport_options or {}),
    "ack_emulation": False,
}
instrument_celery(app)

_deps: RuntimeDeps | None = None
_deps_lock = threading.Lock()
_sweeper: Sweeper | None = None
_capabilities: CapabilityBook | None = None
_model_wait: ModelWaitWatcher | None = None
_webhooks: WebhookDispatcher | None = None
_email: EmailDispatcher | None = None


def _mcp_catalog(factory: sessionmaker[Session]) -> Any:
    """The MCP servers in force, followed as an admin changes them (the SDK loads only
    once a server is in force)."""
    from services.worker.tools.mcp.live import LiveCatalog

    return LiveCatalog(mcp_settings, guard=ResearchToolSettings().net_guard(), factory=factory)


def build_deps(cfg: WorkerSettings) -> RuntimeDeps:
    setup_tracing(SERVICE_WORKER, cfg)
    metrics_port = TelemetrySettings().metrics_port
    if metrics_port:
        start_metrics_server(metrics_port)
    database_url = cfg.require_database_url()
    engine = build_engine(database_url, pool_size=cfg.db_pool_size, generic_plans=True)
    ensure_migrated(engine, database_url)
    factory = build_sessionmaker(engine)
    client = build_redis(cfg.require_redis_url())
    # Each endpoint's capabilities: from Redis, or discovered now (bounded per endpoint;
    # an unreachable one starts on the configured defaults and is retried later).
    global _capabilities
    router, _capabilities = discovered_router(cfg, redis=client)
    return RuntimeDeps(
        settings=cfg,
        factory=factory,
        writer=engine.execution_options(isolation_level="AUTOCOMMIT"),
        model=client_from_settings(cfg),
        prices=PriceBook.from_settings(cfg),
        registry=build_registry(ingest=CeleryIngestQueue(app)),
        publisher=EventPublisher(client),
        celery=app,
        keeper=LeaseKeeper(factory, ttl_s=cfg.lease_ttl_s),
        sandbox=CelerySandbox(app, queue=cfg.sandbox_queue),
        library=LibraryEndpoint(url=cfg.library_url, internal_token=cfg.internal_token),
        router=router,
        mcp=_mcp_catalog(factory),
    )


def get_deps() -> RuntimeDeps:
    global _deps
    with _deps_lock:
        if _deps is None:
            _deps = build_deps(settings)
        return _deps


@signals.worker_ready.connect
def _start_sweeper(**_: Any) -> None:
    global _sweeper, _model_wait, _webhooks, _email
    deps = get_deps()
    _sweeper = Sweeper(
        deps.factory,
        app,
        build_redis(settings.require_redis_url()),
        interval_s=settings.sweep_interval_s,
        requeue_after_s=settings.requeue_after_s,
        per_user_cap=settings.max_running_jobs_per_user,
    )
    _sweeper.start()
    # Jobs parked while their model endpoint is down resume when it answers again.
    _model_wait = ModelWaitWatcher(
        deps.factory,
        app,
        build_redis(settings.require_redis_url()),
        interval_s=settings.model_probe_interval_s,
        timeout_s=settings.model_probe_timeout_s,
        outage_max_s=settings.model_outage_max_s,
    )
    _model_wait.start()
    # Signed webhooks from the jobs' outbox (services/worker/notify).
    _webhooks = WebhookDispatcher(deps.factory, WebhookSettings())
    _webhooks.start()
    # E-mail from the same jobs' outbox (off without LEAFLAB_SMTP_HOST).
    _email = EmailDispatcher(deps.factory, EmailSettings())
    _email.start()


@signals.worker_shutting_down.connect
def _drain(**_: Any) -> None:
    # Sent as the warm shutdown begins (SIGTERM), before running tasks finish.
    start_draining()


@signals.worker_shutdown.connect
def _stop_background(**_: Any) -> None:
    if _sweeper is not None:
        _sweeper.stop()
    if _model_wait is not None:
        _model_wait.stop()
    if _webhooks is not None:
        _webhooks.stop()
    if _email is not None:
        _email.stop()
    if _deps is not None:
        _deps.keeper.stop()
    if _capabilities is not None:
        _capabilities.stop()
    if _deps is not None and _deps.mcp is not None:
        _deps.mcp.close()  # stdio servers' processes end with their sessions
    # Last: the spans of everything above are flushed, and an exporter process
    # (LEAFLAB_TRACE_EXPORT_MODE=process) writes what it holds and exits.
    shutdown_tracing()


@app.task(name=ADVANCE_TASK, ignore_result=True)
def advance_task(job_id: str) -> str | None:
    try:
        parsed = uuid.UUID(job_id)
    except ValueError:
        log.error("%s got a malformed job id %r", ADVANCE_TASK, job_id)
        return None
    deps = get_deps()
    outcome = advance(deps, parsed, _runners)
    return outcome.value if outcome else None
