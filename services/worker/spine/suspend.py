"""Suspending a turn while something outside it (a human, a child job) decides.

A suspended job holds no worker thread and no lease: the step that waits is
written in the same transaction that clears the lease (and, for approvals, sets
``waiting_approval``), so whoever ends the wait (the approval route, a child's
finish) can take the lease at once and the wait survives any restart.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import trace
from sqlalchemy import text
from sqlalchemy.orm import Session

from services.common.contracts.statuses import JobStatus
from services.worker.spine.lease import Lease, check_fence


class StepSuspended(Exception):
    """Raised by a tool step that must wait; the turn returns ``Outcome.WAITING``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def suspend_job(db: Session, lease: Lease, *, status: JobStatus) -> None:
    """In the caller's transaction: check the fence, set ``status``, give the lease up."""
    check_fence(db, lease)
    db.execute(
        text(
            "UPDATE jobs SET status = :status, lease_owner = NULL, lease_until = NULL, "
            "enqueued_at = now(), updated_at = now() WHERE id = :id AND fence = :fence"
        ),
        {"status": status, "id": lease.job_id, "fence": lease.fence},
    )


@contextmanager
def noting_suspension(span: trace.Span) -> Iterator[None]:
    """Inside a span opened with exception recording off: a suspension is noted
    as an attribute (the step did not fail), any other exception as an error."""
    try:
        yield
    except StepSuspended as waiting:
        span.set_attribute("leaflab.suspended", waiting.reason)
        raise
    except BaseException as exc:
        span.record_exception(exc)
        span.set_status(trace.StatusCode.ERROR, f"{type(exc).__name__}: {exc}"[:500])
        raise
