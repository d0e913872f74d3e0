"""Creating jobs: rows in one transaction, the Celery message only after commit."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from celery import Celery
from opentelemetry import trace
from sqlalchemy.orm import Session

from services.common.message_seq import next_message_seq
from services.common.models import ChatSession, Job, Message, Project, User
from services.common.task_names import ADVANCE_TASK, AGENT_QUEUE
from services.common.telemetry import current_trace_id_hex, inject_carrier


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
) -> Job:
    job = Job(
        user_id=user.id,
        project_id=project.id if project else (session.project_id if session else None),
        session_id=session.id if session else None,
        kind=kind,
        status="queued",
        input=job_input,
        max_turns=max_turns,
        enqueued_at=datetime.now(UTC),
        **_trace_fields(),
    )
    db.add(job)
    db.flush()
    return job


def append_user_message(db: Session, *, session: ChatSession, job: Job, content: str) -> None:
    db.add(
        Message(
            session_id=session.id,
            job_id=job.id,
            seq=next_message_seq(db, session.id),
            role="user",
            content=content,
        )
    )
    db.flush()


def enqueue(celery: Celery, job_id: uuid.UUID) -> None:
    """Called after commit. If sending fails, the sweeper sends it later."""
    try:
        # ignore_result: nobody reads it, and registering for it makes a send with
        # Redis down retry the result store for ~19 s before failing (a hung request).
        celery.send_task(ADVANCE_TASK, args=[str(job_id)], queue=AGENT_QUEUE, ignore_result=True)
    except Exception:  # broker down: the job row is safe; the sweeper will enqueue it
        trace.get_current_span().add_event("enqueue_failed", {"job_id": str(job_id)})
