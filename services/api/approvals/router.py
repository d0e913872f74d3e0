"""Approvals: ``GET /v1/jobs/{id}/approvals``, ``POST /v1/jobs/{id}/approvals/{approval_id}``.

Whoever may read the job sees its approvals: its owner, an admin, or any
current member of the job's project. Deciding one changes the job, so only its
owner (still a member, for a project job), an admin or an ``owner`` of the
job's project may; a member who can only read it gets 403, anyone else 404, as
for the job itself (``services/api/access.py``). The approval must belong to
the job named in the path.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body

from services.api.access import changeable_job, parse_id, visible_job
from services.api.approvals import service
from services.api.approvals.schemas import ApprovalDecide, ApprovalList, ApprovalOut
from services.api.deps import CurrentUser, DbSession, StateDep
from services.api.errors import error_responses
from services.common.events import EventPublisher

router = APIRouter(prefix="/v1/jobs", tags=["approvals"], responses=error_responses(401, 422))


@router.get("/{job_id}/approvals", response_model=ApprovalList, responses=error_responses(404))
def list_approvals(job_id: str, db: DbSession, user: CurrentUser) -> ApprovalList:
    """The job's approvals, oldest first, each with its diffs and status."""
    job = visible_job(db, user, job_id)
    return ApprovalList(
        items=[ApprovalOut.model_validate(a) for a in service.job_approvals(db, job=job)]
    )


@router.post(
    "/{job_id}/approvals/{approval_id}",
    response_model=ApprovalOut,
    responses=error_responses(403, 404, 409, 413),
)
def decide_approval(
    job_id: str,
    approval_id: str,
    body: Annotated[ApprovalDecide, Body()],
    db: DbSession,
    user: CurrentUser,
    state: StateDep,
) -> ApprovalOut:
    """Apply, request changes (``feedback`` goes to the model) or reject; wakes the job.

    Deciding changes the job: its owner, an admin or a project owner may; a
    project member who can only read it gets 403."""
    job = changeable_job(db, user, job_id)
    approval = service.decide(
        db,
        celery=state.celery,
        events=EventPublisher(state.redis),
        user=user,
        job=job,
        approval_id=parse_id(approval_id, "approval"),
        body=body,
    )
    return ApprovalOut.model_validate(approval)
