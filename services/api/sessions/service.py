"""The rules behind the sessions endpoints (flush only; the request boundary commits)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.orm import Session

from services.common.models import ChatSession, Project, User

DEFAULT_TITLE = "New session"


def create_session(
    db: Session,
    *,
    user: User,
    project: Project | None,
    title: str | None,
    system_prompt: str | None,
) -> ChatSession:
    session = ChatSession(
        user_id=user.id,
        project_id=project.id if project else None,
        title=title or DEFAULT_TITLE,
        system_prompt=system_prompt,
    )
    db.add(session)
    db.flush()
    return session


def update_session(
    session: ChatSession, *, title: str | None, system_prompt: str | None
) -> ChatSession:
    """Change only what was given."""
    if title is not None:
        session.title = title
    if system_prompt is not None:
        session.system_prompt = system_prompt
    session.updated_at = datetime.now(UTC)
    return session


def delete_session(session: ChatSession) -> None:
    # Soft delete: jobs and traces that reference it stay inspectable.
    session.deleted_at = datetime.now(UTC)
