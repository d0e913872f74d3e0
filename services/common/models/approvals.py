"""Approvals: a human decision a job waits for before a gated tool call runs.

One row per gated tool call, keyed by (job, step key), so a resumed job finds
the approval it already asked for instead of asking twice. ``diffs`` holds
what the human reviews; ``baselines`` the SHA-256 of each file as it was when
the diff was made (None: the file did not exist), re-checked before applying.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal, get_args

from sqlalchemy import DateTime, ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from services.common.models.base import Base, Timestamped, new_id

ApprovalKind = Literal["file_write", "command", "exec_changes"]
# pending → approved → applied | failed (baseline changed); or changes_requested |
# rejected; cancelled when the job is cancelled while it waits
ApprovalStatus = Literal[
    "pending", "approved", "applied", "failed", "changes_requested", "rejected", "cancelled"
]
APPROVAL_STATUSES: tuple[str, ...] = get_args(ApprovalStatus)
ApprovalDecision = Literal["apply", "request_changes", "reject"]
# What each decision sets the approval's status to.
DECISION_STATUS: dict[str, str] = {
    "apply": "approved",
    "request_changes": "changes_requested",
    "reject": "rejected",
}


class Approval(Timestamped, Base):
    __tablename__ = "approvals"
    __table_args__ = (UniqueConstraint("job_id", "step_key", name="uq_approvals_job_step"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    job_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("jobs.id", ondelete="CASCADE"), index=True, nullable=False
    )
    step_key: Mapped[str] = mapped_column(String(300), nullable=False)
    tool_name: Mapped[str] = mapped_column(String(200), nullable=False)
    kind: Mapped[str] = mapped_column(String(20), nullable=False)
    # [{path, diff}] for file writes; [{command}] for shell/python commands; for
    # exec_changes [{command, output}, {path, change, held, diff}, …]
    diffs: Mapped[list[dict[str, Any]]] = mapped_column(JSONB, default=list, nullable=False)
    # {path: sha256 | None} as the files were when the diffs were made
    baselines: Mapped[dict[str, str | None]] = mapped_column(JSONB, default=dict, nullable=False)
    status: Mapped[str] = mapped_column(String(20), default="pending", nullable=False)
    feedback: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    decided_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL")
    )
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    resolved_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
