"""A worker's background writes lock job rows for one statement, never across a round trip.

Seen in the multi-host fault test: worker-a's lease renewal ran as BEGIN; UPDATE
(every job it held); COMMIT. Its cable was pulled between the UPDATE and the COMMIT,
so its backend sat idle in transaction holding all those rows until TCP declared
the client dead (hours before server keepalives; about 40 s with them), and none of
its jobs could be taken over. A write that is one statement commits on the server
with nothing left to wait for; these tests catch a row still locked the moment the
statement has returned, which is what a client that vanished then would leave.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, event, text, update
from sqlalchemy.orm import Session, sessionmaker

from services.common.celery_app import build_celery
from services.common.models import Job
from services.common.settings import get_settings
from services.worker.spine.lease import Lease, LeaseKeeper
from services.worker.spine.sweeper import sweep_once
from tests.fixtures.builders import make_user, queued_jobs

LOCKED_SQL = text(
    "SELECT count(*) FROM jobs WHERE id = ANY(CAST(:ids AS uuid[])) "
    "AND id NOT IN (SELECT id FROM jobs WHERE id = ANY(CAST(:ids AS uuid[])) "
    "FOR UPDATE SKIP LOCKED)"
)


class LocksAfterStatement:
    """Counts, right after each matching statement returns, how many rows are locked."""

    def __init__(self, engine: Engine, marker: str, ids: list[uuid.UUID]) -> None:
        self.engine = engine
        self.marker = marker
        self.ids = ids
        self.seen: list[int] = []

    def __call__(self, conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if self.marker not in statement:
            return
        # Another pooled connection, in its own autocommit transaction: it sees the
        # locks the statement's session still holds, as a sweeper on another host would.
        with self.engine.connect() as probe:
            probe = probe.execution_options(isolation_level="AUTOCOMMIT")
            self.seen.append(int(probe.execute(LOCKED_SQL, {"ids": self.ids}).scalar_one()))


@pytest.fixture
def two_jobs(session_factory: sessionmaker[Session]) -> Iterator[list[uuid.UUID]]:
    user = make_user(session_factory)
    ids = queued_jobs(session_factory, user.id, 2)
    yield ids
    with session_factory() as db, db.begin():
        db.execute(
            update(Job)
            .where(Job.user_id == user.id)
            .values(status="cancelled", lease_until=None, lease_owner=None)
        )


@pytest.fixture
def watch(engine: Engine) -> Iterator[list[LocksAfterStatement]]:
    watchers: list[LocksAfterStatement] = []
    yield watchers
    for w in watchers:
        event.remove(engine, "after_cursor_execute", w)


def _watch(
    engine: Engine, watchers: list[LocksAfterStatement], marker: str, ids: list[uuid.UUID]
) -> LocksAfterStatement:
    w = LocksAfterStatement(engine, marker, ids)
    event.listen(engine, "after_cursor_execute", w)
    watchers.append(w)
    return w


def test_a_lease_renewal_leaves_no_job_row_locked(
    engine: Engine,
    session_factory: sessionmaker[Session],
    two_jobs: list[uuid.UUID],
    watch: list[LocksAfterStatement],
) -> None:
    with session_factory() as db, db.begin():
        db.execute(
            update(Job)
            .where(Job.id.in_(two_jobs))
            .values(status="running", lease_owner="w1", fence=1, lease_until=None)
        )
    keeper = LeaseKeeper(session_factory, ttl_s=300)  # its own thread waits 100 s: idle here
    try:
        leases = [Lease(job_id=job_id, fence=1, owner="w1") for job_id in two_jobs]
        for lease in leases:
            keeper.hold(lease)
        seen = _watch(engine, watch, "SET lease_until", two_jobs)
        keeper.renew_all()
    finally:
        keeper.stop()
    assert not any(lease.lost.is_set() for lease in leases)  # both renewed
    assert seen.seen == [0], f"rows still locked after the renewal statement: {seen.seen}"


def test_a_sweep_leaves_no_job_row_locked(
    engine: Engine,
    session_factory: sessionmaker[Session],
    isolated_redis_url: str,
    two_jobs: list[uuid.UUID],
    watch: list[LocksAfterStatement],
) -> None:
    celery = build_celery(get_settings().model_copy(update={"redis_url": isolated_redis_url}))
    seen = _watch(engine, watch, "SET enqueued_at", two_jobs)
    sent = sweep_once(session_factory, celery, requeue_after_s=0, per_user_cap=0)
    assert set(two_jobs) <= set(sent)
    assert seen.seen == [0], f"rows still locked after the sweeper's mark: {seen.seen}"
