"""One entry of an import, settled: matched to a document the library holds, or a
new document — its open-access PDF fetched and queued for ingestion, or kept as
metadata-only (and why).

The PDF is fetched before the entry's transaction (into the file store under the
URL's key, so a retry finds it there and fetches nothing); the document row and
the entry's new state are then written in one transaction, fenced on the
import's lease. Imported fields carry the source "import", which ingestion keeps
(services/library/metadata/apply.py) and a person's PATCH replaces.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.common.bibliography import Entry
from services.common.contracts.statuses import DocumentStatus
from services.common.documents.intake import PDF_MAGIC, url_key
from services.common.models import Document, LibraryImportEntry
from services.common.models.library import METADATA_ONLY
from services.common.models.library_imports import (
    ENTRY_FETCHED,
    ENTRY_MATCHED,
    ENTRY_METADATA_ONLY,
)
from services.common.net_guard import AddressRefused, InvalidUrl
from services.library.fetch import fetch_document
from services.library.imports.catalog import Catalog
from services.library.imports.lease import ImportClaim
from services.library.imports.open_access import looked_up_sources
from services.library.runtime import LibraryRuntime

log = logging.getLogger(__name__)
IMPORT_SOURCE = "import"
FIELDS = ("title", "authors", "year", "venue", "doi", "arxiv_id")


@dataclass(frozen=True)
class Fetched:
    url: str | None  # the PDF now in the file store (its key: url_key(url))
    reason: str | None  # why there is none


@dataclass(frozen=True)
class Settled:
    state: str
    document_id: uuid.UUID
    reason: str | None = None
    ingest: bool = False  # send library.ingest for document_id after commit


def pdf_sources(entry: Entry, arxiv_base: str) -> list[str]:
    """Where an open-access PDF of the entry is: arXiv first, then the file's own URL."""
    sources = []
    if entry.arxiv_id:
        sources.append(f"{arxiv_base.rstrip('/')}/{entry.arxiv_id}")
    if entry.pdf_url and entry.pdf_url not in sources:
        sources.append(entry.pdf_url)
    return sources


def fetch_pdf(runtime: LibraryRuntime, entry: Entry) -> Fetched:
    """The first source that gives a PDF, through the address guard: the entry's own
    (arXiv id, PDF URL), then those the metadata lookup knows (OpenAlex's open-access
    copy, an arXiv id the file left out), asked only when the entry's own gave none."""
    base = runtime.settings.arxiv_pdf_base
    sources = pdf_sources(entry, base)
    failures: list[str] = []
    fetched = _first_pdf(runtime, sources, failures)
    if fetched is not None:
        return fetched
    more = looked_up_sources(runtime.metadata_lookup, entry, arxiv_base=base, known=sources)
    fetched = _first_pdf(runtime, more, failures)
    if fetched is not None:
        return fetched
    if not failures:
        return Fetched(
            None, "no open-access PDF known (no arXiv id or PDF URL, none found by lookup)"
        )
    return Fetched(None, "PDF not fetched (" + "; ".join(failures)[:500] + ")")


def _first_pdf(runtime: LibraryRuntime, sources: list[str], failures: list[str]) -> Fetched | None:
    """The first of ``sources`` that is a PDF (now in the file store); each failure noted."""
    for url in sources:
        key = url_key(url)
        path = runtime.blobs.path(key)
        if not path.exists():
            try:
                fetch_document(
                    url,
                    store=runtime.blobs,
                    key=key,
                    guard=runtime.net_guard,
                    max_bytes=runtime.settings.max_upload_bytes,
                    timeout_s=runtime.settings.url_fetch_timeout_s,
                )
            except (AddressRefused, InvalidUrl) as exc:
                failures.append(f"{url}: {exc}")
                continue
        with path.open("rb") as fh:
            if fh.read(1024).lstrip()[:5].startswith(PDF_MAGIC):
                return Fetched(url, None)
        path.unlink(missing_ok=True)
        failures.append(f"{url}: not a PDF")
    return None


def existing(db: Session, catalog: Catalog, entry: Entry, content_hash: str) -> uuid.UUID | None:
    """The document this entry already is: in the catalog, or the same content in
    the target collection (an earlier run that committed it)."""
    found = catalog.find(entry)
    if found is not None:
        return found
    return db.scalar(
        select(Document.id).where(
            Document.collection == catalog.target, Document.content_hash == content_hash
        )
    )


def settle_entry(
    db: Session,
    *,
    lease: ImportClaim,
    row: LibraryImportEntry,
    entry: Entry,
    catalog: Catalog,
    fetched: Fetched | None,
) -> Settled:
    """Write the entry's outcome (and its new document) in the caller's transaction."""
    content_hash = url_key(fetched.url) if fetched and fetched.url else entry.content_key()
    match = existing(db, catalog, entry, content_hash)
    if match is not None:
        return _record(row, Settled(ENTRY_MATCHED, match))
    now = datetime.now(UTC)
    values = _metadata(entry)
    doc = Document(
        collection=lease.collection,
        project_id=lease.project_id,
        owner_id=lease.owner_id,
        content_hash=content_hash,
        filename=None,
        attempts=0,
        **values,
    )
    if fetched and fetched.url:
        doc.source_url, doc.status, doc.lease_until = fetched.url, DocumentStatus.QUEUED, now
        doc.filename = fetched.url.rstrip("/").rsplit("/", 1)[-1][:200] or "paper.pdf"
    else:
        doc.status = METADATA_ONLY
    db.add(doc)
    db.flush()
    catalog.add(doc.id, doi=entry.doi, arxiv_id=entry.arxiv_id, title=entry.title)
    if doc.status == METADATA_ONLY:
        reason = fetched.reason if fetched else None
        return _record(row, Settled(ENTRY_METADATA_ONLY, doc.id, reason))
    return _record(row, Settled(ENTRY_FETCHED, doc.id, ingest=True))


def _metadata(entry: Entry) -> dict[str, Any]:
    values: dict[str, Any] = {
        "title": entry.title,
        "authors": entry.authors or None,
        "year": entry.year,
        "venue": entry.venue,
        "doi": entry.doi,
        "arxiv_id": entry.arxiv_id,
    }
    values["metadata_source"] = {k: IMPORT_SOURCE for k in FIELDS if values[k]}
    return values


def _record(row: LibraryImportEntry, settled: Settled) -> Settled:
    row.state, row.document_id, row.reason = settled.state, settled.document_id, settled.reason
    row.settled_at = datetime.now(UTC)
    return settled
