"""Bodies of the budget and spend endpoints, and the budget shown on job submission."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from services.api.admin.schemas import EMAIL_PATTERN
from services.api.bodies import RequestBody

SpendBy = Literal["user", "project", "model", "day"]


class _BudgetFields(RequestBody):
    usd: float = Field(ge=0, le=10_000_000, allow_inf_nan=False, description="US$ limit")
    tokens: int | None = Field(default=None, ge=0, le=10**15)
    period: Literal["monthly", "total"] = "monthly"
    reset_day: int = Field(default=1, ge=1, le=28, description="Day of month a period starts")
    soft_threshold: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="Share of the budget past which jobs use the fast tier",
    )


class UserEmailBudget(_BudgetFields):
    user_email: str = Field(pattern=EMAIL_PATTERN, max_length=320)


class UserIdBudget(_BudgetFields):
    user_id: uuid.UUID


class ProjectBudget(_BudgetFields):
    project: str = Field(min_length=1, max_length=200, description="Project name or id")


# Set (create or replace) the budget of exactly one user or one project: each
# variant forbids the others' fields, so a body naming two targets is a 422.
BudgetPut = UserEmailBudget | UserIdBudget | ProjectBudget


class BudgetOut(BaseModel):
    id: uuid.UUID
    scope: Literal["user", "project"]
    user_id: uuid.UUID | None
    user_email: str | None
    project_id: uuid.UUID | None
    project: str | None
    usd_limit: float
    token_limit: int | None
    period: str
    reset_day: int
    soft_threshold: float | None
    period_ends_at: datetime | None
    spent_usd: float
    spent_tokens: int
    reserved_usd: float
    reserved_tokens: int
    usd_remaining: float
    tokens_remaining: int | None
    overrun_usd: float = Field(
        default=0.0,
        description="US$ reported beyond what calls were charged since the budget was last set",
    )
    overrun_at: datetime | None = Field(
        default=None, description="Not null: an overrun happened and further calls are refused"
    )
    paused_jobs: int = Field(default=0, description="Jobs of this budget's target paused for it")
    next_call_usd: float | None = Field(
        default=None,
        description="The largest worst case a paused job's next call needs (US$): a limit "
        "that leaves less than this free resumes nothing",
    )


class BudgetSet(BudgetOut):
    resumed_jobs: list[uuid.UUID] = Field(
        description="Jobs paused as budget_exhausted that this change put back in the queue"
    )


class BudgetList(BaseModel):
    items: list[BudgetOut]


class SpendRow(BaseModel):
    key: str | None = Field(description="User email, project name, model or day (UTC)")
    id: uuid.UUID | None = Field(default=None, description="The user's or project's id")
    calls: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cost_usd: float
    estimated_calls: int = Field(
        default=0, description="Calls billed by a local estimate (the server reported no usage)"
    )


class SpendReport(BaseModel):
    by: SpendBy
    since: datetime | None
    items: list[SpendRow]
    total_usd: float


class BudgetRemaining(BaseModel):
    """What the tightest applicable budget still allows (null fields: no such limit)."""

    usd_remaining: float | None
    tokens_remaining: int | None


class CostEstimate(BaseModel):
    """A rough guess before a survey starts, from its length and the lab's recent spend."""

    model_calls: int
    tokens: int
    cost_usd: float | None = Field(description="null until the spend ledger has any history")
