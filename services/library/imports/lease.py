"""The lease on an import row: one worker at a time, fenced writes.

The same lease as a document's (``row_lease.RowLease``, services/library/lease.py): a
claim is one ``UPDATE … RETURNING`` on an import still in flight whose lease is
free or expired, counting attempts; each entry the holder settles renews it in
the same transaction that writes the entry, so a worker that lost the lease
(paused past its ttl, overtaken by the sweeper) can no longer write anything.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.collections import Collection
from services.common.db import transaction
from services.common.models import LibraryImport
from services.common.models.library_imports import IMPORT_IN_FLIGHT, IMPORT_RUNNING
from services.library.row_lease import LeaseLost, RowLease, new_owner

__all__ = ["IMPORTS", "ImportClaim", "LeaseLost", "claim_import", "renew"]

IMPORTS = RowLease(LibraryImport, in_flight=IMPORT_IN_FLIGHT, what="import")


@dataclass(frozen=True)
class ImportClaim:
    owner: str
    import_id: uuid.UUID
    owner_id: uuid.UUID
    collection: Collection
    project_id: uuid.UUID | None
    attempt: int


def claim_import(
    factory: sessionmaker[Session], import_id: uuid.UUID, *, ttl_s: float
) -> ImportClaim | None:
    """Take the import's lease; None if it is finished or someone holds it."""
    owner = new_owner()
    with transaction(factory) as db:
        row = IMPORTS.claim(
            db,
            import_id,
            owner=owner,
            ttl_s=ttl_s,
            status=IMPORT_RUNNING,
            returning=(
                LibraryImport.owner_id,
                LibraryImport.collection,
                LibraryImport.project_id,
                LibraryImport.attempts,
            ),
        )
    if row is None:
        return None
    return ImportClaim(owner, import_id, row[0], row[1], row[2], row[3])


def renew(db: Session, lease: ImportClaim, *, ttl_s: float, **values: object) -> None:
    """Inside the caller's transaction: extend the lease (and write ``values``) only
    while it is still ours, else raise LeaseLost so the transaction rolls back."""
    IMPORTS.fenced_update(db, lease.import_id, lease.owner, values, renew_s=ttl_s)
