"""The Celery application every service shares (tasks are addressed by name).

Queues: ``agent`` (agent.advance), ``sandbox`` (sandbox.exec), ``library``
(library.ingest). Services never import each other's tasks; they send by name.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from celery import Celery

from services.common.contracts.tasks import AGENT_QUEUE, LIBRARY_QUEUE, SANDBOX_QUEUE
from services.common.settings import CommonSettings

TASK_ROUTES = {
    "agent.*": {"queue": AGENT_QUEUE},
    "sandbox.*": {"queue": SANDBOX_QUEUE},
    "library.*": {"queue": LIBRARY_QUEUE},
}


class LeaflabCelery(Celery):
    """Celery whose workers stop on SIGHUP instead of re-executing (celery_hangup.py)."""

    @cached_property
    def Worker(self) -> Any:  # noqa: N802 - Celery's name for it
        return self.subclass_with_self("services.common.celery_hangup:HangupStopsWorker")


def build_celery(settings: CommonSettings) -> Celery:
    broker = settings.require_redis_url()
    app = LeaflabCelery("leaflab", broker=broker, backend=broker)
    app.conf.update(
        task_routes=TASK_ROUTES,
        task_default_queue=AGENT_QUEUE,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        # Postgres is the source of truth: a lost message is recovered by the
        # sweeper, a duplicate by the job lease, so early ack is safe and keeps
        # a killed worker's message from being redelivered an hour later.
        task_acks_late=False,
        worker_prefetch_multiplier=1,
        task_soft_time_limit=settings.task_soft_time_limit_s,
        task_time_limit=settings.task_hard_time_limit_s,
        broker_transport_options={"visibility_timeout": settings.broker_visibility_timeout_s},
        result_backend_transport_options={
            "visibility_timeout": settings.broker_visibility_timeout_s
        },
        result_expires=3600,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )
    check_time_limits(app)
    return app


def check_time_limits(app: Celery) -> None:
    """Refuse a configuration where a running task could be redelivered."""
    hard = app.conf.task_time_limit
    visibility = (app.conf.broker_transport_options or {}).get("visibility_timeout", 3600)
    if hard is None or hard >= visibility:
        raise RuntimeError(
            f"Celery hard time limit ({hard}s) must be below the broker visibility "
            f"timeout ({visibility}s), or a running task would be delivered twice"
        )
