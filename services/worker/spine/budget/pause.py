"""Parking a job whose budget is exhausted: status ``budget_exhausted``, no lease held.

The job keeps its whole ledger; nothing after the last recorded step ran (the
refused call was never made). Raising the budget (``PUT /v1/admin/budgets``)
puts the job back in the queue and it resumes from its ledger.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from services.worker.spine.budget.gate import Admission
from services.worker.spine.events import JobEvents
from services.worker.spine.lease import Lease, check_fence

PAUSE_SQL = text(
    """
    UPDATE jobs
       SET status = 'budget_exhausted', error = :message,
           budget_need_usd = :need_usd, budget_need_tokens = :need_tokens,
           lease_owner = NULL, lease_until = NULL, updated_at = now()
     WHERE id = :id AND fence = :fence
    """
)


def pause_for_budget(
    factory: sessionmaker[Session], lease: Lease, events: JobEvents, *, admission: Admission
) -> None:
    """Pause the job under its fence (raises ``LeaseLost`` if another worker took it),
    then tell watchers why: a ``budget`` event and the new status."""
    message = admission.message or "budget exhausted"
    held = admission.reservation
    overrun = bool(held.overrun_by)
    params = {
        "message": message,
        "id": lease.job_id,
        "fence": lease.fence,
        # An overrun refuses every call, whatever it costs: no amount to show.
        "need_usd": None if overrun else held.usd,
        "need_tokens": None if overrun else held.tokens,
    }
    with factory() as db, db.begin():
        check_fence(db, lease)
        db.execute(PAUSE_SQL, params)
    events.emit("budget", {"state": "exhausted", "overrun": overrun, "message": message})
    events.emit("status", {"status": "budget_exhausted", "error": message})
