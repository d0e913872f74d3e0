"""Firing schedules: each due slot becomes exactly one job, whatever number of
API processes poll at once and however long they were all down.

- **Claim.** A slot is taken by locking its schedule row (``FOR UPDATE SKIP
  LOCKED``) while ``next_slot`` is still due; the run is created and
  ``next_slot`` moved past ``now`` in that same transaction. A second process
  skips the locked row, and after the commit no longer finds it due.
- **One job per slot.** The run carries ``(schedule_id, schedule_slot)``, UNIQUE
  among jobs: even a process that claimed wrongly cannot add a second job.
- **Catch-up.** After downtime only the latest missed slot runs, once; the
  slots before it are skipped, and ``next_slot`` becomes the first future one.
- **Same rules as a request.** The run is submitted through
  ``jobs.submission.submit`` as the schedule's owner: membership as it is now,
  input limits, the session's owner. A slot that may not run (owner disabled,
  no longer a member, budget exhausted) makes no job; the reason is kept in
  ``last_error`` and the schedule moves on to its next slot.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from celery import Celery
from opentelemetry import trace
from sqlalchemy import ColumnElement, select, update
from sqlalchemy.orm import Session, sessionmaker

from services.api.admin.budgets.remaining import remaining_budget
from services.api.jobs.service import ScheduleRun
from services.api.jobs.submission import JOB_BODY, submit
from services.api.schedules.cron import parse
from services.api.settings import ApiSettings
from services.api.transaction import discard_after_commit, run_after_commit
from services.common.contracts.errors import ServiceError
from services.common.models import Schedule, User

log = logging.getLogger(__name__)
tracer = trace.get_tracer(__name__)

# At most this many schedules per poll and process; the rest are due at the next.
BATCH = 100


@dataclass(frozen=True)
class Fired:
    """What one process did with one due slot: ``job_id`` None when it was refused."""

    schedule_id: uuid.UUID
    slot: datetime
    job_id: uuid.UUID | None
    refused: str | None


Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


def _due(now: datetime) -> tuple[ColumnElement[bool], ...]:
    """A schedule whose slot has come: not paused, its next slot at or before ``now``."""
    return (Schedule.paused.is_(False), Schedule.next_slot <= now)


def fire_due(
    factory: sessionmaker[Session], *, settings: ApiSettings, celery: Celery, now: datetime
) -> list[Fired]:
    """Run every slot due at ``now`` that no other process is running."""
    with factory() as db:
        due = db.scalars(
            select(Schedule.id).where(*_due(now)).order_by(Schedule.next_slot).limit(BATCH)
        ).all()
    fired: list[Fired] = []
    for schedule_id in due:
        try:
            outcome = fire_one(
                factory, settings=settings, celery=celery, schedule_id=schedule_id, now=now
            )
        except Exception as err:  # one broken schedule must not stop the others
            log.exception("schedule %s: firing failed", schedule_id)
            _record_error(factory, schedule_id, f"run failed: {type(err).__name__}: {err}")
            continue
        if outcome is not None:
            fired.append(outcome)
    return fired


def fire_one(
    factory: sessionmaker[Session],
    *,
    settings: ApiSettings,
    celery: Celery,
    schedule_id: uuid.UUID,
    now: datetime,
) -> Fired | None:
    """Claim the schedule's due slot and run it; None when another process has it or
    it is no longer due (paused, already run)."""
    db = factory()
    try:
        with tracer.start_as_current_span("schedule.fire") as span:
            fired = _claim_and_run(db, settings=settings, celery=celery, sid=schedule_id, now=now)
            if fired is not None:
                span.set_attribute("leaflab.schedule_id", str(schedule_id))
                span.set_attribute("leaflab.schedule_slot", fired.slot.isoformat())
            db.commit()
    except Exception:
        db.rollback()
        discard_after_commit(db)
        raise
    finally:
        db.close()
    run_after_commit(db)  # the run's "advance" message, only once it is committed
    return fired


def _claim_and_run(
    db: Session, *, settings: ApiSettings, celery: Celery, sid: uuid.UUID, now: datetime
) -> Fired | None:
    schedule = db.scalar(
        select(Schedule).where(Schedule.id == sid, *_due(now)).with_for_update(skip_locked=True)
    )
    if schedule is None:
        return None
    cron = parse(schedule.cron, schedule.timezone)
    # The latest slot that has come (after downtime: the only one of the missed
    # slots that runs); never one before the slot that was due.
    slot = max(cron.latest_at_or_before(now), schedule.next_slot)
    job_id, refused = None, _refusal(db, schedule)
    if refused is None:
        owner = db.get(User, schedule.user_id)
        assert owner is not None  # noqa: S101 - the FK cascades schedules with their user
        try:
            # A savepoint: a refused submission leaves nothing half-written behind.
            with db.begin_nested():
                job = submit(
                    db,
                    settings=settings,
                    celery=celery,
                    user=owner,
                    body=JOB_BODY.validate_python(_run_body(schedule)),
                    run=ScheduleRun(schedule_id=schedule.id, slot=slot),
                )
                job_id = job.id
        except ServiceError as err:
            refused = f"the run was refused: {err.message}"
    schedule.last_slot = slot
    schedule.next_slot = cron.next_after(max(now, slot))
    schedule.last_error = refused
    if job_id is not None:
        schedule.last_run_at = now
    db.flush()
    return Fired(schedule_id=schedule.id, slot=slot, job_id=job_id, refused=refused)


def _run_body(schedule: Schedule) -> dict[str, Any]:
    """The job body for this run: the schedule's project; a survey's ``since``."""
    body = {**schedule.job, "input": dict(schedule.job.get("input") or {})}
    body["project"] = str(schedule.project_id) if schedule.project_id else None
    if body.get("kind") == "survey" and schedule.last_run_at is not None:
        # "What's new since last run": only papers the library gained since then.
        body["input"]["since"] = schedule.last_run_at.isoformat()
    return body


def _refusal(db: Session, schedule: Schedule) -> str | None:
    """Why this slot may not run as its owner now (None: it may)."""
    owner = db.get(User, schedule.user_id)
    if owner is None or owner.disabled:
        return "the schedule's owner is disabled"
    left = remaining_budget(db, user_id=schedule.user_id, project_id=schedule.project_id)
    if left is not None and _exhausted(left.usd_remaining, left.tokens_remaining):
        return (
            f"budget exhausted at {utc_now():%Y-%m-%d %H:%M} UTC "
            f"(${left.usd_remaining or 0:.2f}, {left.tokens_remaining} tokens left); "
            "no job was created for this slot"
        )
    return None


def _exhausted(usd: float | None, tokens: int | None) -> bool:
    """Nothing left: the run's first model call would be refused, so none is made."""
    return (usd is not None and usd <= 0) or tokens == 0


def _record_error(factory: sessionmaker[Session], schedule_id: uuid.UUID, message: str) -> None:
    try:
        with factory() as db, db.begin():
            db.execute(
                update(Schedule).where(Schedule.id == schedule_id).values(last_error=message[:2000])
            )
    except Exception:  # the database itself is down: the next poll tries again
        log.exception("schedule %s: could not record the error", schedule_id)
