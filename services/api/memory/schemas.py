"""Proposal views and the decision body."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from services.api.bodies import RequestBody
from services.common.models.memory import ProposalStatus

ProposalDecision = Literal["approve", "reject"]


class ProposalDecide(RequestBody):
    """``approve`` writes the proposed text as the project's document (unless the
    document changed since the proposal was made); ``reject`` drops it."""

    decision: ProposalDecision


class ProposalOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    project_id: uuid.UUID
    kind: str
    content: str = Field(description="the whole proposed document (it replaces the current one)")
    current: str | None = Field(
        default=None, description="the project's document as it is now (null: none yet)"
    )
    proposed_by: uuid.UUID | None
    proposed_by_email: str | None = None
    job_id: uuid.UUID | None
    status: ProposalStatus
    error: str | None
    decided_by: uuid.UUID | None
    decided_at: datetime | None
    created_at: datetime


class ProposalList(BaseModel):
    items: list[ProposalOut]
