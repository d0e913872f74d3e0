"""Merge extracted metadata into a document row, and mark DOI / arXiv duplicates.

Guarantees:
- a field whose source is "manual" (a PATCH) or "import" (a bibliography
  entry) is never overwritten, whatever a later extraction or lookup finds;
- a looked-up field (OpenAlex / Crossref, services/library/metadata/lookup.py)
  replaces extraction's and records the service as its source; ``retracted``
  is set only from a record found (a failed lookup changes nothing);
- a document whose DOI or arXiv id matches an earlier document in the
  uploader's readable collections (their own, their projects', the lab's) gets
  ``duplicate_of`` = that document (the earliest one not itself a duplicate);
  it stays and is searchable, only marked.
"""

from __future__ import annotations

import uuid
from typing import Any, Protocol

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from services.common.contracts.collections import Collection
from services.common.contracts.statuses import DocumentStatus
from services.common.documents.collections import (
    LAB_COLLECTION,
    member_projects,
)
from services.common.models import Document
from services.library.metadata.identifiers import arxiv_from_filename, arxiv_year
from services.library.metadata.sources import FoundWork

FIELDS = ("title", "authors", "year", "venue", "doi", "arxiv_id")
MANUAL = "manual"
# A field a person wrote (a PATCH) or the lab's bibliography gave (an import)
# outranks what extraction reads from the PDF.
KEPT_SOURCES = (MANUAL, "import")


def merged_fields(
    doc: Document, extracted: dict[str, Any], *, parsed_title: str | None, filename: str | None
) -> dict[str, Any]:
    """The column values to write: extraction's, except where a field is manual."""
    found = {k: extracted[k] for k in FIELDS if extracted.get(k) not in (None, "", [])}
    sources = dict(extracted.get("source") or {})
    if "title" not in found and parsed_title:
        found["title"] = parsed_title
    if "arxiv_id" not in found and arxiv_from_filename(filename):
        found["arxiv_id"] = arxiv_from_filename(filename)
        sources["arxiv_id"] = "filename"
        if "year" not in found or sources.get("year") == "pdf":
            year = arxiv_year(found["arxiv_id"])
            if year:
                found["year"], sources["year"] = year, "filename"
    kept = dict(doc.metadata_source or {})
    values: dict[str, Any] = {}
    for field in FIELDS:
        if kept.get(field) in KEPT_SOURCES:
            continue  # a person's correction or the bibliography outranks extraction
        if field in found:
            values[field] = found[field]
            kept[field] = sources.get(field, "layout")
        elif field != "title":
            values[field] = None
            kept.pop(field, None)
    values["metadata_source"] = kept
    return values


def readable_collections(db: Session, user_id: uuid.UUID) -> list[str]:
    projects = member_projects(db, user_id).values()
    return [
        Collection.personal(user_id),
        *{Collection.project(p) for p in projects},
        LAB_COLLECTION,
    ]


def find_original(
    db: Session, doc: Document, *, doi: str | None, arxiv_id: str | None
) -> uuid.UUID | None:
    """The earlier document this one duplicates (same DOI or arXiv id), if any."""
    match = []
    if doi:
        match.append(Document.doi == doi.lower())
    if arxiv_id:
        match.append(Document.arxiv_id == arxiv_id)
    if not match:
        return None
    row = db.scalars(
        select(Document.id)
        .where(
            or_(*match),
            Document.id != doc.id,
            Document.collection.in_(readable_collections(db, doc.owner_id)),
            Document.duplicate_of.is_(None),
            Document.status != DocumentStatus.FAILED,
            Document.created_at <= doc.created_at,
        )
        .order_by(Document.created_at, Document.id)
        .limit(1)
    ).first()
    return row


def with_lookup(values: dict[str, Any], found: FoundWork) -> dict[str, Any]:
    """``values`` with the looked-up fields laid over extraction's, each recorded
    with its service as source; a manual or imported field is left as it is."""
    out = dict(values)
    sources = dict(values.get("metadata_source") or {})
    for field, value in found.fields().items():
        if sources.get(field) in KEPT_SOURCES:
            continue  # a person's correction or the bibliography outranks any service
        out[field], sources[field] = value, found.source
    out["metadata_source"] = sources
    out["retracted"] = found.retracted
    return out


class Lookup(Protocol):
    def find(
        self, *, doi: str | None, arxiv_id: str | None, title: str | None, document: str
    ) -> FoundWork | None: ...


def metadata_values(
    factory: Any,
    document_id: uuid.UUID,
    extracted: dict[str, Any],
    *,
    parsed_title: str | None,
    filename: str | None,
    lookup: Lookup | None = None,
) -> dict[str, Any]:
    """Everything to write on the row after parsing: merged fields (extraction's,
    then a lookup's) and ``duplicate_of``. The lookup runs with no session open."""
    with factory() as db:
        doc = db.get(Document, document_id)
        if doc is None:
            return {}
        values = merged_fields(doc, extracted, parsed_title=parsed_title, filename=filename)
        if (doc.metadata_source or {}).get("title") in KEPT_SOURCES:
            values["title"] = doc.title  # else the caller would fall back to the parsed title
        current = {f: values[f] if f in values else getattr(doc, f) for f in FIELDS}
    if lookup is not None:
        found = lookup.find(
            doi=current["doi"],
            arxiv_id=current["arxiv_id"],
            title=current["title"] or parsed_title,
            document=str(document_id),
        )
        if found is not None:
            values = with_lookup(values, found)
    with factory() as db:
        doc = db.get(Document, document_id)
        if doc is None:
            return {}
        doi = values["doi"] if "doi" in values else doc.doi
        arxiv = values["arxiv_id"] if "arxiv_id" in values else doc.arxiv_id
        values["duplicate_of"] = find_original(db, doc, doi=doi, arxiv_id=arxiv)
        return values
