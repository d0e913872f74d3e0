"""One owner-fenced lease for the library's durable rows: documents and imports.

A table whose rows are worked on by one worker at a time carries ``status``,
``lease_owner``, ``lease_until``, ``attempts`` and ``updated_at``. A worker claims
a row with one ``UPDATE … RETURNING`` (in flight, lease free or expired), every
write it makes is fenced on its owner id (a worker that lost the lease — paused,
cut off, overtaken by the sweeper — changes nothing), and the sweeper finds the
rows whose work stopped with :meth:`RowLease.stale`.

Jobs keep their own lease (``services/worker/spine/lease.py``): an integer fence
that the step ledger's writes re-read under a row lock, and one renewal statement
for every job a process holds, which a per-row owner string cannot give.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, func, or_, update
from sqlalchemy.orm import InstrumentedAttribute, Session


class LeaseLost(Exception):
    """Another worker (or the sweeper) took the row over; stop quietly."""


def new_owner() -> str:
    """Unique per claim, so even a stale attempt in the same process is fenced out."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


class RowLease:
    """The lease of one table's rows (``model``: an ORM class with the lease columns)."""

    def __init__(self, model: Any, *, in_flight: Iterable[str], what: str) -> None:
        self.model = model
        self.in_flight = tuple(in_flight)
        self.what = what  # how a log line names a row: "document", "import"

    def claim(
        self,
        db: Session,
        row_id: uuid.UUID,
        *,
        owner: str,
        ttl_s: float,
        returning: Iterable[InstrumentedAttribute[Any]],
        max_attempts: int | None = None,
        **values: Any,
    ) -> Sequence[Any] | None:
        """Take the lease for ``owner`` and count the attempt, writing ``values`` too;
        the ``returning`` columns, or None when the row is finished, held by someone
        else or (``max_attempts``) out of tries."""
        m = self.model
        where = [
            m.id == row_id,
            m.status.in_(self.in_flight),
            or_(m.lease_owner.is_(None), m.lease_until < func.now()),
        ]
        if max_attempts is not None:
            where.append(m.attempts < max_attempts)
        return db.execute(
            update(m)
            .where(*where)
            .values(
                lease_owner=owner,
                lease_until=func.now() + timedelta(seconds=ttl_s),
                attempts=m.attempts + 1,
                updated_at=func.now(),
                **values,
            )
            .returning(*returning)
        ).first()

    def fenced_update(
        self,
        db: Session,
        row_id: uuid.UUID,
        owner: str,
        values: Mapping[str, Any],
        *,
        renew_s: float | None = None,
    ) -> None:
        """Inside the caller's transaction: write ``values`` (and, with ``renew_s``,
        extend the lease) only while ``owner`` still holds it, else raise LeaseLost
        so the transaction rolls back."""
        m = self.model
        extended = {}
        if renew_s is not None:
            extended["lease_until"] = func.now() + timedelta(seconds=renew_s)
        result = db.execute(
            update(m)
            .where(m.id == row_id, m.lease_owner == owner)
            .values({"updated_at": func.now(), **extended, **values})
        )
        if result.rowcount != 1:  # type: ignore[attr-defined]
            raise LeaseLost(f"{self.what} {row_id}: lease {owner} lost")

    def stale(self, *, requeue_after_s: float) -> ColumnElement[bool]:
        """In flight, and either claimed by a worker that stopped renewing (a crash)
        or unclaimed for ``requeue_after_s`` (its message was lost or is stuck)."""
        m = self.model
        return and_(
            m.status.in_(self.in_flight),
            or_(
                and_(m.lease_owner.is_not(None), m.lease_until < func.now()),
                and_(
                    m.lease_owner.is_(None),
                    func.coalesce(m.lease_until, m.updated_at)
                    < func.now() - timedelta(seconds=requeue_after_s),
                ),
            ),
        )
