"""The rules behind the jobs endpoints: what a submission creates, what a cancel does.

Functions here decide and write (flush only); the router has already parsed
the request and checked what the caller may touch, and the request boundary
commits. Celery messages are planned with ``after_commit`` and sent only once
that commit succeeded; if sending fails, the sweeper sends them later.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from celery import Celery
from opentelemetry import trace
from sqlalchemy import func, update
from sqlalchemy.orm import Session

from services.api.sessions.service import DEFAULT_TITLE
from services.api.transaction import after_commit
from services.common.contracts.errors import ServiceError
from services.common.contracts.statuses import JobStatus
from services.common.contracts.tasks import send_advance
from services.common.models import (
    TERMINAL_STATUSES,
    Approval,
    ChatSession,
    Job,
    Project,
    User,
)
from services.common.telemetry import current_trace_id_hex, inject_carrier
from services.common.turns import (
    JobOrigin,
    create_job_in_new_session,
    create_queued_job,
    next_queued_turn,
)

SESSION_TITLE_CHARS = 60


@dataclass(frozen=True)
class ScheduleRun:
    """The schedule slot a submission runs for (services/api/schedules/firing.py)."""

    schedule_id: uuid.UUID
    slot: datetime


def _origin(user: User, project: Project | None, run: ScheduleRun | None = None) -> JobOrigin:
    # The API request span's trace (always a fresh, server-made one: see
    # TracingMiddleware; a schedule's run: its firing span) becomes the job's, so
    # every later span joins it.
    return JobOrigin(
        user_id=user.id,
        project_id=project.id if project else None,
        trace_id=current_trace_id_hex(),
        trace_context=inject_carrier() or None,
        schedule_id=run.schedule_id if run else None,
        schedule_slot=run.slot if run else None,
    )


def session_title(content: str) -> str:
    """A session's title from a message: its first line, cut at a word boundary."""
    line = " ".join(content.strip().split("\n", 1)[0].split())
    if len(line) <= SESSION_TITLE_CHARS:
        return line
    cut = line[: SESSION_TITLE_CHARS - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space >= SESSION_TITLE_CHARS // 2 else cut).rstrip(" ,.;:") + "…"


def submit_job(
    db: Session,
    *,
    celery: Celery,
    user: User,
    kind: str,
    job_input: dict[str, Any],
    session: ChatSession | None,
    project: Project | None,
    max_turns: int,
    run: ScheduleRun | None = None,
) -> Job:
    """A queued job of any kind, sent to the agent queue after commit.

    A turn or survey without a session gets a new one. A turn's content is the
    session's next user message; a survey starts with no message (the worker
    writes its opening prompt from ``job.input``); a batch has no session.
    """
    first_message = job_input["content"] if kind == "turn" else None
    origin = _origin(user, project, run)
    if session is None and kind != "batch":
        title = job_input.get("topic") or session_title(str(job_input.get("content", "")))
        job = create_job_in_new_session(
            db,
            origin=origin,
            title=title or "job",
            kind=kind,
            job_input=job_input,
            max_turns=max_turns,
            first_message=first_message,
        )
    else:
        if session is not None and kind == "turn" and session.title == DEFAULT_TITLE:
            # A session opened with no title (the chat page's "New session") is named
            # by its first message, so the sidebar tells sessions apart.
            session.title = session_title(str(job_input["content"])) or DEFAULT_TITLE
        job = create_queued_job(
            db,
            origin=origin,
            kind=kind,
            job_input=job_input,
            session=session,
            max_turns=max_turns,
            first_message=first_message,
        )
    _enqueue_after_commit(db, celery, job.id)
    return job


def post_turn(
    db: Session, *, celery: Celery, user: User, session: ChatSession, content: str, max_turns: int
) -> Job:
    """A new user message in a session: a queued turn job behind any earlier ones."""
    return submit_job(
        db,
        celery=celery,
        user=user,
        kind="turn",
        job_input={"content": content},
        session=session,
        project=None,
        max_turns=max_turns,
    )


def cancel_job(db: Session, *, celery: Celery, job: Job) -> Job:
    """Request cancellation; a queued job nobody has leased yet is cancelled at once.

    A running job stops at its next step boundary (its worker is woken to see
    the flag); a batch is woken to cancel its children. When a queued turn is
    cancelled at once, the session's next queued turn is woken, since it may
    have been waiting behind this one.
    """
    if job.status in TERMINAL_STATUSES:
        raise ServiceError(409, "conflict", f"job is already {job.status}")
    db.execute(update(Job).where(Job.id == job.id).values(cancel_requested=True))
    # A job waiting for approval holds no lease and is not runnable: make it so,
    # and its worker ends it as cancelled at once.
    db.execute(
        update(Job)
        .where(Job.id == job.id, Job.status == JobStatus.WAITING_APPROVAL)
        .values(status=JobStatus.RUNNING)
    )
    db.execute(
        update(Approval)
        .where(Approval.job_id == job.id, Approval.status == "pending")
        .values(status="cancelled", resolved_at=func.now())
    )
    db.execute(
        update(Job)
        # A job paused for budget, or waiting for its model, holds no lease either:
        # it stops at once too.
        .where(
            Job.id == job.id,
            Job.status.in_((JobStatus.QUEUED, JobStatus.BUDGET_EXHAUSTED, JobStatus.WAITING_MODEL)),
            Job.lease_until.is_(None),
        )
        .values(status=JobStatus.CANCELLED, error="cancelled by user", finished_at=func.now())
    )
    db.refresh(job)
    if job.status != JobStatus.CANCELLED or job.kind == "batch":
        _enqueue_after_commit(db, celery, job.id)
    elif job.session_id is not None:
        waiting = next_queued_turn(db, session_id=job.session_id)
        if waiting is not None:
            _enqueue_after_commit(db, celery, waiting)
    return job


def _enqueue_after_commit(db: Session, celery: Celery, job_id: uuid.UUID) -> None:
    after_commit(db, lambda: enqueue(celery, job_id))


def enqueue(celery: Celery, job_id: uuid.UUID) -> None:
    """Send "advance job X". If the broker is down the row is safe: the sweeper sends it."""
    try:
        # ignore_result: nobody reads it, and registering for it makes a send with
        # Redis down retry the result store for ~19 s before failing (a hung request).
        send_advance(celery, job_id)
    except Exception:  # broker down: the job row is safe; the sweeper will enqueue it
        trace.get_current_span().add_event("enqueue_failed", {"job_id": str(job_id)})
