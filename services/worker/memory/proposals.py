"""Filing a project memory write by a member who is not an owner, for an owner to decide.

The write does not reach ``memory_documents``: it waits as a ``memory_proposals``
row that a project owner approves or rejects (``/v1/projects/{p}/memory/proposals``).
The job goes on at once — an owner may answer days later — and the model is told
the text is not in memory yet. Keyed by (job, step key): a resumed job repeating
the call finds its proposal and files no second one.
"""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from services.common.memory_writes import content_sha256
from services.common.models import MemoryDocument, MemoryProposal


def propose(
    db: Session,
    *,
    project_id: uuid.UUID,
    kind: str,
    content: str,
    user_id: uuid.UUID,
    job_id: uuid.UUID,
    step_key: str,
) -> uuid.UUID:
    """The proposal's id (the existing one when this step already filed it)."""
    current = db.scalar(
        select(MemoryDocument.content).where(
            MemoryDocument.scope == "project",
            MemoryDocument.owner_id == project_id,
            MemoryDocument.kind == kind,
        )
    )
    db.execute(
        insert(MemoryProposal)
        .values(
            id=uuid.uuid4(),
            project_id=project_id,
            kind=kind,
            content=content,
            base_sha256=None if current is None else content_sha256(current),
            proposed_by=user_id,
            job_id=job_id,
            step_key=step_key,
            status="pending",
        )
        .on_conflict_do_nothing(constraint="uq_memory_proposals_job_step")
    )
    found = db.scalar(
        select(MemoryProposal.id).where(
            MemoryProposal.job_id == job_id, MemoryProposal.step_key == step_key
        )
    )
    assert found is not None
    return found
