"""Users, keys and projects: the operations behind the admin endpoints and `leaflab up`."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from services.api.api_keys import issue_key
from services.common.models import ApiKey, Project, ProjectMember, User


def create_user(db: Session, *, email: str, is_admin: bool = False) -> User:
    user = User(email=email.strip().lower(), is_admin=is_admin)
    db.add(user)
    db.flush()
    return user


def find_user(db: Session, *, email: str) -> User | None:
    return db.scalar(select(User).where(User.email == email.strip().lower()))


def create_api_key(
    db: Session,
    *,
    user: User,
    name: str | None = None,
    project: Project | None = None,
    expires_at: datetime | None = None,
) -> tuple[ApiKey, str]:
    """Returns the row and the plaintext key, which is never stored and shown only once.

    A key limited to ``project`` requires the user to be a member of it
    (:class:`NotAMember` otherwise): a scope must never widen what a user sees.
    """
    if project is not None and member_role(db, project=project, user=user) is None:
        raise NotAMember(f"{user.email} is not a member of project {project.name}")
    return issue_key(
        db,
        user=user,
        name=name,
        project_id=project.id if project else None,
        expires_at=expires_at,
    )


class NotAMember(Exception):
    """The user does not belong to the project named."""


def member_role(db: Session, *, project: Project, user: User) -> str | None:
    role: str | None = db.scalar(
        select(ProjectMember.role).where(
            ProjectMember.project_id == project.id, ProjectMember.user_id == user.id
        )
    )
    return role


def revoke_api_key(db: Session, *, user_id: uuid.UUID, key_id: uuid.UUID) -> bool:
    row = db.get(ApiKey, key_id)
    if row is None or row.user_id != user_id:
        return False
    if row.revoked_at is None:
        row.revoked_at = datetime.now(UTC)
    return True


def create_project(db: Session, *, name: str, allow_network: bool = False) -> Project:
    project = Project(name=name.strip(), allow_network=allow_network)
    db.add(project)
    db.flush()
    return project


def add_member(db: Session, *, project: Project, user: User, role: str) -> ProjectMember:
    existing = db.scalar(
        select(ProjectMember).where(
            ProjectMember.project_id == project.id, ProjectMember.user_id == user.id
        )
    )
    if existing is not None:
        existing.role = role
        return existing
    member = ProjectMember(project_id=project.id, user_id=user.id, role=role)
    db.add(member)
    db.flush()
    return member


def remove_member(db: Session, *, project: Project, user_id: uuid.UUID) -> bool:
    """Remove a membership; keys of that user scoped to the project stop working
    (they are revoked), since a scope must never outlive the membership."""
    member = db.scalar(
        select(ProjectMember).where(
            ProjectMember.project_id == project.id, ProjectMember.user_id == user_id
        )
    )
    if member is None:
        return False
    db.delete(member)
    db.execute(
        update(ApiKey)
        .where(
            ApiKey.user_id == user_id,
            ApiKey.project_id == project.id,
            ApiKey.revoked_at.is_(None),
        )
        .values(revoked_at=datetime.now(UTC))
    )
    db.flush()
    return True


def project_members(db: Session, *, project: Project) -> list[tuple[ProjectMember, User]]:
    rows = db.execute(
        select(ProjectMember, User)
        .join(User, User.id == ProjectMember.user_id)
        .where(ProjectMember.project_id == project.id)
        .order_by(User.email)
    ).all()
    return [(r.ProjectMember, r.User) for r in rows]


def find_project(db: Session, *, ref: str) -> Project | None:
    """A project by name or id."""
    conditions = [Project.name == ref.strip()]
    try:
        conditions.append(Project.id == uuid.UUID(ref))
    except ValueError:
        pass
    return db.scalar(select(Project).where(or_(*conditions)))


def ensure_admin(db: Session, *, email: str) -> tuple[User, str | None]:
    """The first admin for `leaflab up`: created once; a key only when newly created."""
    user = find_user(db, email=email)
    if user is not None:
        return user, None
    user = create_user(db, email=email, is_admin=True)
    _, key = create_api_key(db, user=user, name="admin (leaflab up)")
    return user, key
