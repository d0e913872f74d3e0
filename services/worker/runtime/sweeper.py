"""Recovers jobs whose worker died or whose Celery message was lost.

A job is due when it is queued or running, nobody holds a live lease, and no
advance message was sent recently. One sweeper runs cluster-wide at a time
(a Redis lock), and re-sending is safe: a duplicate message finds the lease
taken, or the job done, and does nothing.
"""

from __future__ import annotations

import logging
import threading
import uuid

import redis
from celery import Celery
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from services.worker.budget.orphans import sweep_reservations
from services.worker.runtime.dispatch import send_advance

log = logging.getLogger(__name__)

DUE_SQL = text(
    """
    UPDATE jobs SET enqueued_at = now()
     WHERE id IN (
        SELECT id FROM jobs
         WHERE status IN ('queued', 'running')
           AND (lease_until IS NULL OR lease_until < now())
           AND (enqueued_at IS NULL OR enqueued_at < now() - make_interval(secs => :after))
         ORDER BY created_at
         LIMIT :limit
         FOR UPDATE SKIP LOCKED)
    RETURNING id
    """
)
LOCK_KEY = "leaflab:sweeper:lock"


def sweep_once(
    factory: sessionmaker[Session], celery: Celery, *, requeue_after_s: float, limit: int = 500
) -> list[uuid.UUID]:
    # Give back what dead workers held before their jobs run (and reserve) again.
    sweep_reservations(factory)
    with factory() as db, db.begin():
        due = [row[0] for row in db.execute(DUE_SQL, {"after": requeue_after_s, "limit": limit})]
    for job_id in due:
        send_advance(celery, job_id)
    if due:
        log.info("sweeper re-enqueued %d job(s)", len(due))
    return due


class Sweeper:
    """Background thread: sweep every interval while holding the cluster-wide lock."""

    def __init__(
        self,
        factory: sessionmaker[Session],
        celery: Celery,
        client: redis.Redis,
        *,
        interval_s: float,
        requeue_after_s: float,
    ) -> None:
        self._factory = factory
        self._celery = celery
        self._redis = client
        self._interval = interval_s
        self._requeue_after = requeue_after_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sweeper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                lock_ms = max(1, int(self._interval * 900))
                if self._redis.set(LOCK_KEY, "1", nx=True, px=lock_ms):
                    sweep_once(self._factory, self._celery, requeue_after_s=self._requeue_after)
            except Exception:  # a DB or Redis blip: try again next period
                log.exception("sweep failed")
