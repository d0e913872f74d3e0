"""Deciding an approval: record the decision and wake the waiting job after commit.

The job row is locked while deciding, so two decisions (or a decision and a
cancel) cannot both pass the checks. The job leaves ``waiting_approval`` for
``running`` with no lease, and its advance message is sent only after the
commit (``transaction.after_commit``); a lost send is repaired by the sweeper.
The worker acts on the decision when it resumes (see
``services/worker/approvals/gate.py``): the API never touches the workspace.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from celery import Celery
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from services.api.approvals.schemas import ApprovalDecide
from services.api.errors import not_found
from services.api.jobs.service import enqueue
from services.api.transaction import after_commit
from services.common.contracts.errors import ServiceError
from services.common.events import EventPublisher
from services.common.models import Approval, Job, User
from services.common.models.approvals import DECISION_STATUS


def job_approvals(db: Session, *, job: Job) -> list[Approval]:
    return list(
        db.scalars(select(Approval).where(Approval.job_id == job.id).order_by(Approval.created_at))
    )


def decide(
    db: Session,
    *,
    celery: Celery,
    events: EventPublisher,
    user: User,
    job: Job,
    approval_id: uuid.UUID,
    body: ApprovalDecide,
) -> Approval:
    """Record ``body.decision`` on a pending approval of a job waiting for it."""
    locked = db.scalar(select(Job).where(Job.id == job.id).with_for_update())
    assert locked is not None
    approval = db.scalar(
        select(Approval).where(Approval.id == approval_id, Approval.job_id == job.id)
    )
    if approval is None:
        raise not_found("approval")
    if approval.status != "pending":
        raise ServiceError(409, "conflict", f"approval is already {approval.status}")
    if locked.status != "waiting_approval":
        raise ServiceError(409, "conflict", f"job is {locked.status}, not waiting for approval")
    feedback = (body.feedback or "").strip() or None
    if body.decision == "request_changes" and feedback is None:
        raise ServiceError(422, "invalid_request", "request_changes needs feedback for the model")
    now = datetime.now(UTC)
    approval.status = DECISION_STATUS[body.decision]
    approval.feedback = feedback
    approval.decided_by = user.id
    approval.decided_at = now
    db.execute(
        update(Job)
        .where(Job.id == job.id)
        .values(status="running", enqueued_at=now, updated_at=now)
    )
    db.flush()
    event = {
        "approval_id": str(approval.id),
        "status": approval.status,
        "decision": body.decision,
        "decided_by": str(user.id),
    }
    job_id = job.id
    after_commit(db, lambda: enqueue(celery, job_id))
    after_commit(db, lambda: _publish(events, job_id, event))
    return approval


def _publish(events: EventPublisher, job_id: uuid.UUID, event: dict[str, str]) -> None:
    events.publish(str(job_id), "approval", event)
    events.publish(str(job_id), "status", {"status": "running"})
