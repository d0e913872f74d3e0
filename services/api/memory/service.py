"""Listing and deciding project memory proposals.

Approving writes the proposed text through the same upsert the memory tool
uses, with its proposer as the author, but only when the document is still
the one the proposal was made against (``base_sha256``): otherwise approving
would silently overwrite a later change, so the proposal ends ``failed`` and
the document is left alone. The proposal row is locked while deciding, so two
owners deciding at once cannot both pass the checks.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.api.errors import not_found
from services.api.memory.schemas import ProposalDecision, ProposalOut
from services.common.contracts.errors import ServiceError
from services.common.memory_writes import content_sha256, write_document
from services.common.models import MemoryDocument, MemoryProposal, Project, User

CHANGED = (
    "not applied: project/{kind} changed after this proposal was made; "
    "approving it would overwrite that change"
)


def _current(db: Session, project_id: uuid.UUID, kind: str) -> str | None:
    content: str | None = db.scalar(
        select(MemoryDocument.content).where(
            MemoryDocument.scope == "project",
            MemoryDocument.owner_id == project_id,
            MemoryDocument.kind == kind,
        )
    )
    return content


def view(db: Session, proposal: MemoryProposal) -> ProposalOut:
    out = ProposalOut.model_validate(proposal)
    author = db.get(User, proposal.proposed_by) if proposal.proposed_by else None
    return out.model_copy(
        update={
            "current": _current(db, proposal.project_id, proposal.kind),
            "proposed_by_email": author.email if author is not None else None,
        }
    )


def list_proposals(db: Session, *, project: Project, status: str | None) -> list[ProposalOut]:
    query = select(MemoryProposal).where(MemoryProposal.project_id == project.id)
    if status is not None:
        query = query.where(MemoryProposal.status == status)
    return [view(db, p) for p in db.scalars(query.order_by(MemoryProposal.created_at))]


def decide(
    db: Session,
    *,
    project: Project,
    proposal_id: uuid.UUID,
    decision: ProposalDecision,
    user: User,
) -> ProposalOut:
    proposal = db.scalar(
        select(MemoryProposal)
        .where(MemoryProposal.id == proposal_id, MemoryProposal.project_id == project.id)
        .with_for_update()
    )
    if proposal is None:
        raise not_found("proposal")
    if proposal.status != "pending":
        raise ServiceError(409, "conflict", f"proposal is already {proposal.status}")
    proposal.decided_by = user.id
    proposal.decided_at = datetime.now(UTC)
    if decision == "reject":
        proposal.status = "rejected"
    else:
        current = _current(db, project.id, proposal.kind)
        now = None if current is None else content_sha256(current)
        if now != proposal.base_sha256:
            proposal.status = "failed"
            proposal.error = CHANGED.format(kind=proposal.kind)
        else:
            write_document(
                db,
                scope="project",
                owner_id=project.id,
                kind=proposal.kind,
                content=proposal.content,
                job_id=proposal.job_id,
                author_id=proposal.proposed_by,
            )
            proposal.status = "approved"
    db.flush()
    return view(db, proposal)
