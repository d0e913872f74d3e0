"""How a stored file becomes a document of the library: registered, then queued.

:func:`admit_document` is the one way in, for the API's upload and URL routes, the
library service's own route, and the worker's PDF fetch (the agent's tool and the
survey's open-access fetches): it registers the row in its own transaction and
sends ``library.ingest`` only after that commit, so the task always finds the row,
and a file already in the collection is the same document again (never queued twice).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.collections import Collection
from services.common.contracts.statuses import DocumentStatus
from services.common.db import transaction
from services.common.models import Document

# PostgreSQL's SQLSTATE for a unique violation (another request registered the same
# file in the same collection at this moment) and a foreign-key one (the collection's
# project or owner was deleted meanwhile).
_UNIQUE_VIOLATION = "23505"


@dataclass(frozen=True)
class Admitted:
    id: str
    status: DocumentStatus
    collection: Collection
    duplicate: bool  # the collection had this file already; nothing new was queued


class AdmissionFailed(Exception):
    """The row could not be written; ``code`` says why, for each caller's own error shape.

    ``conflict``: the same file is being added at this moment (the next try finds it).
    ``gone``: the collection's project or owner no longer exists.
    """

    def __init__(self, code: Literal["conflict", "gone"], message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def admit_document(
    factory: sessionmaker[Session],
    queue: Callable[[str], None] | None,
    *,
    content_hash: str,
    filename: str | None,
    collection: Collection,
    owner_id: uuid.UUID,
    source_url: str | None = None,
) -> Admitted:
    """Register the stored file ``content_hash`` in ``collection`` and queue its ingestion.

    ``queue`` sends ``library.ingest`` for a document id (``send_ingest`` bound to the
    caller's Celery app; None where nothing consumes it, as in a test of the row).
    """
    try:
        with transaction(factory) as db:
            doc, created = register_document(
                db,
                content_hash=content_hash,
                filename=filename,
                collection=collection,
                owner_id=owner_id,
                project_id=project_of(collection),
                source_url=source_url,
            )
            admitted = Admitted(str(doc.id), doc.status, collection, duplicate=not created)
    except IntegrityError as exc:
        if getattr(exc.orig, "sqlstate", None) == _UNIQUE_VIOLATION:
            raise AdmissionFailed(
                "conflict", "the same document is being added; try again"
            ) from None
        raise AdmissionFailed("gone", f"collection {collection} no longer exists") from None
    if created and queue is not None:  # after commit: the task must find the row
        queue(admitted.id)
    return admitted


def register_document(
    db: Session,
    *,
    content_hash: str,
    filename: str | None,
    collection: Collection,
    owner_id: uuid.UUID,
    project_id: uuid.UUID | None,
    source_url: str | None = None,
) -> tuple[Document, bool]:
    """The row for a stored file (flush only); returns (document, created).

    Same content in the same collection is the same document; a failed earlier
    attempt is queued again (its attempt count starts over).
    """
    existing = db.scalars(
        select(Document).where(
            Document.collection == collection, Document.content_hash == content_hash
        )
    ).first()
    now = datetime.now(UTC)
    if existing is not None and existing.status != DocumentStatus.FAILED:
        return existing, False
    if existing is not None:
        existing.status, existing.error, existing.attempts = DocumentStatus.QUEUED, None, 0
        existing.lease_owner, existing.lease_until, existing.updated_at = None, now, now
        return existing, True
    doc = Document(
        collection=collection,
        project_id=project_id,
        owner_id=owner_id,
        content_hash=content_hash,
        filename=filename,
        source_url=source_url,
        status=DocumentStatus.QUEUED,
        attempts=0,
        lease_until=now,
    )
    db.add(doc)
    db.flush()
    return doc, True


def project_of(collection: Collection) -> uuid.UUID | None:
    """``project:<id>`` → the id; a personal or the lab collection → None."""
    return collection.project_id
