"""The sweeper's share of budgets: release reservations whose worker died.

A reservation is tied to the lease (job + fence) it was made under. Once that
lease has expired, or another worker took the job over, its holder can no
longer settle through the ledger, so the worst case it held goes back to the
budget; the job is re-run from its ledger and reserves again.
"""

from __future__ import annotations

import logging

from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from services.common.metrics import BUDGET_ORPHANS_RELEASED
from services.worker.budget.reservation import release_orphans

log = logging.getLogger(__name__)


def sweep_reservations(factory: sessionmaker[Session]) -> int:
    """Release orphaned reservations; a lock conflict just waits for the next sweep."""
    try:
        released = release_orphans(factory)
    except OperationalError:  # a deadlock or timeout: harmless, retried next period
        log.warning("releasing orphaned budget reservations failed; retrying next sweep")
        return 0
    if released:
        BUDGET_ORPHANS_RELEASED.inc(released)
        log.info("released %d orphaned budget reservation(s)", released)
    return released
