"""Public library endpoints (/v1/library).

Uploads and URLs are accepted here directly — stored in the shared file store,
registered as a queued document and sent to the `library` queue after commit —
so ingestion never depends on the library's HTTP service being up. Reads and
searches are proxied to the library service, which re-derives the user's
collections itself from the acting user this router names. A delete is checked
here (the key's scope, who may delete) and carried out by the library service,
which owns the vectors.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from functools import lru_cache, partial
from typing import Annotated, Any, Literal

import httpx
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from services.api.bodies import NO_NUL, NOT_BLANK
from services.api.deps import DbSession, StateDep
from services.api.errors import ApiError, error_responses
from services.api.library.access import (
    AccessDep,
    LibraryAccess,
    removable_document,
    visible_document,
)
from services.api.library.schemas import (
    LibraryDocumentAccepted,
    LibraryDocumentDetail,
    LibraryDocumentList,
    LibraryReferenceList,
    LibrarySearchResults,
)
from services.api.state import AppState
from services.common.contracts.tasks import send_ingest
from services.common.documents.admission import AdmissionFailed, admit_document
from services.common.documents.blobs import BlobStore
from services.common.documents.intake import (
    UploadRefused,
    read_json_body,
    receive_pdf,
    safe_filename,
    url_key,
)
from services.common.documents.settings import IntakeSettings
from services.common.net_guard import AddressRefused, InvalidUrl, check_url
from services.common.telemetry import ainject_httpx_request

# The library's search modes (services/library/retrieval.py), as the API promises them.
SearchMode = Literal["survey", "derive", "write", "keyword", "vector", "mix"]
# A chunk's public kind (services/library/kinds.py): body text, a table, a figure caption.
ChunkKind = Literal["text", "table", "caption"]

UPLOAD_BODY: dict[str, Any] = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {
                    "file": {"type": "string", "format": "binary", "description": "a PDF"},
                    "project": {"type": "string", "maxLength": 200, "pattern": NO_NUL},
                },
            }
        },
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["url"],
                "additionalProperties": False,
                "properties": {
                    "url": {
                        "type": "string",
                        "maxLength": 2000,
                        "pattern": r"^https?://[A-Za-z0-9][^\x00-\x20\x7f]*$",
                    },
                    "project": {"type": "string", "maxLength": 200, "pattern": NO_NUL},
                },
            }
        },
    },
}

router = APIRouter(prefix="/v1/library", tags=["library"], responses=error_responses(401, 422, 503))
log = logging.getLogger(__name__)
PROXY_TIMEOUT_S = 60.0
UPLOAD_PATH = "/v1/library/documents"  # exempt from the global body cap; capped here


@lru_cache(maxsize=1)
def _intake_settings() -> IntakeSettings:
    return IntakeSettings()


def intake_settings() -> IntakeSettings:
    """Where uploads go and how large they may be (tests override this dependency)."""
    return _intake_settings()


IntakeDep = Annotated[IntakeSettings, Depends(intake_settings)]


def internal_path(*segments: str) -> str:
    """A library-service path from segments, none of which may walk elsewhere.

    Path parameters arrive percent-decoded (``%2E%2E`` is ``..``); a segment
    that is a dot segment or carries a separator is refused, not forwarded.
    """
    for segment in segments:
        if segment in ("", ".", "..") or any(c in segment for c in "/\\?#%"):
            raise ApiError(404, "not_found", "not found")
    return "/" + "/".join(segments)


async def _forward(
    state: AppState, method: str, path: str, model: type[BaseModel] | None, **kwargs: Any
) -> Any:
    """The library service's answer: ``model`` from a 200, an empty 204 (``model``
    None), its error body and status otherwise; 503 when it cannot be reached."""
    try:
        async with httpx.AsyncClient(
            base_url=state.settings.library_url,
            timeout=PROXY_TIMEOUT_S,
            event_hooks={"request": [ainject_httpx_request]},
        ) as client:
            resp = await client.request(method, path, **kwargs)
    except httpx.HTTPError as exc:
        raise ApiError(
            503, "library_unavailable", f"library service unreachable ({type(exc).__name__})"
        ) from None
    if model is None and resp.status_code == 204:
        return Response(status_code=204)
    try:
        body = resp.json()
    except ValueError:
        body = {"error": {"code": "library_error", "message": resp.text[:500]}}
    if resp.status_code != 200 or model is None:
        return JSONResponse(body, status_code=resp.status_code)
    return model.model_validate(body)


@router.post(
    "/documents",
    status_code=202,
    response_model=LibraryDocumentAccepted,
    responses=error_responses(400, 404, 409, 413, 415, 422, 503),
    # The body is read by hand (streamed to disk), so FastAPI cannot infer it.
    openapi_extra={"requestBody": UPLOAD_BODY},
)
async def add_document(
    request: Request, access: AccessDep, state: StateDep, intake: IntakeDep, db: DbSession
) -> LibraryDocumentAccepted:
    """Multipart PDF (`file`, optional `project` or `collection=lab`) or JSON → 202, queued."""
    # End the authentication transaction before a possibly minutes-long body:
    # it holds the API key row's last_used_at update (a row lock) and a pooled
    # connection, which other requests with the same key would wait for.
    await asyncio.to_thread(db.commit)
    store = BlobStore(intake.resolved_files_dir)
    try:
        if request.headers.get("content-type", "").startswith("multipart/form-data"):
            received = await receive_pdf(
                request,
                store=store,
                max_bytes=intake.max_upload_bytes,
                check=intake.pdf_check_limits(),
            )
            collection = access.collection_for(
                received.fields.get("project"), received.fields.get("collection")
            )
            key, name, url = received.content_hash, received.filename, None
        else:
            body = await read_json_body(request)
            if not isinstance(body, dict) or not isinstance(body.get("url"), str):
                shape = '{"url": ..., "project"?, "collection"?}'
                raise ApiError(400, "invalid_request", f"JSON body must be {shape}")
            url = body["url"]
            _check_url_form(url)
            collection = access.collection_for(body.get("project"), body.get("collection"))
            key = url_key(url)
            name = safe_filename(url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1])
    except UploadRefused as exc:
        raise ApiError(exc.status, exc.code, exc.message) from None
    return await asyncio.to_thread(_register_and_queue, state, access, key, name, collection, url)


def _check_url_form(url: str) -> None:
    """What is refusable before the network: a malformed URL (``invalid_url``), a
    host spelling the guard never fetches (``url_refused``); both 400, never a 500.
    The address itself is checked when the ingest task fetches it."""
    try:
        check_url(url)
    except InvalidUrl as exc:
        raise ApiError(400, "invalid_url", str(exc)) from None
    except AddressRefused as exc:
        raise ApiError(400, "url_refused", str(exc)) from None


def _register_and_queue(
    state: AppState,
    access: LibraryAccess,
    key: str,
    name: str,
    collection: str,
    url: str | None,
) -> LibraryDocumentAccepted:
    try:
        admitted = admit_document(
            state.session_factory,
            partial(send_ingest, state.celery),
            content_hash=key,
            filename=name,
            collection=collection,
            owner_id=access.user_id,
            source_url=url,
        )
    except AdmissionFailed as exc:
        status = 409 if exc.code == "conflict" else 404
        raise ApiError(status, exc.code, exc.message) from None
    if not admitted.duplicate:
        log.info("library: document %s queued in %s", admitted.id, collection)
    return LibraryDocumentAccepted(
        id=admitted.id, status=admitted.status, duplicate=admitted.duplicate
    )


@router.get("/documents", response_model=LibraryDocumentList, responses=error_responses(400))
async def list_documents(access: AccessDep, state: StateDep) -> Any:
    params = {"collection": access.scoped_collections()} if access.scope else None
    listed = await _forward(
        state, "GET", "/documents", LibraryDocumentList, headers=access.headers(), params=params
    )
    if isinstance(listed, LibraryDocumentList):
        for doc in listed.items:
            doc.collection_name = access.collection_name(doc.collection)
    return listed


@router.get(
    "/documents/{document_id}",
    response_model=LibraryDocumentDetail,
    responses=error_responses(400, 404),
)
async def get_document(document_id: str, access: AccessDep, state: StateDep, db: DbSession) -> Any:
    ident = await _readable_id(db, access, document_id)
    path = internal_path("documents", ident)
    doc = await _forward(state, "GET", path, LibraryDocumentDetail, headers=access.headers())
    if isinstance(doc, LibraryDocumentDetail):
        doc.collection_name = access.collection_name(doc.collection)
    return doc


@router.get(
    "/documents/{document_id}/references",
    response_model=LibraryReferenceList,
    responses=error_responses(400, 404),
)
async def get_references(
    document_id: str, access: AccessDep, state: StateDep, db: DbSession
) -> Any:
    """The paper's references, linked to library documents (the survey stage follows them)."""
    ident = await _readable_id(db, access, document_id)
    path = internal_path("documents", ident, "references")
    return await _forward(state, "GET", path, LibraryReferenceList, headers=access.headers())


