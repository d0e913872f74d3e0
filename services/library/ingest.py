"""The ingestion pipeline: register an upload, then parse → chunk → embed → store,
recording each status (queued, parsing, embedding, ready, failed + reason)."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.common.db import transaction
from services.common.models import Document
from services.library.chunking import chunk_blocks
from services.library.indexing import index_chunks
from services.library.parsing.isolated import ParseFailed, parse_isolated
from services.library.runtime import LibraryRuntime

log = logging.getLogger(__name__)
PDF_MAGIC = b"%PDF-"


class DocumentMissing(Exception):
    """The task names a document row that does not exist (deleted or never committed)."""


def register_document(
    db: Session,
    *,
    runtime: LibraryRuntime,
    data: bytes,
    filename: str | None,
    collection: str,
    owner_id: uuid.UUID,
    project_id: uuid.UUID | None,
    source_url: str | None = None,
) -> tuple[Document, bool]:
    """Store the file and its row (flush only); returns (document, created)."""
    content_hash = runtime.blobs.digest(data)
    existing = db.scalars(
        select(Document).where(
            Document.collection == collection, Document.content_hash == content_hash
        )
    ).first()
    if existing is not None and existing.status != "failed":
        return existing, False
    runtime.blobs.put(data)
    if existing is not None:  # a failed earlier attempt: try again with the same row
        existing.status, existing.error = "queued", None
        existing.updated_at = datetime.now(UTC)
        return existing, True
    doc = Document(
        collection=collection,
        project_id=project_id,
        owner_id=owner_id,
        content_hash=content_hash,
        filename=filename,
        source_url=source_url,
        status="queued",
    )
    db.add(doc)
    db.flush()
    return doc, True


def _set(runtime: LibraryRuntime, doc_id: uuid.UUID, **values: Any) -> Document:
    with transaction(runtime.session_factory) as db:
        doc = db.get(Document, doc_id)
        if doc is None:
            raise DocumentMissing(f"document {doc_id} not found")
        for key, value in values.items():
            setattr(doc, key, value)
        doc.updated_at = datetime.now(UTC)
        return doc


def ingest_document(runtime: LibraryRuntime, document_id: str) -> str:
    """Run the pipeline for one document; returns its final status. Never raises
    for a bad document: the reason is stored on the row."""
    doc_id = uuid.UUID(document_id)
    doc = _set(runtime, doc_id, status="parsing", error=None)
    try:
        parsed = parse_isolated(runtime.blobs.path(doc.content_hash), runtime.parse_limits)
    except ParseFailed as exc:
        _set(runtime, doc_id, status="failed", error=str(exc))
        return "failed"
    title = parsed.get("title") or doc.filename or "untitled"
    structure = {k: v for k, v in parsed["structure"].items() if k != "references"}
    structure["references"] = parsed["structure"]["references"][:500]
    _set(
        runtime, doc_id, status="embedding", title=title, pages=parsed["pages"], structure=structure
    )
    try:
        chunks = chunk_blocks(
            parsed["blocks"], paper=title, max_tokens=runtime.settings.chunk_max_tokens
        )
        runtime.store.delete_document(document_id)  # a retry replaces, never duplicates
        count = index_chunks(
            chunks,
            document_id=document_id,
            collection=doc.collection,
            title=title,
            filename=doc.filename,
            embedder=runtime.embedder,
            encoder=runtime.encoder,
            store=runtime.store,
            batch=runtime.settings.embedding_batch_size * 2,
        )
    except Exception as exc:
        log.exception("indexing failed for document %s", document_id)
        _set(runtime, doc_id, status="failed", error=f"indexing failed: {exc}")
        return "failed"
    _set(runtime, doc_id, status="ready", chunks=count)
    return "ready"
