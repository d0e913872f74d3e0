"""Documents: accept an upload or URL (stored, registered, queued), list, read, delete."""

from __future__ import annotations

import asyncio
import logging
import uuid
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from sqlalchemy import select

from services.common.contracts.collections import Collection
from services.common.contracts.errors import ServiceError
from services.common.contracts.tasks import send_ingest
from services.common.db import transaction
from services.common.documents.admission import AdmissionFailed, admit_document
from services.common.documents.intake import (
    read_json_body,
    receive_pdf,
    safe_filename,
    url_key,
)
from services.common.models import Document
from services.common.net_guard import AddressRefused
from services.library.access import Caller, CallerDep, RuntimeDep
from services.library.fetch import check_url
from services.library.references import references_view
from services.library.removal import remove_document
from services.library.runtime import LibraryRuntime
from services.library.schemas import (
    DocumentAccepted,
    DocumentDetail,
    DocumentList,
    ReferenceList,
)

router = APIRouter(prefix="/documents", tags=["documents"])
log = logging.getLogger(__name__)


def document_view(doc: Document) -> dict[str, Any]:
    return {
        "id": str(doc.id),
        "title": doc.title,
        "filename": doc.filename,
        "status": doc.status,
        "error": doc.error,
        "pages": doc.pages,
        "collection": doc.collection,
        "chunks": doc.chunks,
        "source_url": doc.source_url,
        "attempts": doc.attempts,
        "created_at": doc.created_at.isoformat() if doc.created_at else None,
        "authors": list(doc.authors or []),
        "year": doc.year,
        "venue": doc.venue,
        "doi": doc.doi,
        "arxiv_id": doc.arxiv_id,
        "metadata_source": dict(doc.metadata_source or {}),
        "duplicate_of": str(doc.duplicate_of) if doc.duplicate_of else None,
        "retracted": bool(doc.retracted),
    }


def _writable(who: Caller, collection: Any) -> Collection:
    if collection is None or collection == "":
        return Collection.personal(who.user_id)
    if not isinstance(collection, str):
        raise ServiceError(400, "invalid_request", "collection must be a string")
    # Malformed text is the caller's bug (422, saying what is wrong), not a
    # collection it lacks rights to: parse before the access check.
    try:
        target = Collection.parse(collection)
    except ValueError as exc:
        raise ServiceError(422, "invalid_request", str(exc)) from None
    if target not in who.collections:
        raise ServiceError(403, "forbidden", f"no write access to collection {target}")
    return target


@router.post("", status_code=202, response_model=DocumentAccepted)
async def add_document(request: Request, who: CallerDep, runtime: RuntimeDep) -> DocumentAccepted:
    """Multipart PDF (`file`, optional `collection`) or JSON `{url, collection?}` → 202."""
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        received = await receive_pdf(
            request,
            store=runtime.blobs,
            max_bytes=runtime.settings.max_upload_bytes,
            check=runtime.settings.pdf_check_limits(),
        )
        collection = _writable(who, received.fields.get("collection"))
        key, name, url = received.content_hash, received.filename, None
    else:
        body = await read_json_body(request)
        if not isinstance(body, dict) or not isinstance(body.get("url"), str):
            raise ServiceError(
                400, "invalid_request", 'JSON body must be {"url": ..., "collection"?}'
            )
        url = body["url"]
        try:
            check_url(url)
        except AddressRefused as exc:
            raise ServiceError(400, "url_refused", str(exc)) from None
        collection = _writable(who, body.get("collection"))
        key = url_key(url)
        name = safe_filename(url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1])
    return await asyncio.to_thread(_register_and_queue, runtime, who, key, name, collection, url)


def _register_and_queue(
    runtime: LibraryRuntime,
    who: Caller,
    key: str,
    name: str,
    collection: Collection,
    url: str | None,
) -> DocumentAccepted:
    try:
        admitted = admit_document(
            runtime.session_factory,
            partial(send_ingest, runtime.celery),
            content_hash=key,
            filename=name,
            collection=collection,
            owner_id=who.user_id,
            source_url=url,
        )
    except AdmissionFailed as exc:
        status = 409 if exc.code == "conflict" else 404
        raise ServiceError(status, exc.code, exc.message) from None
    if not admitted.duplicate:
        log.info("library: document %s queued in %s", admitted.id, collection)
    return DocumentAccepted(id=admitted.id, status=admitted.status, duplicate=admitted.duplicate)


@router.get("", response_model=DocumentList)
def list_documents(
    who: CallerDep,
    runtime: RuntimeDep,
    collection: Annotated[list[Collection] | None, Query()] = None,
) -> dict[str, Any]:
    with transaction(runtime.session_factory) as db:
        docs = db.scalars(
            select(Document)
            .where(Document.collection.in_(who.narrowed(collection or [])))
            .order_by(Document.created_at.desc())
            .limit(1000)
        ).all()
        return {"items": [document_view(d) for d in docs]}


@router.get("/{document_id}", response_model=DocumentDetail)
def get_document(document_id: str, who: CallerDep, runtime: RuntimeDep) -> dict[str, Any]:
    try:
        ident = uuid.UUID(document_id)
    except ValueError:
        raise ServiceError(404, "not_found", "document not found") from None
    with transaction(runtime.session_factory) as db:
        doc = db.get(Document, ident)
        if doc is None or doc.collection not in who.collections:
            raise ServiceError(404, "not_found", "document not found")
        return {**document_view(doc), "structure": doc.structure}


@router.get("/{document_id}/references", response_model=ReferenceList)
def get_references(document_id: str, who: CallerDep, runtime: RuntimeDep) -> dict[str, Any]:
    """The document's reference entries, each linked to the cited library document if held."""
    try:
        ident = uuid.UUID(document_id)
    except ValueError:
        raise ServiceError(404, "not_found", "document not found") from None
    with transaction(runtime.session_factory) as db:
        doc = db.get(Document, ident)
        if doc is None or doc.collection not in who.collections:
            raise ServiceError(404, "not_found", "document not found")
        return {"items": references_view(db, ident)}


@router.delete("/{document_id}", status_code=204)
def delete_document(document_id: str, who: CallerDep, runtime: RuntimeDep) -> Response:
    """The document, its passages and (unless another document shares it) its file."""
    remove_document(runtime, who=who, document_id=document_id)
    return Response(status_code=204)
