"""The model-wait watcher: puts ``waiting_model`` jobs back in the queue when their
endpoint answers again.

Guarantees:
- A parked job holds no worker: this one background thread per worker process
  checks for all of them, and only the process holding the cluster-wide lock
  does so, at most once per ``model_probe_interval_s``.
- A down endpoint is not hammered: each distinct endpoint the parked jobs wait
  on gets one cheap ``GET {base_url}/models`` per check, bounded by
  ``model_probe_timeout_s``, however many jobs wait on it. Any answer but a 5xx,
  408 or 429 counts as up (a 401 or 404 means the server is there).
- A job is re-queued (``queued``, an advance sent) when one of its endpoints is
  up, when it has waited ``model_outage_max_s`` (its worker makes one last call
  and fails it with the reason, model_wait.py), when a cancel is pending, or when
  its wait names no endpoint to probe. The state is all in Postgres: any worker
  restarted at any time picks the check up.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import redis
from celery import Celery
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts import keys
from services.common.contracts.tasks import send_advance
from services.common.db import autocommit
from services.common.events import EventPublisher
from services.common.periodic import ClusterLock, Periodic

log = logging.getLogger(__name__)
DOWN_STATUSES = frozenset({408, 429})
Probe = Callable[[str, float], bool]

WAITING_SQL = text(
    """
    SELECT id, model_wait, cancel_requested,
           EXTRACT(EPOCH FROM now() - COALESCE(model_wait_since, now())) AS waited_s
      FROM jobs
     WHERE status = 'waiting_model'
     ORDER BY model_wait_since
     LIMIT :limit
    """
)
# Only a job still parked is re-queued: a cancel (or another watcher) may have won.
REQUEUE_SQL = text(
    """
    UPDATE jobs SET status = 'queued', error = NULL, enqueued_at = now(), updated_at = now()
     WHERE id = ANY(CAST(:ids AS uuid[])) AND status = 'waiting_model'
    RETURNING id
    """
)


def probe_endpoint(base_url: str, timeout_s: float) -> bool:
    """Whether the endpoint's server answers (``GET /models``; no key is sent: an
    auth refusal is an answer too)."""
    try:
        reply = httpx.get(f"{base_url.rstrip('/')}/models", timeout=timeout_s)
    except (httpx.HTTPError, OSError):
        return False
    return reply.status_code < 500 and reply.status_code not in DOWN_STATUSES


def check_once(
    factory: sessionmaker[Session],
    celery: Celery,
    publisher: EventPublisher | None,
    *,
    outage_max_s: float,
    timeout_s: float,
    probe: Probe = probe_endpoint,
    limit: int = 1000,
) -> list[uuid.UUID]:
    """One check over every parked job; returns those sent back to the queue."""
    with autocommit(factory) as db:
        rows = db.execute(WAITING_SQL, {"limit": limit}).all()
    if not rows:
        return []
    urls = {url for row in rows for url in _urls(row.model_wait)}
    up = {url: probe(url, timeout_s) for url in sorted(urls)}
    due: dict[uuid.UUID, str] = {}
    for row in rows:
        mine = _urls(row.model_wait)
        back = [url for url in mine if up[url]]
        if back:
            due[row.id] = f"the model endpoint answers again ({', '.join(back)}): resuming"
        elif row.cancel_requested:
            due[row.id] = "cancel requested while waiting for the model"
        elif float(row.waited_s) >= outage_max_s:
            due[row.id] = "waited the longest allowed for the model: one last try"
        elif not mine:
            due[row.id] = "no endpoint to probe for this wait: trying the model again"
    if not due:
        return []
    with autocommit(factory) as db:
        resumed = [r[0] for r in db.execute(REQUEUE_SQL, {"ids": list(due)})]
    for job_id in resumed:
        send_advance(celery, job_id)
        if publisher is not None:
            publisher.publish(str(job_id), "status", {"status": "queued", "message": due[job_id]})
    if resumed:
        log.info("model-wait watcher re-queued %d job(s)", len(resumed))
    return resumed


def _urls(wait: dict[str, Any] | None) -> list[str]:
    endpoints = (wait or {}).get("endpoints") or []
    return [str(e["base_url"]) for e in endpoints if isinstance(e, dict) and e.get("base_url")]


class ModelWaitWatcher:
    """Background thread: :func:`check_once` every interval while holding the lock."""

    def __init__(
        self,
        factory: sessionmaker[Session],
        celery: Celery,
        client: redis.Redis,
        *,
        interval_s: float,
        timeout_s: float,
        outage_max_s: float,
    ) -> None:
        self._factory = factory
        self._celery = celery
        self._redis = client
        self._publisher = EventPublisher(client)
        self._interval = interval_s
        self._timeout = timeout_s
        self._outage_max = outage_max_s
        # One check per interval, cluster-wide.
        self._loop = Periodic(
            "model-wait",
            interval_s,
            self._tick,
            failure="model-wait check failed",
            cluster_lock=ClusterLock(client, keys.MODEL_WAIT_LOCK),
            join_s=0,
        )

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def _tick(self) -> None:
        check_once(
            self._factory,
            self._celery,
            self._publisher,
            outage_max_s=self._outage_max,
            timeout_s=self._timeout,
        )