@router.delete(
    "/documents/{document_id}",
    status_code=204,
    response_class=Response,
    responses=error_responses(403, 404, 409),
)
async def delete_document(
    document_id: str, access: AccessDep, state: StateDep, db: DbSession
) -> Response:
    """Delete the document, its passages (search no longer finds them) and its file.

    Its uploader, an owner of its project or an admin may; another reader gets
    403, anyone else 404. A document still being ingested answers 409: delete it
    once it is ready or failed.
    """
    doc = await asyncio.to_thread(removable_document, db, access, document_id)
    path = internal_path("documents", str(doc.id))
    resp: Response = await _forward(state, "DELETE", path, None, headers=access.headers())
    return resp


async def _readable_id(db: DbSession, access: LibraryAccess, document_id: str) -> str:
    """The document's id once the caller may read it (their collections, the key's
    scope), checked here so the library service never answers for one they may not."""
    doc = await asyncio.to_thread(visible_document, db, access, document_id)
    return str(doc.id)


@router.get("/search", response_model=LibrarySearchResults, responses=error_responses(400, 404))
async def search(
    access: AccessDep,
    state: StateDep,
    q: Annotated[str, Query(max_length=2000, pattern=NOT_BLANK, description="the query text")],
    mode: SearchMode = "mix",
    k: Annotated[int, Query(ge=1, le=100)] = 10,
    project: Annotated[str | None, Query(max_length=200, pattern=NO_NUL)] = None,
    kind: Annotated[
        ChunkKind | None, Query(description="only chunks of this kind: text, table or caption")
    ] = None,
    document: Annotated[
        list[uuid.UUID] | None,
        Query(max_length=50, description="only passages of these documents (repeatable)"),
    ] = None,
) -> Any:
    """Search every collection the user may read, or only ``project``'s (``kind``:
    only body text, only tables, or only figure captions; ``document``: only those
    documents' passages, among what the user may read)."""
    params: dict[str, Any] = {"q": q, "mode": mode, "k": k}
    if kind is not None:
        params["kind"] = kind
    if document:
        params["document"] = [str(d) for d in document]
    if project:
        params["collection"] = access.collection_for(project)
    elif access.scope is not None:
        params["collection"] = access.scoped_collections()
    return await _forward(
        state, "GET", "/search", LibrarySearchResults, headers=access.headers(), params=params
    )
