"""Users, keys and projects: the operations behind the admin endpoints and `leaflab up`."""

from __future__ import annotations

import secrets
import uuid
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.api.deps import hash_key
from services.common.models import ApiKey, Project, ProjectMember, User

KEY_PREFIX = "lf_"


def new_api_key() -> str:
    # 32 random bytes = 256 bits, URL-safe.
    return KEY_PREFIX + secrets.token_urlsafe(32)


def create_user(db: Session, *, email: str, is_admin: bool = False) -> User:
    user = User(email=email.strip().lower(), is_admin=is_admin)
    db.add(user)
    db.flush()
    return user


def find_user(db: Session, *, email: str) -> User | None:
    return db.scalar(select(User).where(User.email == email.strip().lower()))


def create_api_key(db: Session, *, user: User, name: str | None = None) -> tuple[ApiKey, str]:
    """Returns the row and the plaintext key, which is never stored and shown only once."""
    key = new_api_key()
    row = ApiKey(user_id=user.id, key_hash=hash_key(key), prefix=key[:10], name=name)
    db.add(row)
    db.flush()
    return row, key


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


def ensure_admin(db: Session, *, email: str) -> tuple[User, str | None]:
    """The first admin for `leaflab up`: created once; a key only when newly created."""
    user = find_user(db, email=email)
    if user is not None:
        return user, None
    user = create_user(db, email=email, is_admin=True)
    _, key = create_api_key(db, user=user, name="admin (leaflab up)")
    return user, key
