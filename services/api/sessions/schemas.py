"""Request and response bodies for sessions and messages."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from services.api.admin.budgets.schemas import BudgetRemaining
from services.api.bodies import NOT_BLANK, RequestBody


class SessionCreate(RequestBody):
    title: str | None = Field(default=None, max_length=500)
    project: str | None = Field(default=None, max_length=200)
    system_prompt: str | None = Field(default=None, max_length=50_000)


class SessionPatch(RequestBody):
    title: str | None = Field(default=None, min_length=1, max_length=500)
    system_prompt: str | None = Field(default=None, max_length=50_000)


class SessionOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: uuid.UUID
    title: str
    project_id: uuid.UUID | None
    todos: list[dict[str, Any]]
    created_at: datetime
    updated_at: datetime


class SessionList(BaseModel):
    items: list[SessionOut]


class MessageCreate(RequestBody):
    content: str = Field(pattern=NOT_BLANK, description="Not blank; over the limit is a 413")
    max_turns: int | None = Field(default=None, ge=1, le=500)


class MessageAccepted(BaseModel):
    job_id: uuid.UUID
    id: uuid.UUID = Field(description="The job's id again (same as job_id)")
    status: str
    budget: BudgetRemaining | None = Field(
        default=None, description="What the tightest applicable budget still allows; null: none"
    )


class MessageOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: uuid.UUID
    job_id: uuid.UUID | None
    seq: int
    role: str
    content: str | None
    model_content: str | None
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str | None
    name: str | None
    created_at: datetime


class MessageList(BaseModel):
    items: list[MessageOut]


class SessionBudget(BaseModel):
    budget: BudgetRemaining | None = Field(
        description="The tightest of the caller's and the session's project budgets; null: none"
    )
