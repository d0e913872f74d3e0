"""The ``library.import`` task body: settle an import's pending entries in file order.

Guarantees:
- an entry is settled once: its state and its document are written in one
  transaction, fenced on the import's lease, and a run (a first one, or one
  resumed after a crash) picks only entries still ``pending``;
- re-importing adds nothing: an entry whose paper the library already holds
  (same DOI, arXiv id or title where the user can read, or the same content in
  the target collection) is ``matched`` to it;
- a bad entry never stops the import: it was ``skipped`` at upload, and a PDF
  that cannot be fetched leaves the entry ``metadata_only`` with the reason.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from services.common.bibliography import Entry
from services.common.contracts.collections import Collection
from services.common.contracts.tasks import send_ingest
from services.common.db import transaction
from services.common.documents.collections import readable_collections
from services.common.failpoints import failpoint
from services.common.models import LibraryImport, LibraryImportEntry
from services.common.models.library_imports import ENTRY_PENDING, IMPORT_DONE
from services.library.imports.catalog import Catalog, load_catalog
from services.library.imports.lease import ImportClaim, LeaseLost, claim_import, renew
from services.library.imports.settle import Fetched, Settled, fetch_pdf, settle_entry
from services.library.runtime import LibraryRuntime

log = logging.getLogger(__name__)
PAGE = 100


def run_import(runtime: LibraryRuntime, import_id: str) -> str:
    """Settle what is pending if the lease can be taken; returns the outcome."""
    ttl = runtime.settings.ingest_lease_ttl_s
    lease = claim_import(runtime.session_factory, uuid.UUID(import_id), ttl_s=ttl)
    if lease is None:
        log.info("library.import: import %s not claimable, skipping", import_id)
        return "skipped"
    log.info("library.import: import %s attempt %d by %s", import_id, lease.attempt, lease.owner)
    try:
        catalog = _catalog(runtime.session_factory, lease)
        if catalog is None:
            _finish(runtime.session_factory, lease, ttl, "the importing user is disabled")
            return "failed"
        settled = 0
        while batch := _pending(runtime.session_factory, lease.import_id):
            for row_id, data in batch:
                settled += _settle_one(runtime, lease, catalog, row_id, Entry.from_dict(data))
        _finish(runtime.session_factory, lease, ttl, None)
        log.info("library.import: import %s done (%d settled in this run)", import_id, settled)
        return "done"
    except LeaseLost:
        log.warning("library.import: import %s lease lost, stopping", import_id)
        return "lease_lost"
    except Exception as exc:
        log.error("library.import: import %s crashed (%s)", import_id, type(exc).__name__)
        _release(runtime.session_factory, lease)
        raise


def _catalog(factory: sessionmaker[Session], lease: ImportClaim) -> Catalog | None:
    with factory() as db:
        collections = readable_collections(db, lease.owner_id)
        if collections is None:
            return None
        if lease.collection not in collections:
            collections.append(Collection.parse(lease.collection))
        return load_catalog(db, collections=collections, target=lease.collection)


def _pending(factory: sessionmaker[Session], import_id: uuid.UUID) -> list[tuple[uuid.UUID, dict]]:
    with factory() as db:
        rows = db.execute(
            select(LibraryImportEntry.id, LibraryImportEntry.entry)
            .where(
                LibraryImportEntry.import_id == import_id,
                LibraryImportEntry.state == ENTRY_PENDING,
            )
            .order_by(LibraryImportEntry.ordinal)
            .limit(PAGE)
        ).all()
    return [(row_id, data or {}) for row_id, data in rows]


def _settle_one(
    runtime: LibraryRuntime, lease: ImportClaim, catalog: Catalog, row_id: uuid.UUID, entry: Entry
) -> int:
    """1 when this call settled the entry, 0 when someone else had."""
    # Fetch outside the transaction (seconds of network); a matched paper is not fetched.
    fetched = None if catalog.find(entry) is not None else fetch_pdf(runtime, entry)
    for retry in (False, True):
        try:
            outcome = _write(runtime, lease, catalog, row_id, entry, fetched)
            break
        except IntegrityError:
            # Another import created the same document meanwhile: settle again, which
            # now finds it (same content in the collection) and matches it.
            if retry:
                raise
    if outcome is None:
        return 0
    if outcome.ingest:  # after commit: the task must find the row
        send_ingest(runtime.celery, outcome.document_id)
    failpoint("library.import.after_entry")
    return 1


def _write(
    runtime: LibraryRuntime,
    lease: ImportClaim,
    catalog: Catalog,
    row_id: uuid.UUID,
    entry: Entry,
    fetched: Fetched | None,
) -> Settled | None:
    with transaction(runtime.session_factory) as db:
        renew(db, lease, ttl_s=runtime.settings.ingest_lease_ttl_s)
        row = db.get(LibraryImportEntry, row_id, with_for_update=True)
        if row is None or row.state != ENTRY_PENDING:
            return None
        return settle_entry(db, lease=lease, row=row, entry=entry, catalog=catalog, fetched=fetched)


def _finish(
    factory: sessionmaker[Session], lease: ImportClaim, ttl: float, error: str | None
) -> None:
    with transaction(factory) as db:
        renew(
            db,
            lease,
            ttl_s=ttl,
            status=IMPORT_DONE,
            error=error,
            finished_at=datetime.now(UTC),
            lease_owner=None,
            lease_until=None,
        )


def _release(factory: sessionmaker[Session], lease: ImportClaim) -> None:
    """Let the lease lapse now, so the sweeper resumes the import soon."""
    try:
        with transaction(factory) as db:
            db.execute(
                update(LibraryImport)
                .where(
                    LibraryImport.id == lease.import_id, LibraryImport.lease_owner == lease.owner
                )
                .values(lease_until=datetime.now(UTC))
            )
    except Exception:  # Postgres away: the lease expires by itself
        log.warning("library.import: could not release import %s", lease.import_id)
