"""The ingest lease on a document row: one worker at a time, and a trace of
who was working on it when it stopped.

A worker claims the row with one ``UPDATE … RETURNING`` (in flight, lease free
or expired, tries left), renews the lease while it works, and every status it
writes is fenced on its owner id: a worker that lost the lease (paused, cut
off, overtaken by the sweeper) can no longer change the row.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, update
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.statuses import (
    DOCUMENT_IN_FLIGHT,
    DOCUMENT_INGESTED,
    DocumentStatus,
)
from services.common.db import transaction
from services.common.models import Document
from services.common.periodic import STOP, Periodic

log = logging.getLogger(__name__)
IN_FLIGHT = DOCUMENT_IN_FLIGHT  # the name its callers import


class LeaseLost(Exception):
    """Another worker (or the sweeper) took the document over; stop quietly."""


@dataclass(frozen=True)
class Claim:
    owner: str
    document_id: uuid.UUID
    collection: str
    content_hash: str
    filename: str | None
    source_url: str | None
    attempt: int


def new_owner() -> str:
    """Unique per claim, so even a stale attempt in the same process is fenced out."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def claim(
    factory: sessionmaker[Session], document_id: uuid.UUID, *, ttl_s: float, max_attempts: int
) -> Claim | None:
    """Take the lease and count the attempt; None if finished, held or out of tries."""
    owner = new_owner()
    with transaction(factory) as db:
        row = db.execute(
            update(Document)
            .where(
                Document.id == document_id,
                Document.status.in_(IN_FLIGHT),
                or_(Document.lease_owner.is_(None), Document.lease_until < func.now()),
                Document.attempts < max_attempts,
            )
            .values(
                lease_owner=owner,
                lease_until=func.now() + timedelta(seconds=ttl_s),
                attempts=Document.attempts + 1,
                status=DocumentStatus.PARSING,
                error=None,
                updated_at=func.now(),
            )
            .returning(
                Document.collection,
                Document.content_hash,
                Document.filename,
                Document.source_url,
                Document.attempts,
            )
        ).first()
    if row is None:
        return None
    return Claim(owner, document_id, row[0], row[1], row[2], row[3], row[4])


def fenced_set(factory: sessionmaker[Session], lease: Claim, **values: Any) -> None:
    """Write ``values`` only while ``lease`` is still ours; a final status releases it."""
    if values.get("status") in DOCUMENT_INGESTED:
        values = {**values, "lease_owner": None, "lease_until": None}
    with transaction(factory) as db:
        result = db.execute(
            update(Document)
            .where(Document.id == lease.document_id, Document.lease_owner == lease.owner)
            .values(**values, updated_at=datetime.now(UTC))
        )
        if result.rowcount != 1:  # type: ignore[attr-defined]
            raise LeaseLost(f"document {lease.document_id}: lease {lease.owner} lost")


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
