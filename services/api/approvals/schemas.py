"""Approval views and the decision body."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from services.api.bodies import NO_NUL, RequestBody
from services.common.models.approvals import ApprovalDecision, ApprovalKind, ApprovalStatus

MAX_FEEDBACK_CHARS = 20_000


class ApprovalDecide(RequestBody):
    """``apply`` runs the call (after re-checking each file's baseline);
    ``request_changes`` sends ``feedback`` to the model instead; ``reject`` drops it."""

    decision: ApprovalDecision
    feedback: str | None = Field(default=None, max_length=MAX_FEEDBACK_CHARS, pattern=NO_NUL)


class ApprovalOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    job_id: uuid.UUID
    step_key: str
    tool_name: str
    kind: ApprovalKind
    status: ApprovalStatus
    diffs: list[dict[str, Any]] = Field(
        description="[{path, tool, diff}] for file writes; [{tool, command}] for commands"
    )
    baselines: dict[str, str | None] = Field(
        description="SHA-256 of each file when the diff was made (null: did not exist)"
    )
    feedback: str | None
    error: str | None
    decided_by: uuid.UUID | None
    decided_at: datetime | None
    resolved_at: datetime | None
    created_at: datetime


class ApprovalList(BaseModel):
    items: list[ApprovalOut]
