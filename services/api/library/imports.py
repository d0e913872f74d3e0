"""Bibliography imports and BibTeX export (/v1/library/imports, /v1/library/export.bib).

``POST /v1/library/imports`` takes a multipart file (BibTeX, CSL-JSON or Better
BibTeX JSON) under ``LEAFLAB_MAX_IMPORT_BYTES`` (413 above it), or a JSON body
naming a Zotero library read through its web API (zotero_request.py), reads it here
(422 when it is no bibliography, naming what was expected), writes the import
and its entries, and after commit sends ``library.import``: the library side
settles the entries (services/library/imports), so an accepted import survives
the library service being down. ``GET …/imports/{id}`` is its progress and
summary; ``GET /v1/library/export.bib`` writes a collection as BibTeX with the
survey's writer (services/common/bibliography/writer.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from sqlalchemy import select

from services.api.bodies import NO_NUL
from services.api.deps import DbSession, StateDep
from services.api.errors import error_responses
from services.api.library.access import AccessDep, LibraryAccess
from services.api.library.import_jobs import (
    create_import,
    import_view,
    recent_imports,
    visible_import,
)
from services.api.library.schemas import LibraryImport, LibraryImportList
from services.api.library.service import IntakeDep
from services.api.library.zotero_request import ZOTERO_BODY, parse_zotero_body, read_requested
from services.api.state import AppState
from services.common.bibliography import NotABibliography, ParsedBibliography, read_bibliography
from services.common.bibliography.keys import make_key
from services.common.bibliography.writer import render_bib
from services.common.contracts.collections import Collection
from services.common.contracts.errors import ServiceError
from services.common.contracts.statuses import DocumentStatus
from services.common.contracts.tasks import send_import
from services.common.documents.intake import read_json_body, receive_small_file
from services.common.documents.settings import IntakeSettings
from services.common.models import Document

router = APIRouter(prefix="/v1/library", tags=["library"], responses=error_responses(401, 422))
log = logging.getLogger(__name__)
IMPORT_PATH = "/v1/library/imports"  # exempt from the global body cap; capped here

IMPORT_BODY: dict[str, Any] = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {
                    "file": {
                        "type": "string",
                        "format": "binary",
                        "description": "a .bib, CSL-JSON or Better BibTeX JSON file",
                    },
                    "project": {"type": "string", "maxLength": 200, "pattern": NO_NUL},
                    "collection": {"type": "string", "enum": ["lab"]},
                },
            }
        },
        "application/json": ZOTERO_BODY,
    },
}


@router.post(
    "/imports",
    status_code=202,
    response_model=LibraryImport,
    responses=error_responses(400, 403, 404, 413, 422),
    openapi_extra={"requestBody": IMPORT_BODY},
)
async def start_import(
    request: Request, access: AccessDep, state: StateDep, intake: IntakeDep, db: DbSession
) -> LibraryImport:
    """Multipart bibliography (`file`; `project` or `collection=lab`), or JSON naming a
    Zotero library (`zotero`: `user` or `group` id and `key`) → 202, an import job."""
    await asyncio.to_thread(db.commit)  # end the auth transaction before reading the body
    if request.headers.get("content-type", "").startswith("application/json"):
        return await _start_zotero_import(request, access, state, intake)
    filename, raw, fields = await receive_small_file(request, max_bytes=intake.max_import_bytes)
    collection = access.collection_for(fields.get("project"), fields.get("collection"))
    try:
        parsed = await asyncio.to_thread(read_bibliography, raw)
    except NotABibliography as exc:
        raise ServiceError(422, "not_a_bibliography", str(exc)) from None
    return await asyncio.to_thread(_create_and_queue, state, access, parsed, filename, collection)


async def _start_zotero_import(
    request: Request, access: LibraryAccess, state: AppState, intake: IntakeSettings
) -> LibraryImport:
    body = await read_json_body(request)
    wanted = parse_zotero_body(body)
    collection = access.collection_for(wanted.project, wanted.collection)
    parsed, error = await read_requested(wanted, intake)
    return await asyncio.to_thread(
        _create_and_queue, state, access, parsed, wanted.library.label, collection, error
    )


def _create_and_queue(
    state: AppState,
    access: LibraryAccess,
    parsed: ParsedBibliography,
    filename: str,
    collection: Collection,
    error: str | None = None,
) -> LibraryImport:
    with state.session_factory() as db:
        job = create_import(
            db, access=access, parsed=parsed, filename=filename, collection=collection, error=error
        )
        view = import_view(db, access, job, with_entries=False)
        db.commit()
    if view.summary.pending:  # after commit: the task must find the rows
        send_import(state.celery, view.id)
    log.info("library: import %s (%d entries) queued in %s", view.id, view.total, collection)
    return view


@router.get("/imports", response_model=LibraryImportList)
def list_imports(access: AccessDep, db: DbSession) -> LibraryImportList:
    """The caller's recent imports, newest first (without their entries)."""
    jobs = recent_imports(db, access)
    return LibraryImportList(items=[import_view(db, access, j, with_entries=False) for j in jobs])


@router.get("/imports/{import_id}", response_model=LibraryImport, responses=error_responses(404))
def get_import(import_id: str, access: AccessDep, db: DbSession) -> LibraryImport:
    """Progress (``done`` of ``total``), the summary and every entry's outcome."""
    job = visible_import(db, access, import_id)
    return import_view(db, access, job, with_entries=True)


@router.get(
    "/export.bib",
    response_class=Response,
    responses={
        **error_responses(400, 403, 404),
        200: {"content": {"application/x-bibtex": {"schema": {"type": "string"}}}},
    },
)
def export_bibtex(
    access: AccessDep,
    db: DbSession,
    project: Annotated[str | None, Query(max_length=200, pattern=NO_NUL)] = None,
    collection: Annotated[str | None, Query(max_length=20, pattern=NO_NUL)] = None,
) -> Response:
    """A collection as BibTeX: the project's, the lab's (``collection=lab``), or the
    caller's own; one entry per document (duplicates and failed documents left out)."""
    target = access.collection_for(project, collection)
    docs = db.scalars(
        select(Document)
        .where(
            Document.collection == target,
            Document.status != DocumentStatus.FAILED,
            Document.duplicate_of.is_(None),
        )
        .order_by(Document.created_at, Document.id)
    ).all()
    taken: set[str] = set()
    papers = [
        {
            "key": make_key(
                title=d.title or d.filename or "untitled",
                authors=d.authors or [],
                year=d.year,
                taken=taken,
            ),
            "title": d.title or d.filename or "untitled",
            "authors": d.authors or [],
            "year": d.year,
            "venue": d.venue,
            "doi": d.doi,
            "arxiv_id": d.arxiv_id,
            "document_id": str(d.id),
        }
        for d in docs
    ]
    body = render_bib(papers) if papers else ""
    return Response(body, media_type="application/x-bibtex; charset=utf-8")
