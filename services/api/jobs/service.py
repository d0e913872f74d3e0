"""Creating jobs: rows in one transaction, the Celery message only after commit."""

from __future__ import annotations

import uuid
from typing import Any

from celery import Celery
from opentelemetry import trace
from sqlalchemy.orm import Session

from services.common.models import ChatSession, Job, Project, User
from services.common.task_names import ADVANCE_TASK, AGENT_QUEUE
from services.common.telemetry import current_trace_id_hex, inject_carrier
from services.common.turns import JobOrigin, create_queued_job, open_session


def _trace_fields() -> dict[str, Any]:
    """The request's trace becomes the job's: every later span joins it."""
    return {"trace_id": current_trace_id_hex(), "trace_context": inject_carrier() or None}


def create_job(
    db: Session,
    *,
    user: User,
    kind: str,
    job_input: dict[str, Any],
    session: ChatSession | None,
    project: Project | None,
    max_turns: int,
    first_message: str | None = None,
) -> Job:
    """A queued job (and its opening message) that joins the request's trace."""
    origin = JobOrigin(
        user_id=user.id, project_id=project.id if project else None, **_trace_fields()
    )
    return create_queued_job(
        db,
        origin=origin,
        kind=kind,
        job_input=job_input,
        session=session,
        max_turns=max_turns,
        first_message=first_message,
    )


def open_job_session(
    db: Session, *, user: User, project: Project | None, title: str
) -> ChatSession:
    origin = JobOrigin(user_id=user.id, project_id=project.id if project else None)
    return open_session(db, origin=origin, title=title)


def enqueue(celery: Celery, job_id: uuid.UUID) -> None:
    """Called after commit. If sending fails, the sweeper sends it later."""
    try:
        celery.send_task(ADVANCE_TASK, args=[str(job_id)], queue=AGENT_QUEUE)
    except Exception:  # broker down: the job row is safe; the sweeper will enqueue it
        trace.get_current_span().add_event("enqueue_failed", {"job_id": str(job_id)})
