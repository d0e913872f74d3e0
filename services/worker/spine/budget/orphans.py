"""The sweeper's share of budgets: release reservations whose worker died.

A reservation is tied to the lease (job + fence) it was made under. Once that
lease has expired, or another worker took the job over, its holder can no
longer settle through the ledger, so the worst case it held goes back to the
budget; the job is re-run from its ledger and reserves again.
"""

from __future__ import annotations

import logging

from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from services.common.metrics import BUDGET_ORPHANS_RELEASED

log = logging.getLogger(__name__)

RELEASE_ORPHANS_SQL = text(
    """
    WITH gone AS (
        DELETE FROM budget_reservations r
         WHERE r.created_at < now() - make_interval(secs => :grace_s)
           AND NOT EXISTS (
               SELECT 1 FROM jobs j
                WHERE j.id = r.job_id AND j.fence = r.fence AND j.lease_until > now())
        RETURNING r.budget_ids, r.usd, r.tokens
    ), per_budget AS (
        SELECT b_id, sum(g.usd) AS usd, sum(g.tokens) AS tokens
          FROM gone g, unnest(g.budget_ids) AS b_id
         GROUP BY b_id
    ), locked AS (
        SELECT b.id FROM budgets b
         WHERE b.id IN (SELECT b_id FROM per_budget)
         ORDER BY b.id
           FOR UPDATE
    ), upd AS (
        UPDATE budgets b
           SET reserved_usd = b.reserved_usd - p.usd,
               reserved_tokens = b.reserved_tokens - p.tokens,
               updated_at = now()
          FROM per_budget p
         WHERE b.id = p.b_id AND b.id IN (SELECT id FROM locked)
        RETURNING b.id
    )
    SELECT (SELECT count(*) FROM gone) AS released
    """
)


def release_orphans(factory: sessionmaker[Session], *, grace_s: float = 0.0) -> int:
    """Release reservations whose job no longer holds the lease they were made under."""
    with factory() as db, db.begin():
        # Bounded: a budget row held by a cut-off worker's open transaction must not
        # stall the sweeper (and the job recovery after it); the next sweep retries.
        db.execute(text("SET LOCAL lock_timeout = '2s'"))
        return int(db.execute(RELEASE_ORPHANS_SQL, {"grace_s": grace_s}).scalar_one())


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
