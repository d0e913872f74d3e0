"""Replacing a memory document: the one write the worker (memory tool) and the API
(an owner approving a member's proposal) share."""

from __future__ import annotations

import hashlib
import uuid

from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from services.common.models import MemoryDocument


def content_sha256(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def write_document(
    db: Session,
    *,
    scope: str,
    owner_id: uuid.UUID,
    kind: str,
    content: str,
    job_id: uuid.UUID | None,
    author_id: uuid.UUID | None,
) -> None:
    """Replace one document (created if missing): repeating the write changes nothing.

    ``author_id`` is whoever wrote the text (for an approved proposal: the member
    who proposed it); the prompt quotes the document under that name."""
    stmt = insert(MemoryDocument).values(
        id=uuid.uuid4(),
        scope=scope,
        owner_id=owner_id,
        kind=kind,
        content=content,
        updated_by_job=job_id,
        updated_by=author_id,
    )
    db.execute(
        stmt.on_conflict_do_update(
            constraint="uq_memory_documents_owner_kind",
            set_={
                "content": content,
                "updated_by_job": job_id,
                "updated_by": author_id,
                "updated_at": stmt.excluded.updated_at,
            },
        )
    )
