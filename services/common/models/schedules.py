"""Schedules: a job body to submit on every slot of a cron expression in a timezone.

Each run is an ordinary job carrying ``schedule_id`` and ``schedule_slot``
(``jobs``), UNIQUE together, so a slot can never produce two jobs. The API's
firing loop (services/api/schedules/firing.py) claims the slot and moves
``next_slot`` on in the same transaction that creates the run.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, DateTime, ForeignKey, Index, String, Text, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from services.common.models.base import Base, Timestamped, new_id


class Schedule(Timestamped, Base):
    """Without a project: runs as, and is billed to, its owner; with one: in that project."""

    __tablename__ = "schedules"
    __table_args__ = (Index("ix_schedules_due", "next_slot", postgresql_where=text("NOT paused")),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    user_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True, nullable=False
    )
    project_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    cron: Mapped[str] = mapped_column(String(200), nullable=False)
    timezone: Mapped[str] = mapped_column(String(100), nullable=False)
    # A POST /v1/jobs body, as validated at creation (and again at every run).
    job: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    paused: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default="false", nullable=False
    )
    # The next slot to run (UTC); after downtime only the latest missed one runs.
    next_slot: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    last_slot: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_run_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Why the last slot made no job (budget exhausted, owner no longer a member, …).
    last_error: Mapped[str | None] = mapped_column(Text)
