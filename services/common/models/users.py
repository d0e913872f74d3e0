"""Who may use Leaflab: users, their API keys, projects and membership."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import Boolean, DateTime, ForeignKey, String, UniqueConstraint, func
from sqlalchemy.orm import Mapped, mapped_column

from services.common.models.base import Base, Timestamped, new_id


class User(Timestamped, Base):
    __tablename__ = "users"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    email: Mapped[str] = mapped_column(String(320), unique=True, nullable=False)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False, nullable=False)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False, nullable=False)


class ApiKey(Timestamped, Base):
    """An API key, stored as a salted SHA-256 hash and found by its visible prefix.

    Keys carry 256 random bits, so one salted SHA-256 makes a leaked table
    useless (no precomputed tables, nothing shared between rows) while checking
    stays cheap: the lookup is one indexed query on ``prefix``, then a
    constant-time comparison of each candidate's hash. Rows written before salts
    existed (``salt`` NULL, plain SHA-256) keep working and are re-hashed with a
    salt the first time they are used. A key may be limited to one project
    (``project_id``) and may expire (``expires_at``).
    """

    __tablename__ = "api_keys"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    user_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True, nullable=False
    )
    key_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    salt: Mapped[str | None] = mapped_column(String(32))
    prefix: Mapped[str] = mapped_column(String(16), index=True, nullable=False)
    name: Mapped[str | None] = mapped_column(String(200))
    project_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Project(Timestamped, Base):
    __tablename__ = "projects"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(200), unique=True, nullable=False)
    allow_network: Mapped[bool] = mapped_column(Boolean, default=False, nullable=False)
    # off | protected | strict; NULL: the deployment's LEAFLAB_APPROVAL_MODE
    approval_mode: Mapped[str | None] = mapped_column(String(20))


PROJECT_ROLES = ("owner", "member")


class ProjectMember(Timestamped, Base):
    """A user's place in a project: ``owner`` (may also change the project's
    objects made by others) or ``member`` (reads them, writes only their own)."""

    __tablename__ = "project_members"
    __table_args__ = (UniqueConstraint("project_id", "user_id"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    project_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True, nullable=False
    )
    user_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True, nullable=False
    )
    role: Mapped[str] = mapped_column(String(20), default="member", nullable=False)


class Invite(Base):
    """A one-time, expiring link that lets a user make their own first API key.

    Only the token's SHA-256 is stored (the token carries 256 random bits, so no
    salt is needed); redeeming it is one conditional UPDATE, so two clicks on the
    same link can never both succeed.
    """

    __tablename__ = "invites"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    user_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True, nullable=False
    )
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    created_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL")
    )
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
