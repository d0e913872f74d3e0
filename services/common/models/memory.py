"""Long-term memory: a few named documents per user and per project.

One row per (scope, owner, kind); writes replace the whole document, so a
repeated write (a resumed job) leaves the same row.

Project memory enters the system prompt of every member's project sessions, so
only a project ``owner`` (or an admin) writes it directly; a write by any other
member is a :class:`MemoryProposal` that lands only when an owner approves it.
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
# pending → approved (written to the document) | rejected | failed (the document
# changed after the proposal was made: approving it would overwrite that change)
ProposalStatus = Literal["pending", "approved", "rejected", "failed"]
PROPOSAL_STATUSES: tuple[str, ...] = get_args(ProposalStatus)


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
    # Who wrote the current text (NULL on rows older than this column: the job's user).
    updated_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL")
    )
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )


class MemoryProposal(Base):
    """A project memory write by a member who is not an owner, held for an owner.

    Keyed by (job, step key) like an approval, so a resumed job that repeats
    the write updates its own proposal instead of filing a second one.
    ``base_sha256`` is the document's content hash when the write was made
    (None: no document yet); approving re-checks it.
    """

    __tablename__ = "memory_proposals"
    __table_args__ = (UniqueConstraint("job_id", "step_key", name="uq_memory_proposals_job_step"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    project_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True, nullable=False
    )
    kind: Mapped[str] = mapped_column(String(20), nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    base_sha256: Mapped[str | None] = mapped_column(String(64))
    proposed_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL")
    )
    job_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("jobs.id", ondelete="SET NULL"))
    step_key: Mapped[str] = mapped_column(String(300), nullable=False)
    status: Mapped[str] = mapped_column(String(20), default="pending", nullable=False)
    error: Mapped[str | None] = mapped_column(Text)
    decided_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL")
    )
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
