"""``GET /v1/library/documents/{id}/pdf``: the stored PDF, for the pages' "open at page N" links.

Served only from a collection the caller may read (their own, a project's they
belong to; a project-scoped key: that project's only), the same rule the
library service applies to listings and search. Anything else is 404, so a
document id reveals nothing to someone who may not read it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import FileResponse

from services.api.deps import DbSession
from services.api.errors import error_responses, not_found
from services.api.library.access import AccessDep, visible_document
from services.api.library.service import IntakeDep
from services.common.documents.blobs import BlobStore

# An uploaded file is someone else's bytes served from our origin: never sniffed as
# anything but a PDF, and were a browser to render it as a page, no script, no
# plugin, no form and no framing by another site would run from it.
PDF_CSP = (
    "default-src 'none'; script-src 'none'; object-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'self'"
)
PDF_HEADERS = {"X-Content-Type-Options": "nosniff", "Content-Security-Policy": PDF_CSP}

router = APIRouter(prefix="/v1/library", tags=["library"], responses=error_responses(401, 422))

PDF_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The PDF as uploaded",
        "content": {"application/pdf": {"schema": {"type": "string", "format": "binary"}}},
    }
}


@router.get(
    "/documents/{document_id}/pdf",
    response_class=FileResponse,
    responses={**PDF_RESPONSE, **error_responses(404)},
)
def document_pdf(
    document_id: str, db: DbSession, access: AccessDep, intake: IntakeDep
) -> FileResponse:
    """The document's PDF, inline (open it at a page with ``#page=N``)."""
    doc = visible_document(db, access, document_id)
    path = BlobStore(intake.resolved_files_dir).path(doc.content_hash)
    if not path.is_file():  # a URL document not fetched yet, or a failed download
        raise not_found("PDF")
    return FileResponse(
        path,
        media_type="application/pdf",
        filename=doc.filename or f"{doc.id}.pdf",
        content_disposition_type="inline",
        headers=PDF_HEADERS,
    )
