"""Ownership checks: another user's object is reported as missing (404)."""

from __future__ import annotations

import uuid

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from services.api.errors import ApiError, not_found
from services.common.models import ChatSession, Job, Project, ProjectMember, User


def parse_id(raw: str, what: str) -> uuid.UUID:
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise not_found(what) from None


def owned_session(db: Session, user: User, session_id: str, *, lock: bool = False) -> ChatSession:
    stmt = select(ChatSession).where(
        ChatSession.id == parse_id(session_id, "session"),
        ChatSession.user_id == user.id,
        ChatSession.deleted_at.is_(None),
    )
    if lock:
        stmt = stmt.with_for_update()
    session = db.scalar(stmt)
    if session is None:
        raise not_found("session")
    return session


def visible_job(db: Session, user: User, job_id: str) -> Job:
    job = db.get(Job, parse_id(job_id, "job"))
    if job is None or (job.user_id != user.id and not user.is_admin):
        raise not_found("job")
    return job


def member_project(db: Session, user: User, ref: str) -> Project:
    """A project by name or id that the user belongs to (admins: any)."""
    conditions = [Project.name == ref]
    try:
        conditions.append(Project.id == uuid.UUID(ref))
    except ValueError:
        pass
    project = db.scalar(select(Project).where(or_(*conditions)))
    if project is None:
        raise not_found("project")
    if not user.is_admin:
        member = db.scalar(
            select(ProjectMember.id).where(
                ProjectMember.project_id == project.id, ProjectMember.user_id == user.id
            )
        )
        if member is None:
            raise not_found("project")
    return project


def require_text(value: str, *, limit: int, what: str) -> str:
    if not value.strip():
        raise ApiError(422, "invalid_request", f"{what} must not be empty")
    if len(value) > limit:
        raise ApiError(413, "too_large", f"{what} is {len(value)} characters; the limit is {limit}")
    return value
