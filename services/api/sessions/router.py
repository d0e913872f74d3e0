"""Sessions: create, list, rename, delete, read messages, post a turn."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Query
from sqlalchemy import select

from services.api.access import member_project, owned_session, require_text
from services.api.deps import CurrentUser, DbSession, StateDep
from services.api.jobs import service as jobs
from services.api.sessions.schemas import (
    MessageCreate,
    MessageOut,
    SessionCreate,
    SessionOut,
    SessionPatch,
)
from services.common.models import ChatSession, Job, Message

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])


@router.post("", status_code=201, response_model=SessionOut)
def create_session(body: SessionCreate, db: DbSession, user: CurrentUser) -> ChatSession:
    project = member_project(db, user, body.project) if body.project else None
    session = ChatSession(
        user_id=user.id,
        project_id=project.id if project else None,
        title=body.title or "New session",
        system_prompt=body.system_prompt,
    )
    db.add(session)
    db.flush()
    return session


@router.get("")
def list_sessions(
    db: DbSession, user: CurrentUser, limit: int = Query(50, ge=1, le=500)
) -> dict[str, Any]:
    rows = db.scalars(
        select(ChatSession)
        .where(ChatSession.user_id == user.id, ChatSession.deleted_at.is_(None))
        .order_by(ChatSession.updated_at.desc())
        .limit(limit)
    )
    return {"items": [SessionOut.model_validate(s).model_dump(mode="json") for s in rows]}


@router.get("/{session_id}", response_model=SessionOut)
def get_session(session_id: str, db: DbSession, user: CurrentUser) -> ChatSession:
    return owned_session(db, user, session_id)


@router.patch("/{session_id}", response_model=SessionOut)
def patch_session(
    session_id: str, body: SessionPatch, db: DbSession, user: CurrentUser
) -> ChatSession:
    session = owned_session(db, user, session_id)
    if body.title is not None:
        session.title = body.title
    if body.system_prompt is not None:
        session.system_prompt = body.system_prompt
    session.updated_at = datetime.now(UTC)
    return session


@router.delete("/{session_id}", status_code=204)
def delete_session(session_id: str, db: DbSession, user: CurrentUser) -> None:
    session = owned_session(db, user, session_id)
    # Soft delete: jobs and traces that reference it stay inspectable.
    session.deleted_at = datetime.now(UTC)


@router.get("/{session_id}/messages")
def list_messages(
    session_id: str,
    db: DbSession,
    user: CurrentUser,
    offset: int = Query(0, ge=0),
    limit: int = Query(200, ge=1, le=1000),
) -> dict[str, Any]:
    session = owned_session(db, user, session_id)
    rows = db.scalars(
        select(Message)
        .join(Job, Job.id == Message.job_id)
        .where(Message.session_id == session.id)
        .order_by(Job.created_at, Message.seq)
        .offset(offset)
        .limit(limit)
    )
    return {"items": [MessageOut.model_validate(m).model_dump(mode="json") for m in rows]}


@router.post("/{session_id}/messages", status_code=202)
def post_message(
    session_id: str, body: MessageCreate, db: DbSession, user: CurrentUser, state: StateDep
) -> dict[str, Any]:
    content = require_text(body.content, limit=state.settings.max_message_chars, what="content")
    session = owned_session(db, user, session_id, lock=True)
    job = jobs.create_job(
        db,
        user=user,
        kind="turn",
        job_input={"content": content},
        session=session,
        project=None,
        max_turns=body.max_turns or state.settings.max_turns_default,
        first_message=content,
    )
    db.commit()
    jobs.enqueue(state.celery, job.id)
    return {"job_id": str(job.id), "id": str(job.id), "status": job.status}
