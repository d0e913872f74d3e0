"""Recovers jobs whose worker died or whose Celery message was lost.

A job is due when it is queued or running, nobody holds a live lease, no
advance message was sent recently, and it does not wait on an active child.
One sweeper runs cluster-wide at a time (a Redis lock), and re-sending is
safe: a duplicate message finds the lease taken, or the job done, and does
nothing.
"""

from __future__ import annotations

import logging
import uuid

import redis
from celery import Celery
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts import keys
from services.common.contracts.statuses import TERMINAL, sql_list
from services.common.contracts.tasks import send_advance
from services.common.db import autocommit
from services.common.periodic import ClusterLock, Periodic
from services.worker.spine.admission import CAPPED, EARLIER_IN_SESSION
from services.worker.spine.budget.orphans import sweep_reservations

log = logging.getLogger(__name__)

# Due: queued or running, no live lease, no advance sent recently. Queued jobs
# that may not start (an earlier session job is active) are left alone, and
# capped queued jobs are sent only into their user's free slots — the cap less
# the user's running jobs and the queued ones already sent (in flight) — picked
# round-robin by user: every user's oldest first, then every user's second…
# (``place``), so one user's long backlog cannot push another user's job past
# the LIMIT.
DUE_SQL = text(
    """
    WITH holding AS (
        SELECT h.user_id, count(*) AS n FROM jobs h
         WHERE {capped_h}
           AND (h.status = 'running'
                OR (h.status = 'queued'
                    AND h.enqueued_at >= now() - make_interval(secs => :after)))
         GROUP BY h.user_id
    ), due AS (
        SELECT j.id, j.user_id, j.created_at, q.queued_capped,
               row_number() OVER (PARTITION BY j.user_id, q.queued_capped
                                  ORDER BY j.created_at) AS place
          FROM jobs j
          CROSS JOIN LATERAL (SELECT j.status = 'queued' AND {capped_j} AS queued_capped) q
         WHERE j.status IN ('queued', 'running')
           AND (j.lease_until IS NULL OR j.lease_until < now())
           AND (j.enqueued_at IS NULL OR j.enqueued_at < now() - make_interval(secs => :after))
           AND NOT (j.status = 'queued' AND {earlier_j})
           -- A parent waiting on an active child (subagent, batch task) is woken by
           -- that child's finish; once the child is done, a lost wake is swept here.
           AND NOT EXISTS (
                SELECT 1 FROM jobs c
                 WHERE c.parent_job_id = j.id
                   AND c.status NOT IN ({terminal}))
    )
    SELECT d.id FROM due d LEFT JOIN holding h ON h.user_id = d.user_id
     WHERE NOT d.queued_capped OR :cap <= 0 OR d.place <= :cap - COALESCE(h.n, 0)
     ORDER BY CASE WHEN d.queued_capped THEN d.place ELSE 0 END, d.created_at
     LIMIT :limit
    """.format(
        capped_h=CAPPED.format(j="h"),
        capped_j=CAPPED.format(j="j"),
        earlier_j=EARLIER_IN_SESSION.format(j="j"),
        terminal=sql_list(TERMINAL),
    )
)
# SKIP LOCKED: a row locked by a transaction that is still open (a worker mid-write, or
# one cut off by a partition whose backend has not noticed yet) is left for a later
# sweep; waiting on it would stall every other job's recovery behind that one.
MARK_SENT_SQL = text(
    """
    UPDATE jobs SET enqueued_at = now()
     WHERE id IN (SELECT id FROM jobs
                   WHERE id = ANY(CAST(:ids AS uuid[]))
                     AND (lease_until IS NULL OR lease_until < now())
                     FOR UPDATE SKIP LOCKED)
    RETURNING id
    """
)


def sweep_once(
    factory: sessionmaker[Session],
    celery: Celery,
    *,
    requeue_after_s: float,
    per_user_cap: int = 0,
    limit: int = 500,
) -> list[uuid.UUID]:
    """Send an advance for every due job, in round-robin order by user; returns them."""
    params = {"after": requeue_after_s, "limit": limit, "cap": per_user_cap}
    # Give back what dead workers held before their jobs run (and reserve) again.
    sweep_reservations(factory)
    # Autocommit: each statement has its own snapshot under READ COMMITTED anyway, and
    # the mark's row locks end with it instead of waiting for a COMMIT round trip (a
    # sweeping host cut off in between would hold the due jobs it had just marked).
    with autocommit(factory) as db:
        ordered = [row[0] for row in db.execute(DUE_SQL, params)]
        marked = {row[0] for row in db.execute(MARK_SENT_SQL, {"ids": ordered})}
    due = [job_id for job_id in ordered if job_id in marked]
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
        per_user_cap: int = 0,
    ) -> None:
        self._factory = factory
        self._celery = celery
        self._redis = client
        self._interval = interval_s
        self._requeue_after = requeue_after_s
        self._per_user_cap = per_user_cap
        # One sweep per period cluster-wide; a worker's shutdown does not wait for it.
        self._loop = Periodic(
            "sweeper",
            interval_s,
            self._tick,
            failure="sweep failed",
            cluster_lock=ClusterLock(client, keys.SWEEPER_LOCK),
            join_s=0,
        )

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def _tick(self) -> None:
        sweep_once(
            self._factory,
            self._celery,
            requeue_after_s=self._requeue_after,
            per_user_cap=self._per_user_cap,
        )
        self._redis.incr(keys.SWEEPER_SWEEPS)  # a liveness signal
