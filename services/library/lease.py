"""The ingest lease on a document row: one worker at a time, and a trace of
who was working on it when it stopped.

A worker claims the row with one ``UPDATE … RETURNING`` (in flight, lease free
or expired, tries left), renews the lease while it works, and every status it
writes is fenced on its owner id: a worker that lost the lease (paused, cut
off, overtaken by the sweeper) can no longer change the row.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.collections import Collection
from services.common.contracts.statuses import (
    DOCUMENT_IN_FLIGHT,
    DOCUMENT_INGESTED,
    DocumentStatus,
)
from services.common.db import transaction
from services.common.models import Document
from services.common.periodic import STOP, Periodic
from services.library.row_lease import LeaseLost, RowLease, new_owner

__all__ = ["DOCUMENTS", "IN_FLIGHT", "Claim", "LeaseKeeper", "LeaseLost", "claim", "fenced_set"]

log = logging.getLogger(__name__)
IN_FLIGHT = DOCUMENT_IN_FLIGHT  # the name its callers import
DOCUMENTS = RowLease(Document, in_flight=IN_FLIGHT, what="document")


@dataclass(frozen=True)
class Claim:
    owner: str
    document_id: uuid.UUID
    collection: Collection
    content_hash: str
    filename: str | None
    source_url: str | None
    attempt: int


def claim(
    factory: sessionmaker[Session], document_id: uuid.UUID, *, ttl_s: float, max_attempts: int
) -> Claim | None:
    """Take the lease and count the attempt; None if finished, held or out of tries."""
    owner = new_owner()
    with transaction(factory) as db:
        row = DOCUMENTS.claim(
            db,
            document_id,
            owner=owner,
            ttl_s=ttl_s,
            max_attempts=max_attempts,
            status=DocumentStatus.PARSING,
            error=None,
            returning=(
                Document.collection,
                Document.content_hash,
                Document.filename,
                Document.source_url,
                Document.attempts,
            ),
        )
    if row is None:
        return None
    return Claim(owner, document_id, row[0], row[1], row[2], row[3], row[4])


def fenced_set(factory: sessionmaker[Session], lease: Claim, **values: Any) -> None:
    """Write ``values`` only while ``lease`` is still ours; a final status releases it."""
    if values.get("status") in DOCUMENT_INGESTED:
        values = {**values, "lease_owner": None, "lease_until": None}
    with transaction(factory) as db:
        DOCUMENTS.fenced_update(db, lease.document_id, lease.owner, values)


class LeaseKeeper:
    """Renews a claim every ttl/3 on a thread while the pipeline runs."""

    def __init__(self, factory: sessionmaker[Session], lease: Claim, *, ttl_s: float) -> None:
        self._factory, self._lease, self._ttl = factory, lease, ttl_s
        self.lost = False
        # A DB blip: try again next tick, the lease may still hold.
        self._loop = Periodic(
            "ingest-lease",
            ttl_s / 3,
            self._renew,
            failure=f"renewing the ingest lease of {lease.document_id} failed",
            join_s=5,
        )

    def __enter__(self) -> LeaseKeeper:
        self._loop.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._loop.stop()

    def _renew(self) -> bool | None:
        try:
            fenced_set(
                self._factory,
                self._lease,
                lease_until=datetime.now(UTC) + timedelta(seconds=self._ttl),
            )
        except LeaseLost:
            self.lost = True
            log.warning("ingest lease lost for document %s", self._lease.document_id)
            return STOP
        return None
