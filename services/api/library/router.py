"""Public library endpoints (/v1/library): the routes and their OpenAPI shapes.

Adding a document is ``service.accept_document`` (stored and queued here, so
ingestion never waits on the library service); reads and searches are proxied
to the library service (``client.forward``), which re-derives the user's
collections itself from the acting user this router names. A delete is checked
here (the key's scope, who may delete) and carried out by the library service,
which owns the vectors.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from services.api.bodies import NO_NUL, NOT_BLANK
from services.api.deps import DbSession, StateDep
from services.api.errors import error_responses
from services.api.library.access import (
    AccessDep,
    LibraryAccess,
    removable_document,
    visible_document,
)
from services.api.library.client import forward, internal_path
from services.api.library.schemas import (
    LibraryDocumentAccepted,
    LibraryDocumentDetail,
    LibraryDocumentList,
    LibraryReferenceList,
    LibrarySearchResults,
)
from services.api.library.service import IntakeDep, accept_document

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
UPLOAD_PATH = "/v1/library/documents"  # exempt from the global body cap; capped here


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
    return await accept_document(request, db, access, state, intake)


@router.get("/documents", response_model=LibraryDocumentList, responses=error_responses(400))
async def list_documents(access: AccessDep, state: StateDep) -> Any:
    params = {"collection": access.scoped_collections()} if access.scope else None
    listed = await forward(
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
    doc = await forward(state, "GET", path, LibraryDocumentDetail, headers=access.headers())
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
    return await forward(state, "GET", path, LibraryReferenceList, headers=access.headers())


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
    resp: Response = await forward(state, "DELETE", path, None, headers=access.headers())
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
    return await forward(
        state, "GET", "/search", LibrarySearchResults, headers=access.headers(), params=params
    )
