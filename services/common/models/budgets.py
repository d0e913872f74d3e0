"""Budgets per user and per project, the reservations held against them, and the spend ledger.

A budget row carries its own running totals (``spent_*`` and ``reserved_*``):
the worker reserves a call's worst case against every applicable row in one
statement and settles it afterwards, so ``spent + reserved`` never exceeds the
limit (services/worker/spine/budget/). The spend ledger is the record of what each
settled model call was charged. A settlement never charges past the limit:
what a server reported beyond it (a reply longer than ``max_tokens``, a prompt
larger than the reservation's estimate) is an overrun row, not spend, and a
budget with an overrun refuses further calls until an admin sets it again.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from typing import Literal, get_args

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    Numeric,
    String,
    Uuid,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Mapped, mapped_column

from services.common.models.base import Base, Timestamped, new_id

BudgetPeriod = Literal["monthly", "total"]
BUDGET_PERIODS: tuple[str, ...] = get_args(BudgetPeriod)
BudgetScope = Literal["user", "project"]


class Budget(Timestamped, Base):
    """At most one budget per user and one per project (partial unique indexes)."""

    __tablename__ = "budgets"
    __table_args__ = (
        CheckConstraint(
            "(scope = 'user' AND user_id IS NOT NULL AND project_id IS NULL) OR "
            "(scope = 'project' AND project_id IS NOT NULL AND user_id IS NULL)",
            name="one_owner",
        ),
        Index("uq_budgets_user", "user_id", unique=True, postgresql_where=text("scope = 'user'")),
        Index(
            "uq_budgets_project",
            "project_id",
            unique=True,
            postgresql_where=text("scope = 'project'"),
        ),
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    scope: Mapped[str] = mapped_column(String(10), nullable=False)
    user_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    project_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE")
    )
    usd_limit: Mapped[Decimal] = mapped_column(Numeric(14, 6), nullable=False)
    token_limit: Mapped[int | None] = mapped_column(BigInteger)
    period: Mapped[str] = mapped_column(String(10), default="monthly", nullable=False)
    reset_day: Mapped[int] = mapped_column(Integer, default=1, nullable=False)
    # NULL: the worker default (LEAFLAB_BUDGET_SOFT_THRESHOLD).
    soft_threshold: Mapped[float | None] = mapped_column(Float)
    # A monthly budget's spend starts again at this instant (NULL for "total").
    period_ends_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    spent_usd: Mapped[Decimal] = mapped_column(Numeric(14, 6), default=0, nullable=False)
    spent_tokens: Mapped[int] = mapped_column(BigInteger, default=0, nullable=False)
    reserved_usd: Mapped[Decimal] = mapped_column(Numeric(14, 6), default=0, nullable=False)
    reserved_tokens: Mapped[int] = mapped_column(BigInteger, default=0, nullable=False)
    # US$ reported past what a call could be charged since an admin last set the
    # budget; above zero, every further call is refused (services/worker/spine/budget/).
    overrun_usd: Mapped[Decimal] = mapped_column(
        Numeric(14, 6), default=0, server_default="0", nullable=False
    )
    # When the first overrun since the admin last set the budget happened (in US$ or
    # in tokens); not NULL refuses every further reservation.
    overrun_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )

    def spent_now(self, now: datetime) -> tuple[Decimal, int]:
        """(US$, tokens) spent in the current period: a monthly period that ended counts
        as zero even before the next reservation rolls the row over."""
        if self.period == "monthly" and self.period_ends_at and self.period_ends_at <= now:
            return Decimal(0), 0
        return self.spent_usd, self.spent_tokens


class BudgetReservation(Base):
    """A worst case held for one in-flight model call of a job (under one fence).

    Deleted when the call settles; the sweeper deletes (and gives back) those
    whose job no longer holds the lease they were made under.
    """

    __tablename__ = "budget_reservations"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    job_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("jobs.id", ondelete="SET NULL"), index=True
    )
    fence: Mapped[int] = mapped_column(BigInteger, nullable=False)
    budget_ids: Mapped[list[uuid.UUID]] = mapped_column(ARRAY(Uuid), nullable=False)
    usd: Mapped[Decimal] = mapped_column(Numeric(14, 6), nullable=False)
    tokens: Mapped[int] = mapped_column(BigInteger, nullable=False)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )


class SpendRecord(Base):
    """One settled model call: who, for what job, which model, tokens and dollars."""

    __tablename__ = "spend"
    __table_args__ = (Index("ix_spend_created_at", "created_at"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    user_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), index=True
    )
    project_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("projects.id", ondelete="SET NULL"), index=True
    )
    job_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("jobs.id", ondelete="SET NULL"), index=True
    )
    model: Mapped[str] = mapped_column(String(200), nullable=False)
    input_tokens: Mapped[int] = mapped_column(BigInteger, default=0, nullable=False)
    output_tokens: Mapped[int] = mapped_column(BigInteger, default=0, nullable=False)
    cached_tokens: Mapped[int] = mapped_column(BigInteger, default=0, nullable=False)
    cost_usd: Mapped[Decimal] = mapped_column(Numeric(14, 6), nullable=False)
    # True: the endpoint reported no usage, the tokens (and cost) are a local estimate.
    estimated: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default="false", nullable=False
    )
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )


class BudgetOverrun(Base):
    """What one settled call was reported to cost beyond what it was charged.

    One row per budget the call was charged to (``budget_id`` NULL for a caller
    without budgets); ``reason`` is ``max_tokens`` when the clamp to the
    request's ``max_tokens`` cut the charge, ``limit`` when the budget's room did.
    """

    __tablename__ = "budget_overruns"
    __table_args__ = (Index("ix_budget_overruns_created_at", "created_at"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    budget_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("budgets.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    project_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("projects.id", ondelete="SET NULL")
    )
    job_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("jobs.id", ondelete="SET NULL"), index=True
    )
    model: Mapped[str] = mapped_column(String(200), nullable=False)
    reason: Mapped[str] = mapped_column(String(20), nullable=False)
    reported_usd: Mapped[Decimal] = mapped_column(Numeric(14, 6), nullable=False)
    charged_usd: Mapped[Decimal] = mapped_column(Numeric(14, 6), nullable=False)
    overrun_usd: Mapped[Decimal] = mapped_column(Numeric(14, 6), nullable=False)
    reported_tokens: Mapped[int] = mapped_column(BigInteger, nullable=False)
    charged_tokens: Mapped[int] = mapped_column(BigInteger, nullable=False)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
