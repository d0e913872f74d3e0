"""The sweeper never waits on a job row another transaction holds.

Seen in a full run: a worker host cut off mid-transaction left its backend holding
a job row's lock (Postgres notices a vanished client only through keepalives). The
sweeper's UPDATE queued behind that lock, and with it the recovery of every other
job: nothing was re-enqueued for minutes. A locked row is now skipped and tried at
a later sweep.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import pytest
from sqlalchemy import text, update
from sqlalchemy.orm import Session, sessionmaker

from services.common.celery_app import build_celery
from services.common.models import Job
from services.common.settings import get_settings
from services.worker.spine.sweeper import sweep_once
from tests.fixtures.builders import make_user, queued_jobs

# Far longer than a sweep takes here; a sweep waiting on the lock never returns.
SWEEP_WAIT_S = 20


@pytest.fixture
def two_jobs(session_factory: sessionmaker[Session]) -> Iterator[tuple[uuid.UUID, uuid.UUID]]:
    user = make_user(session_factory)
    ids = queued_jobs(session_factory, user.id, 2)
    yield ids[0], ids[1]
    with session_factory() as db, db.begin():
        db.execute(
            update(Job)
            .where(Job.user_id == user.id)
            .values(status="cancelled", lease_until=None, lease_owner=None)
        )


def test_a_locked_job_is_skipped_and_the_others_are_still_recovered(
    session_factory: sessionmaker[Session],
    isolated_redis_url: str,
    two_jobs: tuple[uuid.UUID, uuid.UUID],
) -> None:
    held, free = two_jobs
    celery = build_celery(get_settings().model_copy(update={"redis_url": isolated_redis_url}))

    def sweep() -> list[uuid.UUID]:
        return sweep_once(session_factory, celery, requeue_after_s=0, per_user_cap=0)

    with ThreadPoolExecutor(1) as pool:
        holder = session_factory()
        try:
            # Another transaction holds the row, as a cut-off worker's would.
            holder.begin()
            holder.execute(text("SELECT 1 FROM jobs WHERE id = :id FOR UPDATE"), {"id": held})
            future = pool.submit(sweep)
            try:
                first = future.result(timeout=SWEEP_WAIT_S)
            except FutureTimeout:
                pytest.fail(f"the sweeper waited on the locked row for over {SWEEP_WAIT_S} s")
        finally:
            holder.rollback()  # also frees a sweep stuck behind the lock
            holder.close()
        assert free in first
        assert held not in first
        # Once the lock is gone, a later sweep recovers the skipped job too.
        assert held in pool.submit(sweep).result(timeout=SWEEP_WAIT_S)
