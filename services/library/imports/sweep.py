"""Resumes imports that stopped: in flight, and either claimed by a worker that
stopped renewing (a crash) or unclaimed for a while (a lost message). The task
then settles only what is still pending. Run from the library's sweeper thread;
several sweepers at once are harmless (the task works only under the lease).
"""

from __future__ import annotations

import logging
import uuid

from celery import Celery
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.tasks import send_import
from services.common.db import transaction
from services.common.models import LibraryImport
from services.common.models.library_imports import IMPORT_DONE
from services.library.imports.lease import IMPORTS

log = logging.getLogger(__name__)
# An import makes progress on every attempt; one that stops this often is stuck.
MAX_ATTEMPTS = 20


def sweep_imports(
    factory: sessionmaker[Session], celery: Celery, *, requeue_after_s: float, batch: int = 50
) -> int:
    """One pass; returns how many imports were sent again."""
    again: list[uuid.UUID] = []
    with transaction(factory) as db:
        rows = db.execute(
            select(LibraryImport.id, LibraryImport.attempts)
            .where(IMPORTS.stale(requeue_after_s=requeue_after_s))
            .limit(batch)
            .with_for_update(skip_locked=True)
        ).all()
        for import_id, attempts in rows:
            values: dict[str, object] = {"lease_owner": None, "lease_until": func.now()}
            if attempts >= MAX_ATTEMPTS:
                values |= {
                    "status": IMPORT_DONE,
                    "error": f"the import stopped {attempts} times; its pending entries are left",
                    "finished_at": func.now(),
                }
            else:
                again.append(import_id)
            db.execute(update(LibraryImport).where(LibraryImport.id == import_id).values(values))
    for import_id in again:
        log.warning("library.sweep: resuming import %s", import_id)
        send_import(celery, import_id)
    return len(again)
