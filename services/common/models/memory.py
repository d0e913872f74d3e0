"""Long-term memory: a few named documents per user and per project.

One row per (scope, owner, kind); writes replace the whole document, so a
repeated write (a resumed job) leaves the same row.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal, get_args

from sqlalchemy import DateTime, ForeignKey, String, Text, UniqueConstraint, func
from sqlalchemy.orm import Mapped, mapped_column

from services.common.models.base import Base, new_id

MemoryScope = Literal["user", "project"]
MemoryKind = Literal["profile", "feedback", "notes"]
MEMORY_SCOPES: tuple[str, ...] = get_args(MemoryScope)
MEMORY_KINDS: tuple[str, ...] = get_args(MemoryKind)


class MemoryDocument(Base):
    __tablename__ = "memory_documents"
    __table_args__ = (
        UniqueConstraint("scope", "owner_id", "kind", name="uq_memory_documents_owner_kind"),
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    # A user id or a project id, by scope (no FK: it points at one of two tables).
    scope: Mapped[str] = mapped_column(String(20), nullable=False)
    owner_id: Mapped[uuid.UUID] = mapped_column(nullable=False, index=True)
    kind: Mapped[str] = mapped_column(String(20), nullable=False)
    content: Mapped[str] = mapped_column(Text, default="", nullable=False)
    updated_by_job: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("jobs.id", ondelete="SET NULL")
    )
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
