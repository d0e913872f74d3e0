"""What a queued job is, as rows, and which queued turn of a session runs next.

The API (a new message, a submitted job) and the worker (a batch task, later a
subagent) both create queued jobs, and both wake a session's next turn (after
a cancel, after a finish). These are data rules — which rows, in which order,
make a valid queued turn — so they live in the shared kernel beside the ORM
models, where every service may import them. Service logic stays with each
caller: authorisation and input checks in the API, the lease and the ledger in
the worker, and sending the Celery message after its own commit.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.common.message_seq import next_message_seq
from services.common.models import ChatSession, Job, Message


@dataclass(frozen=True)
class JobOrigin:
    """Who a new job belongs to and which trace it joins."""

    user_id: uuid.UUID
    project_id: uuid.UUID | None = None
    parent_job_id: uuid.UUID | None = None
    trace_id: str | None = None
    trace_context: dict[str, str] | None = None
    # A run of a schedule: the schedule and the slot (UTC) it runs for; the pair is
    # unique among jobs (migration ``schedules``).
    schedule_id: uuid.UUID | None = None
    schedule_slot: datetime | None = None


# The seq of a session's first message.
FIRST_MESSAGE_SEQ = 1


def open_session(db: Session, *, origin: JobOrigin, title: str) -> ChatSession:
    """A new, empty session (the chat page's "New session")."""
    return _new_session(db, origin=origin, title=title, message_seq=0)


def _new_session(db: Session, *, origin: JobOrigin, title: str, message_seq: int) -> ChatSession:
    session = ChatSession(
        user_id=origin.user_id, project_id=origin.project_id, title=title, message_seq=message_seq
    )
    db.add(session)
    db.flush()
    return session


def create_job_in_new_session(
    db: Session,
    *,
    origin: JobOrigin,
    title: str,
    kind: str,
    job_input: dict[str, Any],
    max_turns: int,
    first_message: str | None = None,
) -> Job:
    """A queued job in a session opened for it, with its opening user message if any.

    The message's seq is handed out in the session's own INSERT: nobody else can
    number a message in a session that is not committed yet, so the ``UPDATE …
    RETURNING`` of ``next_message_seq`` (one statement per submission) is not
    needed. The reservation and the message it is for are made here together,
    so no caller can reserve a seq and then not use it (or the reverse).
    """
    session = _new_session(
        db,
        origin=origin,
        title=title,
        message_seq=FIRST_MESSAGE_SEQ if first_message is not None else 0,
    )
    job = _queued_job(db, origin, kind, job_input, session, max_turns)
    if first_message is not None:
        _opening_message(db, session, job, first_message, FIRST_MESSAGE_SEQ)
    return job


def create_queued_job(
    db: Session,
    *,
    origin: JobOrigin,
    kind: str,
    job_input: dict[str, Any],
    session: ChatSession | None,
    max_turns: int,
    first_message: str | None = None,
) -> Job:
    """A ``queued`` job row and, for a job with a session, its opening user message.

    ``session`` is an existing one (its next seq is taken) or ``None``; a job
    that needs a session of its own is ``create_job_in_new_session``.

    Flushes only: the caller's transaction boundary commits, and the caller sends
    the Celery message after that commit (or the sweeper does).
    """
    job = _queued_job(db, origin, kind, job_input, session, max_turns)
    if session is not None and first_message is not None:
        _opening_message(db, session, job, first_message, next_message_seq(db, session.id))
    return job


def _queued_job(
    db: Session,
    origin: JobOrigin,
    kind: str,
    job_input: dict[str, Any],
    session: ChatSession | None,
    max_turns: int,
) -> Job:
    job = Job(
        user_id=origin.user_id,
        project_id=origin.project_id or (session.project_id if session else None),
        session_id=session.id if session else None,
        parent_job_id=origin.parent_job_id,
        kind=kind,
        status="queued",
        input=job_input,
        max_turns=max_turns,
        enqueued_at=datetime.now(UTC),
        trace_id=origin.trace_id,
        trace_context=origin.trace_context,
        schedule_id=origin.schedule_id,
        schedule_slot=origin.schedule_slot,
    )
    db.add(job)
    db.flush()
    return job


def _opening_message(db: Session, session: ChatSession, job: Job, content: str, seq: int) -> None:
    """The user message a job opens its turn with, at the seq its caller holds."""
    db.add(Message(session_id=session.id, job_id=job.id, seq=seq, role="user", content=content))
    db.flush()


def next_queued_turn(
    db: Session, *, session_id: uuid.UUID, after: uuid.UUID | None = None
) -> uuid.UUID | None:
    """The session's oldest queued job (turns of one session run in creation order)."""
    stmt = select(Job.id).where(Job.session_id == session_id, Job.status == "queued")
    if after is not None:
        stmt = stmt.where(Job.id != after)
    return db.scalar(stmt.order_by(Job.created_at).limit(1))
