"""Writing a job's terminal state and waking whoever waits on it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from celery import Celery
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from services.common.db import autocommit
from services.common.failpoints import failpoint
from services.common.metrics import JOB_DURATION
from services.common.models import Job
from services.common.turns import next_queued_turn
from services.worker.runtime.admission import next_queued_for_user
from services.worker.runtime.dispatch import send_advance
from services.worker.runtime.events import JobEvents
from services.worker.runtime.lease import Lease, LeaseLost
from services.worker.runtime.outcome import Outcome

if TYPE_CHECKING:
    from services.worker.runtime.deps import RuntimeDeps


def finish_job(
    db: Session,
    lease: Lease,
    *,
    status: str,
    result: dict[str, Any] | None = None,
    error: str | None = None,
) -> list[uuid.UUID]:
    """Set the terminal status under the fence; returns jobs to wake (same session, parent).

    One fenced ``UPDATE … RETURNING``: the row lock it takes is the one the fence
    check took, and what the wake-ups need comes back with it (no re-read).
    """
    now = datetime.now(UTC)
    row = db.execute(
        update(Job)
        .where(Job.id == lease.job_id, Job.fence == lease.fence)
        .values(
            status=status,
            result=result,
            error=error,
            finished_at=now,
            updated_at=now,
            lease_owner=None,
            lease_until=None,
        )
        .returning(Job.kind, Job.created_at, Job.user_id, Job.session_id, Job.parent_job_id)
    ).first()
    if row is None:
        lease.lost.set()
        current = db.scalar(select(Job.fence).where(Job.id == lease.job_id))
        raise LeaseLost.refused(lease, current)
    JOB_DURATION.labels(row.kind, status).observe((now - row.created_at).total_seconds())
    return jobs_to_wake(
        db,
        lease.job_id,
        user_id=row.user_id,
        session_id=row.session_id,
        parent_job_id=row.parent_job_id,
    )


def commit_finish(
    factory: sessionmaker[Session],
    lease: Lease,
    *,
    status: str,
    result: dict[str, Any] | None = None,
    error: str | None = None,
) -> list[uuid.UUID]:
    """:func:`finish_job`, committed before events or wake-ups go out.

    The terminal write is one statement, so it runs in autocommit (no
    BEGIN/COMMIT round trips); the wake-up reads after it see it committed.
    """
    failpoint("job.before_finish")
    with autocommit(factory) as db:
        wake = finish_job(db, lease, status=status, result=result, error=error)
    failpoint("job.after_finish")
    return wake


def jobs_to_wake(
    db: Session,
    job_id: uuid.UUID,
    *,
    user_id: uuid.UUID,
    session_id: uuid.UUID | None,
    parent_job_id: uuid.UUID | None,
) -> list[uuid.UUID]:
    wake: list[uuid.UUID] = []
    if parent_job_id is not None:
        wake.append(parent_job_id)
    if session_id is not None:
        nxt = next_queued_turn(db, session_id=session_id, after=job_id)
        if nxt is not None:
            wake.append(nxt)
    if not wake or wake == [parent_job_id]:
        # The slot this job held under its user's cap is free: the user's next
        # queued job takes it (admission re-checks; the sweeper is the backstop).
        nxt = next_queued_for_user(db, user_id=user_id, exclude=[job_id])
        if nxt is not None:
            wake.append(nxt)
    return wake


def finish_and_announce(
    factory: sessionmaker[Session],
    celery: Celery,
    lease: Lease,
    events: JobEvents,
    *,
    status: str,
    result: dict[str, Any] | None = None,
    error: str | None = None,
) -> None:
    """Commit the terminal state, tell the job's watchers, then wake who waited on it."""
    wake = commit_finish(factory, lease, status=status, result=result, error=error)
    events.emit("status", {"status": status, "error": error})
    events.emit("final", {"status": status, "result": result, "error": error})
    for job_id in wake:
        send_advance(celery, job_id)


def finish_slice(
    deps: RuntimeDeps,
    lease: Lease,
    events: JobEvents,
    *,
    status: str,
    result: dict[str, Any] | None = None,
    error: str | None = None,
) -> Outcome:
    """:func:`finish_and_announce` with the worker's deps: how a job's slice ends it."""
    finish_and_announce(
        deps.factory, deps.celery, lease, events, status=status, result=result, error=error
    )
    return Outcome.FINISHED
