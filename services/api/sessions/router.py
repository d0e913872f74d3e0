"""Sessions: create, list, rename, delete, read messages, post a turn."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query
from sqlalchemy import or_, select

from services.api.access import (
    changeable_session,
    key_scope,
    member_or_personal,
    owned_session,
    require_text,
    target_project,
    visible_session,
)
from services.api.admin.budgets.remaining import remaining_budget
from services.api.deps import CurrentUser, DbSession, StateDep
from services.api.errors import error_responses
from services.api.jobs import service as jobs
from services.api.sessions import service, workspace
from services.api.sessions.schemas import (
    MessageAccepted,
    MessageCreate,
    MessageList,
    MessageOut,
    SessionBudget,
    SessionCreate,
    SessionList,
    SessionOut,
    SessionPatch,
)
from services.api.sessions.workspace import WorkspaceUsage
from services.common.models import ChatSession, Job, Message

router = APIRouter(prefix="/v1/sessions", tags=["sessions"], responses=error_responses(401, 422))

# Postgres OFFSET is a bigint.
MAX_OFFSET = 2**63 - 1


@router.post("", status_code=201, response_model=SessionOut, responses=error_responses(404, 413))
def create_session(body: SessionCreate, db: DbSession, user: CurrentUser) -> ChatSession:
    project = target_project(db, user, body.project)
    return service.create_session(
        db, user=user, project=project, title=body.title, system_prompt=body.system_prompt
    )


@router.get("", response_model=SessionList)
def list_sessions(
    db: DbSession,
    user: CurrentUser,
    limit: int = Query(50, ge=1, le=500),
    kind: Literal["all", "chat"] = Query(
        "all",
        description="chat: only conversations (no survey, batch-task or subagent sessions)",
    ),
) -> SessionList:
    stmt = select(ChatSession).where(
        ChatSession.user_id == user.id,
        ChatSession.deleted_at.is_(None),
        member_or_personal(user, ChatSession.project_id),
    )
    if kind == "chat":
        # Sessions the platform opened for work, not for talking: a survey's, and a
        # batch task's or a subagent's (their jobs have a parent).
        made_for_work = select(Job.id).where(
            Job.session_id == ChatSession.id,
            or_(Job.kind == "survey", Job.parent_job_id.is_not(None)),
        )
        stmt = stmt.where(~made_for_work.exists())
    scope = key_scope(db)
    if scope is not None:
        stmt = stmt.where(ChatSession.project_id == scope)
    rows = db.scalars(stmt.order_by(ChatSession.updated_at.desc()).limit(limit))
    return SessionList(items=[SessionOut.model_validate(s) for s in rows])


@router.get("/{session_id}", response_model=SessionOut, responses=error_responses(404))
def get_session(session_id: str, db: DbSession, user: CurrentUser) -> ChatSession:
    return visible_session(db, user, session_id)


@router.patch("/{session_id}", response_model=SessionOut, responses=error_responses(403, 404, 413))
def patch_session(
    session_id: str, body: SessionPatch, db: DbSession, user: CurrentUser
) -> ChatSession:
    session = changeable_session(db, user, session_id)
    return service.update_session(session, title=body.title, system_prompt=body.system_prompt)


@router.delete("/{session_id}", status_code=204, responses=error_responses(403, 404))
def delete_session(session_id: str, db: DbSession, user: CurrentUser, state: StateDep) -> None:
    """Soft-deletes the session; its workspace directory is removed from disk."""
    session = changeable_session(db, user, session_id)
    service.delete_session(session)
    workspace.drop_after_commit(db, state.celery, state.settings.sandbox_queue, session.id)


@router.get(
    "/{session_id}/workspace", response_model=WorkspaceUsage, responses=error_responses(404)
)
def get_workspace_usage(
    session_id: str, db: DbSession, user: CurrentUser, state: StateDep
) -> WorkspaceUsage:
    """How much disk the session's workspace uses, against its cap and its owner's."""
    return workspace.usage(db, state.settings, visible_session(db, user, session_id))


@router.get("/{session_id}/budget", response_model=SessionBudget, responses=error_responses(404))
def get_session_budget(session_id: str, db: DbSession, user: CurrentUser) -> SessionBudget:
    """What the tightest budget over the caller's next turn here still allows (the
    chat page's bars are drawn against it); ``budget`` is null when none is set."""
    session = visible_session(db, user, session_id)
    return SessionBudget(
        budget=remaining_budget(db, user_id=user.id, project_id=session.project_id)
    )


@router.get("/{session_id}/messages", response_model=MessageList, responses=error_responses(404))
def list_messages(
    session_id: str,
    db: DbSession,
    user: CurrentUser,
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
    limit: int = Query(200, ge=1, le=1000),
) -> MessageList:
    session = visible_session(db, user, session_id)
    rows = db.scalars(
        select(Message)
        .join(Job, Job.id == Message.job_id)
        .where(Message.session_id == session.id)
        .order_by(Job.created_at, Message.seq)
        .offset(offset)
        .limit(limit)
    )
    return MessageList(items=[MessageOut.model_validate(m) for m in rows])


@router.post(
    "/{session_id}/messages",
    status_code=202,
    response_model=MessageAccepted,
    responses=error_responses(404, 413),
)
def post_message(
    session_id: str, body: MessageCreate, db: DbSession, user: CurrentUser, state: StateDep
) -> MessageAccepted:
    """Queue a turn: the message joins the session and the agent answers it as a job."""
    content = require_text(body.content, limit=state.settings.max_message_chars, what="content")
    session = owned_session(db, user, session_id, lock=True)
    job = jobs.post_turn(
        db,
        celery=state.celery,
        user=user,
        session=session,
        content=content,
        max_turns=body.max_turns or state.settings.max_turns_default,
    )
    budget = remaining_budget(db, user_id=user.id, project_id=job.project_id)
    return MessageAccepted(job_id=job.id, id=job.id, status=job.status, budget=budget)
