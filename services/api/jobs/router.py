"""Jobs: submit, list, read, cancel, and the ledger and artifacts of each.

Handlers parse and authorise; ``service`` decides and writes; the request
boundary (``deps.get_db``) commits and then sends the planned Celery messages.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query
from sqlalchemy import select

from services.api.access import member_project, owned_session, require_text, visible_job
from services.api.admin.budgets.remaining import remaining_budget, survey_estimate
from services.api.deps import CurrentUser, DbSession, StateDep
from services.api.errors import error_responses
from services.api.jobs import service
from services.api.jobs.schemas import (
    JobAccepted,
    JobCreate,
    JobKind,
    JobList,
    JobOut,
    JobStatus,
    StepList,
    StepOut,
)
from services.common.models import Job, JobStep

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], responses=error_responses(401, 422))


@router.post("", status_code=202, response_model=JobAccepted, responses=error_responses(404, 413))
def submit_job(
    body: Annotated[JobCreate, Body()], db: DbSession, user: CurrentUser, state: StateDep
) -> JobAccepted:
    """Queue a turn, survey or batch job. ``project`` and ``session_id`` must be the caller's."""
    job_input = body.input.model_dump()
    for text_value in _texts(body.kind, job_input):
        require_text(text_value, limit=state.settings.max_message_chars, what="content")
    project = member_project(db, user, body.project) if body.project else None
    session = owned_session(db, user, body.session_id, lock=True) if body.session_id else None
    job = service.submit_job(
        db,
        celery=state.celery,
        user=user,
        kind=body.kind,
        job_input=job_input,
        session=session,
        project=project,
        max_turns=body.max_turns or state.settings.max_turns_default,
    )
    return JobAccepted(
        id=job.id,
        status="queued",
        session_id=job.session_id,
        budget=remaining_budget(db, user_id=user.id, project_id=job.project_id),
        estimate=survey_estimate(db, length=job_input["length"]) if body.kind == "survey" else None,
    )


def _texts(kind: str, job_input: dict[str, Any]) -> list[str]:
    if kind == "turn":
        return [job_input["content"]]
    if kind == "batch":
        return [t["content"] for t in job_input["tasks"]]
    return []


@router.get("", response_model=JobList)
def list_jobs(
    db: DbSession,
    user: CurrentUser,
    status: JobStatus | None = Query(None),
    kind: JobKind | None = Query(None),
    all_users: bool = Query(False, alias="all", description="admins: every user's jobs"),
    limit: int = Query(50, ge=1, le=500),
) -> JobList:
    stmt = select(Job).order_by(Job.created_at.desc()).limit(limit)
    if not (user.is_admin and all_users):
        stmt = stmt.where(Job.user_id == user.id)
    if status is not None:
        stmt = stmt.where(Job.status == status)
    if kind is not None:
        stmt = stmt.where(Job.kind == kind)
    return JobList(items=[JobOut.of(j) for j in db.scalars(stmt)])


@router.get("/{job_id}", response_model=JobOut, responses=error_responses(404))
def get_job(job_id: str, db: DbSession, user: CurrentUser) -> JobOut:
    return JobOut.of(visible_job(db, user, job_id))


@router.get("/{job_id}/steps", response_model=StepList, responses=error_responses(404))
def get_steps(job_id: str, db: DbSession, user: CurrentUser) -> StepList:
    job = visible_job(db, user, job_id)
    rows = db.scalars(select(JobStep).where(JobStep.job_id == job.id).order_by(JobStep.seq))
    return StepList(items=[StepOut.model_validate(r) for r in rows])


@router.post(
    "/{job_id}/cancel", status_code=202, response_model=JobOut, responses=error_responses(404, 409)
)
def cancel_job(job_id: str, db: DbSession, user: CurrentUser, state: StateDep) -> JobOut:
    """Cancel a job: at once while queued, at the next step boundary while running."""
    job = visible_job(db, user, job_id)
    return JobOut.of(service.cancel_job(db, celery=state.celery, job=job))
