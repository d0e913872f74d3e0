"""PATCH /v1/library/documents/{id}: a person corrects a document's metadata.

Who may: the same as delete (its uploader, an owner of its project, an admin;
another reader 403, anyone else 404 — ``removable_document``). Each corrected
field's source becomes "manual", which the ingest pipeline
(services/library/metadata/apply.py) never overwrites. Values are checked
here: DOI shape, arXiv id shape, year range, a bounded list of non-empty names,
bounded text; a bad value is a 422 naming the field, an empty body a 400.
"""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import Field, field_validator

from services.api.bodies import NOT_BLANK, RequestBody
from services.api.deps import DbSession
from services.api.errors import error_responses
from services.api.library.access import AccessDep, LibraryAccess, removable_document
from services.api.library.schemas import LibraryDocument
from services.common.contracts.errors import ServiceError
from services.common.models import Document

router = APIRouter(prefix="/v1/library", tags=["library"], responses=error_responses(401, 422))

DOI_SHAPE = re.compile(r"^10\.\d{4,9}/\S{1,250}$")
ARXIV_SHAPE = re.compile(r"^(\d{4}\.\d{4,5}|[a-z][a-z\-]*(?:\.[A-Z]{2})?/\d{7})(v\d+)?$")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
EDITABLE = ("title", "authors", "year", "venue", "doi", "arxiv_id")
MAX_AUTHORS = 100


# What the OpenAPI schema states (positive data is always accepted); the
# validators below run first, with messages that say what a value should be.
TEXT = NOT_BLANK
DOI_PATTERN = r"^(https?://(dx\.)?doi\.org/|doi:)?10\.\d{4,9}/\S{1,250}$"
ARXIV_PATTERN = r"^(arXiv:)?(\d{4}\.\d{4,5}|[a-z][a-z\-]*(\.[A-Z]{2})?/\d{7})(v\d+)?$"
YEARS = (1500, 2100)


def _text(value: Any, what: str, limit: int) -> Any:
    if not isinstance(value, str):
        return value  # null, or a wrong type the field's own check names
    value = " ".join(value.split())
    if not value:
        raise ValueError(f"{what} must not be blank (send null to clear it)")
    if len(value) > limit:
        raise ValueError(f"{what} must be at most {limit} characters")
    # Control characters a page or a .bib must not carry are shown as U+FFFD.
    return CONTROL.sub("\ufffd", value)


class MetadataPatch(RequestBody):
    """Any of the fields; null clears one (it stays manual, so extraction leaves it
    empty). A document keeps a title: ``title`` may be changed, not cleared."""

    title: Annotated[str, Field(max_length=500, pattern=TEXT)] = None  # type: ignore[assignment]
    authors: Annotated[
        list[Annotated[str, Field(max_length=200, pattern=TEXT)]] | None,
        Field(max_length=MAX_AUTHORS),
    ] = None
    year: Annotated[int | None, Field(ge=YEARS[0], le=YEARS[1])] = None
    venue: Annotated[str | None, Field(max_length=300, pattern=TEXT)] = None
    doi: Annotated[str | None, Field(max_length=300, pattern=DOI_PATTERN)] = None
    arxiv_id: Annotated[str | None, Field(max_length=60, pattern=ARXIV_PATTERN)] = None

    @field_validator("title", mode="before")
    @classmethod
    def _title(cls, v: Any) -> Any:
        return _text(v, "title", 500)

    @field_validator("venue", mode="before")
    @classmethod
    def _venue(cls, v: Any) -> Any:
        return _text(v, "venue", 300)

    @field_validator("authors", mode="before")
    @classmethod
    def _authors(cls, v: Any) -> Any:
        if not isinstance(v, list):
            return v
        if len(v) > MAX_AUTHORS:
            raise ValueError(f"at most {MAX_AUTHORS} authors")
        return [_text(name, "an author's name", 200) for name in v]

    @field_validator("year", mode="before")
    @classmethod
    def _year(cls, v: Any) -> Any:
        if isinstance(v, int) and not isinstance(v, bool) and not YEARS[0] <= v <= YEARS[1]:
            raise ValueError(f"year must be between {YEARS[0]} and {YEARS[1]}")
        return v

    @field_validator("doi", mode="before")
    @classmethod
    def _doi(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        v = re.sub(r"^(https?://(dx\.)?doi\.org/|doi:)", "", v.strip(), flags=re.I)
        if not DOI_SHAPE.match(v):
            raise ValueError('a DOI looks like "10.1234/abc.5678" (10.NNNN, a slash, a suffix)')
        return v.lower()

    @field_validator("arxiv_id", mode="before")
    @classmethod
    def _arxiv(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        v = re.sub(r"^arxiv:", "", v.strip(), flags=re.I)
        m = ARXIV_SHAPE.match(v)
        if not m:
            raise ValueError('an arXiv id looks like "2101.00001" or "hep-th/9901001"')
        return m.group(1)  # without the version: all versions are one paper


def document_json(doc: Document, access: LibraryAccess) -> LibraryDocument:
    return LibraryDocument(
        id=str(doc.id),
        title=doc.title,
        filename=doc.filename,
        status=doc.status,
        error=doc.error,
        pages=doc.pages,
        collection=doc.collection,
        collection_name=access.collection_name(doc.collection),
        chunks=doc.chunks,
        source_url=doc.source_url,
        attempts=doc.attempts,
        created_at=doc.created_at.isoformat() if doc.created_at else None,
        authors=list(doc.authors or []),
        year=doc.year,
        venue=doc.venue,
        doi=doc.doi,
        arxiv_id=doc.arxiv_id,
        metadata_source=dict(doc.metadata_source or {}),
        duplicate_of=str(doc.duplicate_of) if doc.duplicate_of else None,
        retracted=bool(doc.retracted),
    )


def _apply(
    db: Any, access: LibraryAccess, document_id: str, changes: dict[str, Any]
) -> LibraryDocument:
    doc = removable_document(db, access, document_id)  # first: a stranger learns nothing
    if not changes:
        raise ServiceError(400, "invalid_request", f"give at least one of: {', '.join(EDITABLE)}")
    locked = db.get(Document, doc.id, with_for_update=True)  # against an ingest writing now
    sources = dict(locked.metadata_source or {})
    for field, value in changes.items():
        if field == "title" and value is None:
            raise ServiceError(
                422, "invalid_request", "title: a document keeps a title (send a new one)"
            )
        setattr(locked, field, value)
        sources[field] = "manual"
    locked.metadata_source = sources
    locked.updated_at = datetime.now(UTC)
    db.commit()
    db.refresh(locked)
    return document_json(locked, access)


@router.patch(
    "/documents/{document_id}",
    response_model=LibraryDocument,
    responses=error_responses(400, 403, 404, 413),
)
async def patch_document(
    document_id: str, body: MetadataPatch, access: AccessDep, db: DbSession
) -> LibraryDocument:
    """Correct title, authors, year, venue, DOI or arXiv id; corrected fields become "manual"."""
    changes = {k: getattr(body, k) for k in EDITABLE if k in body.model_fields_set}
    return await asyncio.to_thread(_apply, db, access, document_id, changes)
