"""Bibliography import jobs on the API side: accepting a parsed file as an import
row plus one row per entry (``pending``, or ``skipped`` with the parser's reason),
and reading an import back with its progress and summary.

Only the importer reads an import (a key scoped to a project: only imports into
that project); anyone else gets the same 404 as for a missing one.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from services.api.library.access import LibraryAccess
from services.api.library.schemas import (
    LibraryImport as ImportView,
)
from services.api.library.schemas import (
    LibraryImportEntry as EntryView,
)
from services.api.library.schemas import (
    LibraryImportSummary,
)
from services.common.bibliography import Entry, ParsedBibliography
from services.common.contracts.collections import Collection
from services.common.contracts.errors import ServiceError
from services.common.documents.admission import project_of
from services.common.models import LibraryImport, LibraryImportEntry
from services.common.models.library_imports import (
    ENTRY_PENDING,
    ENTRY_SKIPPED,
    IMPORT_DONE,
    IMPORT_QUEUED,
)


def create_import(
    db: Session,
    *,
    access: LibraryAccess,
    parsed: ParsedBibliography,
    filename: str,
    collection: Collection,
    error: str | None = None,
) -> LibraryImport:
    """The import and its entries (flush only); ``done`` at once when nothing is pending
    (with ``error`` when the source could not be read at all)."""
    pending = bool(parsed.entries)
    now = datetime.now(UTC)
    job = LibraryImport(
        owner_id=access.user_id,
        collection=collection,
        project_id=project_of(collection),
        filename=filename,
        format=parsed.format,
        status=IMPORT_QUEUED if pending else IMPORT_DONE,
        total=len(parsed.items),
        lease_until=now,
        finished_at=None if pending else now,
        error=error,
    )
    db.add(job)
    db.flush()
    for ordinal, item in enumerate(parsed.items):
        if isinstance(item, Entry):
            row = LibraryImportEntry(
                ordinal=ordinal, key=item.key, title=item.title, entry=item.as_dict()
            )
            row.state = ENTRY_PENDING
        else:
            row = LibraryImportEntry(
                ordinal=ordinal, key=item.key, state=ENTRY_SKIPPED, reason=item.reason
            )
            row.settled_at = now
        row.import_id = job.id
        db.add(row)
    db.flush()
    return job


def visible_import(db: Session, access: LibraryAccess, import_id: str) -> LibraryImport:
    try:
        ident = uuid.UUID(import_id)
    except ValueError:
        raise ServiceError(404, "not_found", "import not found (an import id is a UUID)") from None
    job = db.get(LibraryImport, ident)
    scoped = access.scoped_collections()
    if (
        job is None
        or job.owner_id != access.user_id
        or (scoped is not None and job.collection not in scoped)
    ):
        raise ServiceError(404, "not_found", "import not found")
    return job


def import_view(
    db: Session, access: LibraryAccess, job: LibraryImport, *, with_entries: bool
) -> ImportView:
    counts = dict(
        db.execute(
            select(LibraryImportEntry.state, func.count())
            .where(LibraryImportEntry.import_id == job.id)
            .group_by(LibraryImportEntry.state)
        ).all()
    )
    summary = LibraryImportSummary(**{k: int(v) for k, v in counts.items()})
    entries = None
    if with_entries:
        rows = db.scalars(
            select(LibraryImportEntry)
            .where(LibraryImportEntry.import_id == job.id)
            .order_by(LibraryImportEntry.ordinal)
        ).all()
        entries = [
            EntryView(
                ordinal=r.ordinal,
                key=r.key,
                title=r.title,
                state=r.state,
                reason=r.reason,
                document_id=str(r.document_id) if r.document_id else None,
            )
            for r in rows
        ]
    return ImportView(
        id=str(job.id),
        status=job.status,
        format=job.format,
        filename=job.filename,
        collection=job.collection,
        collection_name=access.collection_name(job.collection),
        total=job.total,
        done=job.total - summary.pending,
        error=job.error,
        created_at=job.created_at.isoformat() if job.created_at else None,
        finished_at=job.finished_at.isoformat() if job.finished_at else None,
        summary=summary,
        entries=entries,
    )


def recent_imports(db: Session, access: LibraryAccess, limit: int = 20) -> list[LibraryImport]:
    query = select(LibraryImport).where(LibraryImport.owner_id == access.user_id)
    scoped = access.scoped_collections()
    if scoped is not None:
        query = query.where(LibraryImport.collection.in_(scoped))
    return list(db.scalars(query.order_by(LibraryImport.created_at.desc()).limit(limit)).all())
