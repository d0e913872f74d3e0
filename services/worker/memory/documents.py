"""Reading and replacing memory documents (the only rows the memory tool may write)."""

from __future__ import annotations

import uuid

from sqlalchemy import Engine, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from services.common.models import MemoryDocument
from services.common.one_statement import OneStatement, rows_of

MAX_MEMORY_CHARS = 8_000
TITLES = {
    ("user", "profile"): "About the user",
    ("user", "feedback"): "The user's feedback on how to work",
    ("user", "notes"): "The user's notes",
    ("project", "profile"): "About the project",
    ("project", "feedback"): "Feedback on work in this project",
    ("project", "notes"): "Project notes",
}


def owner_of(scope: str, *, user_id: uuid.UUID, project_id: uuid.UUID | None) -> uuid.UUID | None:
    return user_id if scope == "user" else project_id


DOCUMENTS_SQL = text(
    """
    SELECT id, scope, owner_id, kind, content, updated_by_job, updated_at
      FROM memory_documents
     WHERE (scope = 'user' AND owner_id = :user_id)
        OR (scope = 'project' AND owner_id = CAST(:project_id AS uuid))
    """
)
_DOCUMENTS = OneStatement(DOCUMENTS_SQL)


def read_documents(
    db: Session | Engine, *, user_id: uuid.UUID, project_id: uuid.UUID | None
) -> list[MemoryDocument]:
    """The user's documents, then the project's, in a fixed order (detached objects)."""
    rows = rows_of(db, _DOCUMENTS, {"user_id": user_id, "project_id": project_id})
    docs = [MemoryDocument(**row._asdict()) for row in rows]
    return sorted(docs, key=lambda d: (d.scope != "user", d.kind))


def write_document(
    db: Session,
    *,
    scope: str,
    owner_id: uuid.UUID,
    kind: str,
    content: str,
    job_id: uuid.UUID | None,
) -> None:
    """Replace one document (created if missing): repeating the write changes nothing."""
    stmt = insert(MemoryDocument).values(
        id=uuid.uuid4(),
        scope=scope,
        owner_id=owner_id,
        kind=kind,
        content=content,
        updated_by_job=job_id,
    )
    db.execute(
        stmt.on_conflict_do_update(
            constraint="uq_memory_documents_owner_kind",
            set_={
                "content": content,
                "updated_by_job": job_id,
                "updated_at": stmt.excluded.updated_at,
            },
        )
    )


def render_memory(documents: list[MemoryDocument]) -> str:
    """The memory section of the system prompt ('' when there is nothing yet)."""
    parts = [
        f"## {TITLES.get((d.scope, d.kind), d.kind)} ({d.scope}/{d.kind})\n{d.content.strip()}"
        for d in documents
        if d.content.strip()
    ]
    if not parts:
        return ""
    return "Long-term memory (update it with the memory tool):\n" + "\n\n".join(parts)
