"""Sandbox executions, keyed by (job, tool call) so a redelivered exec never runs twice."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, ForeignKey, String, func
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from services.common.contracts.statuses import ExecutionStatus
from services.common.models.base import Base


class SandboxExecution(Base):
    """One ``sandbox.exec`` by tool call.

    ``exec_key`` is ``<job id>:<tool_call_id>``: tool call ids are only unique
    within a conversation. ``status`` is running → finished | interrupted; a
    running row whose ``deadline_at`` passed belongs to a worker that died.
    """

    __tablename__ = "sandbox_executions"

    exec_key: Mapped[str] = mapped_column(String(300), primary_key=True)
    job_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("jobs.id", ondelete="CASCADE"), index=True
    )
    tool_call_id: Mapped[str] = mapped_column(String(200), nullable=False)
    status: Mapped[ExecutionStatus] = mapped_column(String(20), nullable=False)
    owner: Mapped[str] = mapped_column(String(200), nullable=False)
    deadline_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
