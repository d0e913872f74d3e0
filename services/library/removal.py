"""Deleting a library document: its row, references, vectors, stored file and
progress stream — never while it is being ingested.

Guarantee: once the delete answers, search returns none of the document's
passages and nothing reads its row. The row is locked (``FOR UPDATE``) and its
vectors are deleted while the lock is held, and only then is the row deleted in
the same transaction: if the store fails, the transaction rolls back and the
document stays whole (a retry deletes it); the row never disappears while its
vectors stay searchable.

A document still in flight (queued, parsing, embedding) is refused with 409
rather than cancelled. Ingestion upserts vectors batch by batch without
checking its lease between batches, so deleting under a running worker would
let its next batch land after the vectors were removed — passages of a document
that no longer exists. The lock closes the other race: ``lease.claim`` only
takes rows in flight, and a ready or failed row locked here cannot become one
until the delete has committed (after which it is gone).

The stored file is content-addressed and shared by every document with the
same content (the same paper in two collections), so it is removed only when
no other document names it.
"""

from __future__ import annotations

import logging
import uuid

import redis
from sqlalchemy import delete, func, select

from services.common.contracts import keys
from services.common.contracts.errors import ServiceError
from services.common.db import transaction
from services.common.documents.collections import may_remove
from services.common.models import Document
from services.library.access import Caller
from services.library.lease import IN_FLIGHT
from services.library.runtime import LibraryRuntime

log = logging.getLogger(__name__)


def remove_document(runtime: LibraryRuntime, *, who: Caller, document_id: str) -> None:
    """Delete the document for ``who``: 404 if they cannot read it, 403 if they may
    read but not delete it, 409 while it is being ingested, 503 if the store fails."""
    try:
        ident = uuid.UUID(document_id)
    except ValueError:
        raise ServiceError(404, "not_found", "document not found") from None
    with transaction(runtime.session_factory) as db:
        doc = db.scalar(select(Document).where(Document.id == ident).with_for_update())
        if doc is None or doc.collection not in who.collections:
            raise ServiceError(404, "not_found", "document not found")
        if not may_remove(db, user_id=who.user_id, doc=doc):
            raise ServiceError(
                403,
                "forbidden",
                "only the document's uploader, an owner of its project or an admin may delete it",
            )
        if doc.status in IN_FLIGHT:
            raise ServiceError(
                409,
                "document_ingesting",
                f"the document is still being ingested (status {doc.status}); "
                "delete it once it is ready or failed",
            )
        content_hash = doc.content_hash
        try:
            runtime.store.delete_document(str(ident))
        except Exception as exc:  # the row stays (rolled back): a retry deletes both
            log.error("library: deleting vectors of %s failed (%s)", ident, type(exc).__name__)
            raise ServiceError(
                503, "store_unavailable", "the vector store did not delete the passages; retry"
            ) from None
        # References cascade; references elsewhere that cite it are unlinked (SET NULL).
        db.execute(delete(Document).where(Document.id == ident))
        still_used = db.scalar(
            select(func.count()).select_from(Document).where(Document.content_hash == content_hash)
        )
    if not still_used:
        runtime.blobs.remove(content_hash)
    _drop_stream(runtime, str(ident))
    log.info("library: document %s deleted by user %s", ident, who.user_id)


def _drop_stream(runtime: LibraryRuntime, document_id: str) -> None:
    """The progress stream is a view of a row that is gone; it would expire anyway."""
    if runtime.redis is None:
        return
    try:
        runtime.redis.delete(keys.document_stream(document_id))
    except redis.RedisError:
        log.warning("library: progress stream of deleted document %s left to expire", document_id)
