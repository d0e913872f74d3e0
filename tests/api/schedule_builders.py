"""Schedules for tests: rows made directly, and their cleanup after each test.

Slots of directly made schedules lie years ahead of the real clock, so the
firing loop of any API process running meanwhile never finds them due; a test
fires them with its own ``now``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session, sessionmaker

from services.api.schedules.cron import parse
from services.common.models import Job, Schedule

# A Monday, far enough ahead that no real clock reaches it during a test run.
FUTURE = datetime(2031, 1, 6, 12, 0, tzinfo=UTC)


def make_schedule(
    factory: sessionmaker[Session],
    user_id: uuid.UUID,
    *,
    cron: str = "0 9 * * *",
    timezone: str = "UTC",
    job: dict[str, Any] | None = None,
    after: datetime = FUTURE,
    project_id: uuid.UUID | None = None,
) -> uuid.UUID:
    """A schedule whose next slot is the first one after ``after``."""
    with factory() as db, db.begin():
        schedule = Schedule(
            user_id=user_id,
            project_id=project_id,
            cron=cron,
            timezone=timezone,
            job=job or {"kind": "turn", "input": {"content": "what is new?"}},
            next_slot=parse(cron, timezone).next_after(after),
        )
        db.add(schedule)
        db.flush()
        return schedule.id


def runs_of(factory: sessionmaker[Session], schedule_id: uuid.UUID) -> list[Job]:
    with factory() as db:
        return list(
            db.scalars(
                select(Job).where(Job.schedule_id == schedule_id).order_by(Job.schedule_slot)
            )
        )


def schedule_row(factory: sessionmaker[Session], schedule_id: uuid.UUID) -> Schedule:
    with factory() as db:
        found = db.get(Schedule, schedule_id)
        assert found is not None
        return found


@pytest.fixture(autouse=True)
def no_schedules_left(session_factory: sessionmaker[Session]) -> Iterator[None]:
    """Each test starts and ends with no schedules (another module's left over would be
    fired by this test's clock); runs are cancelled so that no later worker runs them."""
    _clear(session_factory)
    yield
    _clear(session_factory)


def _clear(session_factory: sessionmaker[Session]) -> None:
    with session_factory() as db, db.begin():
        db.execute(
            update(Job)
            .where(Job.schedule_id.is_not(None), Job.status == "queued")
            .values(status="cancelled", error="test over")
        )
        db.execute(delete(Schedule))
