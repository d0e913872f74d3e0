"""Who may see and change which object.

- **Read** (a job, its steps, events, artifacts and trace; a session and its
  messages): the object's owner, an admin, or any member of the object's
  project.
- **Change** (cancel a job; rename or delete a session): the owner, an
  admin, or an ``owner`` of the object's project. A project member who can
  read but not change an object gets 403 (they already know it exists).
- **Add turns** to a session: its owner only (a turn runs as, and is billed
  to, the session's owner).
- A key **scoped** to a project sees and creates only that project's objects,
  whoever the user is.
- **Membership is current**: an object of a project is read, changed or added
  to only by someone who is a member of that project *now* (or an admin) —
  owning it is not enough. A member removed from a project can no longer read
  her own sessions and jobs there, add turns to them, cancel them or decide
  their approvals; lists leave them out too (``member_or_personal``). Every
  route goes through these helpers, so the check lives here, not in each route.

Anything the caller may not read is reported as missing (404), exactly like
an id that does not exist.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import or_, select, true
from sqlalchemy.orm import Session

from services.api.api_keys import CALLER_INFO, Caller
from services.api.errors import not_found
from services.common.contracts.errors import ServiceError
from services.common.models import ChatSession, Job, Project, ProjectMember, User
from services.common.models.users import PROJECT_ROLES


def parse_id(raw: str, what: str) -> uuid.UUID:
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise not_found(what) from None


def key_scope(db: Session) -> uuid.UUID | None:
    """The project the request's API key is limited to, if any (set by ``deps``)."""
    caller: Caller | None = db.info.get(CALLER_INFO)
    return caller.project_id if caller is not None else None


def project_role(db: Session, *, user_id: uuid.UUID, project_id: uuid.UUID) -> str | None:
    role: str | None = db.scalar(
        select(ProjectMember.role).where(
            ProjectMember.project_id == project_id, ProjectMember.user_id == user_id
        )
    )
    return role


def _role_now(db: Session, user: User, project_id: uuid.UUID | None) -> str | None:
    """The caller's current role in the object's project ("" for a personal object)."""
    if project_id is None:
        return ""
    return project_role(db, user_id=user.id, project_id=project_id)


def may_read(db: Session, user: User, *, owner_id: uuid.UUID, project_id: uuid.UUID | None) -> bool:
    """Admin, or owner or any member of the object's project — a project object's
    owner only while still a member (within the key's scope)."""
    scope = key_scope(db)
    if scope is not None and project_id != scope:
        return False
    if user.is_admin:
        return True
    role = _role_now(db, user, project_id)
    if role is None:  # not (or no longer) a member of the object's project
        return False
    return owner_id == user.id or role in PROJECT_ROLES


def may_change(
    db: Session, user: User, *, owner_id: uuid.UUID, project_id: uuid.UUID | None
) -> bool:
    """Admin, or owner (while still a member) or an ``owner`` of the object's project
    (within the key's scope)."""
    scope = key_scope(db)
    if scope is not None and project_id != scope:
        return False
    if user.is_admin:
        return True
    role = _role_now(db, user, project_id)
    if role is None:
        return False
    return owner_id == user.id or role == "owner"


def member_or_personal(user: User, project_column: Any) -> Any:
    """A list filter: personal objects, and objects of projects the user is a member
    of now (admins: no filter), so lists agree with :func:`may_read`."""
    if user.is_admin:
        return true()
    current = select(ProjectMember.project_id).where(ProjectMember.user_id == user.id)
    return or_(project_column.is_(None), project_column.in_(current))


def _session(db: Session, session_id: str, *, lock: bool) -> ChatSession | None:
    stmt = select(ChatSession).where(
        ChatSession.id == parse_id(session_id, "session"), ChatSession.deleted_at.is_(None)
    )
    if lock:
        stmt = stmt.with_for_update()
    found: ChatSession | None = db.scalar(stmt)
    return found


def owned_session(db: Session, user: User, session_id: str, *, lock: bool = False) -> ChatSession:
    """A session the caller may add turns to: only its owner, and in a project only
    while still a member of it (within the key's scope)."""
    session = _session(db, session_id, lock=lock)
    scope = key_scope(db)
    if (
        session is None
        or session.user_id != user.id
        or (scope is not None and session.project_id != scope)
        or (not user.is_admin and _role_now(db, user, session.project_id) is None)
    ):
        raise not_found("session")
    return session


def visible_session(db: Session, user: User, session_id: str) -> ChatSession:
    session = _session(db, session_id, lock=False)
    if session is None or not may_read(
        db, user, owner_id=session.user_id, project_id=session.project_id
    ):
        raise not_found("session")
    return session


def changeable_session(db: Session, user: User, session_id: str) -> ChatSession:
    """A session the caller may rename or delete; one they may only read answers 403."""
    session = visible_session(db, user, session_id)
    if not may_change(db, user, owner_id=session.user_id, project_id=session.project_id):
        raise ServiceError(403, "forbidden", "only its owner or a project owner may change this")
    return session


def visible_job(db: Session, user: User, job_id: str) -> Job:
    job = db.get(Job, parse_id(job_id, "job"))
    if job is None or not may_read(db, user, owner_id=job.user_id, project_id=job.project_id):
        raise not_found("job")
    return job


def changeable_job(db: Session, user: User, job_id: str) -> Job:
    """A job the caller may cancel or answer; one they may only read answers 403."""
    job = visible_job(db, user, job_id)
    if not may_change(db, user, owner_id=job.user_id, project_id=job.project_id):
        raise ServiceError(
            403, "forbidden", "only its owner or a project owner may change this job"
        )
    return job


def member_project(db: Session, user: User, ref: str) -> Project:
    """A project by name or id that the user belongs to (admins: any), within the key's scope."""
    conditions = [Project.name == ref]
    try:
        conditions.append(Project.id == uuid.UUID(ref))
    except ValueError:
        pass
    project = db.scalar(select(Project).where(or_(*conditions)))
    if project is None:
        raise not_found("project")
    scope = key_scope(db)
    if scope is not None and project.id != scope:
        raise not_found("project")
    if not user.is_admin and project_role(db, user_id=user.id, project_id=project.id) is None:
        raise not_found("project")
    return project


def target_project(db: Session, user: User, ref: str | None) -> Project | None:
    """The project a new object goes into: the one named, else the key's scope, else none."""
    if ref:
        return member_project(db, user, ref)
    scope = key_scope(db)
    return db.get(Project, scope) if scope is not None else None


def require_text(value: str, *, limit: int, what: str) -> str:
    if not value.strip():
        raise ServiceError(422, "invalid_request", f"{what} must not be empty")
    if len(value) > limit:
        raise ServiceError(
            413, "too_large", f"{what} is {len(value)} characters; the limit is {limit}"
        )
    return value
