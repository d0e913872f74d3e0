"""What the per-step round-trip cuts (issue 14) must not change.

Each cut removes work from the hot path of an agent step; these scenarios pin
the behaviour that work stood for: a pooled connection the server dropped is
replaced (no ``SELECT 1`` ping any more), a finish under a stale fence writes
nothing (one fenced ``UPDATE … RETURNING`` instead of lock-then-update), a
finish wakes the user's next job only when no message of it is on its way, and
a job's event stream still expires (its TTL is renewed once per slice).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
import redis
from sqlalchemy import Engine, select, text
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.keys import job_stream
from services.common.db import build_engine
from services.common.events import EventPublisher
from services.common.models import ChatSession, Job, User
from services.worker.spine.events import JobEvents
from services.worker.spine.finish import commit_finish
from services.worker.spine.lease import Lease, LeaseLost
from tests.conftest import PG_ADMIN_URL, Stack


def _writer(factory: sessionmaker[Session]) -> Engine:
    """The worker's autocommit writer over the test's engine."""
    engine = factory.kw["bind"]
    assert isinstance(engine, Engine)
    return engine.execution_options(isolation_level="AUTOCOMMIT")


def _backend_pid(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


class TestPooledConnectionDroppedByTheServer:
    def test_the_next_checkout_gets_a_working_connection(self, stack: Stack) -> None:
        engine = build_engine(stack.database_url, pool_size=1)
        try:
            first = _backend_pid(engine)
            assert _backend_pid(engine) == first  # pooled: the same backend
            with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (first,))
                # Wait until the backend is gone (its goodbye is on the socket).
                for _ in range(100):
                    gone = admin.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (first,)
                    ).fetchone()
                    if gone and gone[0] == 0:
                        break
            second = _backend_pid(engine)
            assert second != first
        finally:
            engine.dispose()


def _job(
    db: Session,
    user: User,
    *,
    status: str,
    created_at: datetime,
    enqueued_at: datetime | None = None,
    fence: int = 0,
) -> Job:
    session = ChatSession(user_id=user.id)
    db.add(session)
    db.flush()
    job = Job(
        user_id=user.id,
        session_id=session.id,
        kind="turn",
        input={"content": "go"},
        status=status,
        created_at=created_at,
        enqueued_at=enqueued_at,
        fence=fence,
    )
    db.add(job)
    db.flush()
    return job


@pytest.fixture
def user(session_factory: sessionmaker[Session]) -> Iterator[User]:
    with session_factory() as db, db.begin():
        member = User(email=f"trips-{uuid.uuid4().hex[:8]}@lab.test")
        db.add(member)
    yield member
    with session_factory() as db, db.begin():
        db.execute(text("DELETE FROM users WHERE id = :id"), {"id": member.id})


class TestFinish:
    def test_wakes_the_users_next_job_that_has_no_message_on_its_way(
        self, session_factory: sessionmaker[Session], user: User
    ) -> None:
        now = datetime.now(UTC)
        with session_factory() as db, db.begin():
            done = _job(db, user, status="running", created_at=now - timedelta(minutes=3), fence=4)
            # Older, but its advance message is in flight: it takes the slot itself.
            in_flight = _job(
                db, user, status="queued", created_at=now - timedelta(minutes=2), enqueued_at=now
            )
            # Refused at admission earlier (enqueued_at cleared): only a wake-up sends it.
            refused = _job(db, user, status="queued", created_at=now - timedelta(minutes=1))
            ids = done.id, in_flight.id, refused.id

        wake = commit_finish(
            _writer(session_factory),
            Lease(job_id=ids[0], fence=4, owner="w"),
            status="succeeded",
            result={"content": "ok"},
        )

        assert wake == [ids[2]]
        with session_factory() as db:
            row = db.execute(
                select(Job.status, Job.lease_owner, Job.finished_at).where(Job.id == ids[0])
            ).one()
        assert row.status == "succeeded" and row.lease_owner is None
        assert row.finished_at is not None

    def test_under_a_stale_fence_writes_nothing(
        self, session_factory: sessionmaker[Session], user: User
    ) -> None:
        with session_factory() as db, db.begin():
            job = _job(db, user, status="running", created_at=datetime.now(UTC), fence=7)
            job_id = job.id
        lease = Lease(job_id=job_id, fence=6, owner="stale")

        with pytest.raises(LeaseLost, match="fence 6 < 7"):
            commit_finish(
                _writer(session_factory), lease, status="succeeded", result={"content": "x"}
            )

        assert lease.lost.is_set()
        with session_factory() as db:
            status = db.scalar(select(Job.status).where(Job.id == job_id))
        assert status == "running"


class TestEventStreamExpiry:
    def test_a_slices_stream_expires_and_keeps_every_event(self, stack: Stack) -> None:
        client = redis.Redis.from_url(stack.redis_url)
        job_id = str(uuid.uuid4())
        events = JobEvents(EventPublisher(client), job_id, flush_s=0.0)
        try:
            events.emit("status", {"status": "running"})
            client.persist(job_stream(job_id))  # as if the slice began long ago
            events.emit("tool_start", {"name": "glob"})
            events.token("do")
            events.token("ne")
            events.flush_tokens()
            assert client.ttl(job_stream(job_id)) == -1  # mid-slice events leave it alone
            events.emit("final", {"status": "succeeded"})

            assert client.ttl(job_stream(job_id)) > 0
            types = [f[b"type"].decode() for _, f in client.xrange(job_stream(job_id))]
            assert types[0] == "status" and types[1] == "tool_start"
            assert types[-1] == "final" and "token" in types

            # A new slice (a new JobEvents) renews the expiry with its first event.
            client.persist(job_stream(job_id))
            JobEvents(EventPublisher(client), job_id, flush_s=0.0).emit("tool_end", {})
            assert client.ttl(job_stream(job_id)) > 0
        finally:
            client.delete(job_stream(job_id))
