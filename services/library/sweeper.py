"""Retries documents whose ingestion stopped without an outcome.

A document in flight (queued, parsing, embedding) with nobody holding its
lease is either waiting for a message that was lost, or was being ingested by
a worker that died. The sweeper sends ``library.ingest`` again, or, once the
document has been claimed ``max_attempts`` times, fails it with the reason.
It runs as a thread in each library service; duplicates between several
sweepers are harmless because a task only works under the document's lease.
"""

from __future__ import annotations

import logging
import uuid

from celery import Celery
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.statuses import DocumentStatus
from services.common.contracts.tasks import send_ingest
from services.common.db import transaction
from services.common.models import Document
from services.common.periodic import Periodic
from services.library.imports.sweep import sweep_imports
from services.library.lease import DOCUMENTS

log = logging.getLogger(__name__)


def give_up_reason(attempts: int, last_error: str | None) -> str:
    last = f"; last: {last_error}" if last_error else " (the ingest worker was lost each time)"
    return f"ingestion stopped {attempts} times without finishing{last}"


def sweep_once(
    factory: sessionmaker[Session],
    celery: Celery,
    *,
    requeue_after_s: float,
    max_attempts: int,
    batch: int = 100,
) -> tuple[int, int]:
    """One pass; returns (requeued, failed)."""
    requeue: list[uuid.UUID] = []
    failed = 0
    with transaction(factory) as db:
        rows = db.execute(
            select(Document.id, Document.attempts, Document.lease_owner, Document.error)
            .where(DOCUMENTS.stale(requeue_after_s=requeue_after_s))
            .order_by(Document.lease_until)
            .limit(batch)
            .with_for_update(skip_locked=True)
        ).all()
        for doc_id, attempts, owner, last_error in rows:
            if attempts >= max_attempts:
                db.execute(
                    update(Document)
                    .where(Document.id == doc_id)
                    .values(
                        status=DocumentStatus.FAILED,
                        error=give_up_reason(attempts, last_error),
                        lease_owner=None,
                        lease_until=None,
                        updated_at=func.now(),
                    )
                )
                failed += 1
                log.error(
                    "library.sweep: document %s failed after %d attempts (last owner %s)",
                    doc_id,
                    attempts,
                    owner,
                )
                continue
            # Clear the owner and restart the clock: the next send waits requeue_after_s.
            db.execute(
                update(Document)
                .where(Document.id == doc_id)
                .values(lease_owner=None, lease_until=func.now())
            )
            requeue.append(doc_id)
            log.warning(
                "library.sweep: requeueing document %s (attempts %d, last owner %s)",
                doc_id,
                attempts,
                owner,
            )
    for doc_id in requeue:  # after commit, so the task sees the released lease
        send_ingest(celery, doc_id)
    return len(requeue), failed


class IngestSweeper:
    """Runs :func:`sweep_once` every ``interval_s`` on a daemon thread."""

    def __init__(
        self,
        factory: sessionmaker[Session],
        celery: Celery,
        *,
        interval_s: float,
        requeue_after_s: float,
        max_attempts: int,
    ) -> None:
        self._factory, self._celery = factory, celery
        self._interval = interval_s
        self._requeue_after, self._max_attempts = requeue_after_s, max_attempts
        # Every library worker sweeps (no cluster lock): a pass takes its rows FOR
        # UPDATE SKIP LOCKED and restarts their clock, so two passes at once re-send a
        # document once. Postgres or Redis away: the next pass tries again.
        self._loop = Periodic(
            "ingest-sweeper", interval_s, self._tick, failure="library.sweep: pass failed"
        )

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def _tick(self) -> None:
        sweep_once(
            self._factory,
            self._celery,
            requeue_after_s=self._requeue_after,
            max_attempts=self._max_attempts,
        )
        sweep_imports(self._factory, self._celery, requeue_after_s=self._requeue_after)
