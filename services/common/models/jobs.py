"""Durable jobs, their step ledger and their artifacts."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    Numeric,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from services.common.contracts.statuses import JobStatus, StepStatus
from services.common.job_states import (  # noqa: F401 - re-exported for the ORM's users
    JOB_KINDS,
    JOB_STATUSES,
    TERMINAL_STATUSES,
    JobStatusName,
)
from services.common.models.base import Base, Timestamped, new_id


class Job(Timestamped, Base):
    __tablename__ = "jobs"
    __table_args__ = (
        Index("ix_jobs_status_lease", "status", "lease_until"),
        # Dispatch: a user's running count (the per-user cap), oldest queued first.
        Index(
            "ix_jobs_user_active",
            "user_id",
            "created_at",
            postgresql_where=text("status IN ('queued', 'running')"),
        ),
        # One job per slot of a schedule, whatever number of processes fire it.
        UniqueConstraint("schedule_id", "schedule_slot", name="uq_jobs_schedule_slot"),
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    user_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True, nullable=False
    )
    project_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("projects.id", ondelete="SET NULL"), index=True
    )
    session_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("sessions.id", ondelete="SET NULL"), index=True
    )
    parent_job_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("jobs.id", ondelete="CASCADE"), index=True
    )
    # A run of a schedule: which one, and for which of its slots (UTC).
    schedule_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("schedules.id", ondelete="SET NULL")
    )
    schedule_slot: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    kind: Mapped[str] = mapped_column(String(20), nullable=False)
    status: Mapped[JobStatus] = mapped_column(String(20), default=JobStatus.QUEUED, nullable=False)
    input: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict, nullable=False)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    error: Mapped[str | None] = mapped_column(Text)
    max_turns: Mapped[int] = mapped_column(Integer, default=30, nullable=False)

    # Lease + fencing: only the holder of the current fence may write.
    lease_owner: Mapped[str | None] = mapped_column(String(200))
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    fence: Mapped[int] = mapped_column(BigInteger, default=0, nullable=False)
    attempts: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    # Slices in a row that ended with their worker lost (killed, crashed, cut off)
    # before the job finished a step: a job that keeps killing its worker is failed
    # after ``max_lost_slices`` of them instead of taking workers down for hours.
    lost_slices: Mapped[int] = mapped_column(Integer, default=0, server_default="0", nullable=False)
    enqueued_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Waiting for a model (``waiting_model``): since when this outage has kept the job
    # from making progress (kept across re-parks until a step finishes), and which
    # endpoints it waits on ({"endpoints": [{"profile", "base_url"}], "last_error"}).
    model_wait_since: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    model_wait: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False, nullable=False)
    # Paused for its budget (``budget_exhausted``): the worst case of the call it could
    # not make, so an admin sees how far a limit must rise (None: an overrun paused it).
    budget_need_usd: Mapped[Decimal | None] = mapped_column(Numeric(14, 6))
    budget_need_tokens: Mapped[int | None] = mapped_column(BigInteger)
    # The number of the job's last ledger step: each new step takes the next one
    # under the job row's lock, so step numbers are unique even when written at once.
    step_seq: Mapped[int] = mapped_column(Integer, default=0, server_default="0", nullable=False)

    trace_id: Mapped[str | None] = mapped_column(String(32), index=True)
    trace_context: Mapped[dict[str, str] | None] = mapped_column(JSONB)
    input_tokens: Mapped[int] = mapped_column(BigInteger, default=0, nullable=False)
    output_tokens: Mapped[int] = mapped_column(BigInteger, default=0, nullable=False)
    cached_tokens: Mapped[int] = mapped_column(BigInteger, default=0, nullable=False)
    cost_usd: Mapped[Decimal] = mapped_column(Numeric(14, 6), default=0, nullable=False)
    # True once any call of the job was billed by a local estimate (no usage reported).
    usage_estimated: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default="false", nullable=False
    )

    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )


class JobStep(Base):
    """One entry of a job's ledger: an LLM call or a tool call.

    ``step_key`` is deterministic (``llm:<round>`` / ``tool:<round>:<call id>``),
    so a resumed job finds what already ran instead of running it again.
    ``intent`` records a file edit's intended post-state before it is applied.
    """

    __tablename__ = "job_steps"
    __table_args__ = (UniqueConstraint("job_id", "step_key", name="uq_job_steps_job_key"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    job_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False
    )
    seq: Mapped[int] = mapped_column(Integer, nullable=False)
    step_key: Mapped[str] = mapped_column(String(300), nullable=False)
    kind: Mapped[str] = mapped_column(String(20), nullable=False)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    round: Mapped[int] = mapped_column(Integer, nullable=False)
    tool_call_id: Mapped[str | None] = mapped_column(String(200))
    status: Mapped[StepStatus] = mapped_column(String(20), nullable=False)
    arguments: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    intent: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    result: Mapped[Any | None] = mapped_column(JSONB)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    executions: Mapped[int] = mapped_column(Integer, default=1, nullable=False)
    fence: Mapped[int] = mapped_column(BigInteger, nullable=False)
    started_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Artifact(Timestamped, Base):
    """A file a job produced (plot, CSV, report), stored in Postgres so that
    services on other hosts can serve it without a shared disk."""

    __tablename__ = "artifacts"
    __table_args__ = (UniqueConstraint("job_id", "name", name="uq_artifacts_job_name"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    job_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("jobs.id", ondelete="CASCADE"), index=True, nullable=False
    )
    name: Mapped[str] = mapped_column(String(500), nullable=False)
    mime: Mapped[str] = mapped_column(String(200), nullable=False)
    size: Mapped[int] = mapped_column(BigInteger, nullable=False)
    sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    content: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
