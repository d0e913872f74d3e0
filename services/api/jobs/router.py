"""Jobs: submit, list, read, cancel, and the ledger and artifacts of each.

Handlers parse and authorise; ``service`` decides and writes; the request
boundary (``deps.get_db``) commits and then sends the planned Celery messages.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query
from sqlalchemy import select
from sqlalchemy.orm import Session

from services.api.access import (
    changeable_job,
    key_scope,
    member_or_personal,
    member_project,
    visible_job,
)
from services.api.admin.budgets.remaining import remaining_budget
from services.api.admin.budgets.schemas import CostEstimate
from services.api.bodies import NO_NUL
from services.api.deps import CurrentUser, DbSession, StateDep
from services.api.errors import error_responses
from services.api.jobs import service
from services.api.jobs.schemas import (
    JobAccepted,
    JobCreate,
    JobKind,
    JobList,
    JobOut,
    JobStatusName,
    StepList,
    StepOut,
)
from services.api.jobs.submission import submit
from services.api.jobs.usage import job_usage
from services.api.surveys.estimate import survey_figures
from services.common.contracts.errors import ServiceError
from services.common.models import Job, JobStep, User

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], responses=error_responses(401, 422))


@router.post("", status_code=202, response_model=JobAccepted, responses=error_responses(404, 413))
def submit_job(
    body: Annotated[JobCreate, Body()], db: DbSession, user: CurrentUser, state: StateDep
) -> JobAccepted:
    """Queue a turn, survey or batch job. ``project`` and ``session_id`` must be the caller's."""
    job = submit(db, settings=state.settings, celery=state.celery, user=user, body=body)
    job_input = job.input
    return JobAccepted(
        id=job.id,
        status="queued",
        session_id=job.session_id,
        budget=remaining_budget(db, user_id=user.id, project_id=job.project_id),
        estimate=_survey_estimate(db, job, job_input) if body.kind == "survey" else None,
    )


def _survey_estimate(db: Session, job: Job, job_input: dict[str, Any]) -> CostEstimate:
    """The same figures as ``POST /v1/surveys/estimate`` (services/api/surveys)."""
    calls, _, cost = survey_figures(
        db,
        user_id=job.user_id,
        project_id=job.project_id,
        length=job_input["length"],
        seeds=len(job_input["seed_papers"]),
    )
    return CostEstimate(
        model_calls=calls.count, tokens=calls.input_tokens + calls.output_tokens, cost_usd=cost
    )


@router.get("", response_model=JobList, responses=error_responses(403, 404))
def list_jobs(
    db: DbSession,
    user: CurrentUser,
    status: JobStatusName | None = Query(None),
    kind: JobKind | None = Query(None),
    all_users: bool = Query(False, alias="all", description="admins: every user's jobs"),
    project: str | None = Query(
        None, max_length=200, pattern=NO_NUL, description="every member's jobs in this project"
    ),
    parent: uuid.UUID | None = Query(None, description="only the children of this job"),
    owner: str | None = Query(
        None,
        alias="user",
        max_length=320,
        pattern=NO_NUL,
        description="admins: only this user's jobs (email or id)",
    ),
    session: uuid.UUID | None = Query(None, description="only the turns of this chat session"),
    limit: int = Query(50, ge=1, le=500),
) -> JobList:
    """The caller's own jobs; with ``project``, every job in that project (members only)."""
    stmt = select(Job).order_by(Job.created_at.desc()).limit(limit)
    if owner is not None:
        stmt = stmt.where(Job.user_id == _owner_id(db, user, owner))
    if project is not None:
        stmt = stmt.where(Job.project_id == member_project(db, user, project).id)
    elif owner is None and not (user.is_admin and all_users):
        stmt = stmt.where(Job.user_id == user.id, member_or_personal(user, Job.project_id))
    scope = key_scope(db)
    if scope is not None:
        stmt = stmt.where(Job.project_id == scope)
    if status is not None:
        stmt = stmt.where(Job.status == status)
    if kind is not None:
        stmt = stmt.where(Job.kind == kind)
    if parent is not None:  # the job tree: a batch's tasks, a turn's subagents
        stmt = stmt.where(Job.parent_job_id == parent)
    if session is not None:  # the chat page's per-turn usage
        stmt = stmt.where(Job.session_id == session)
    return JobList(items=_views(db, list(db.scalars(stmt))))


def _views(db: Session, jobs: list[Job]) -> list[JobOut]:
    """The jobs as the API reports them: a batch's usage includes its tasks'."""
    usage = job_usage(db, jobs)
    return [JobOut.of(j, usage[j.id]) for j in jobs]


def _owner_id(db: Session, caller: User, owner: str) -> uuid.UUID:
    """The user an admin filters by; anyone else learns nothing about other users."""
    if not caller.is_admin:
        raise ServiceError(403, "forbidden", "only admins may list another user's jobs")
    wanted = owner.strip()
    try:
        found = db.get(User, uuid.UUID(wanted))
    except ValueError:
        found = db.scalar(select(User).where(User.email == wanted.lower()))
    if found is None:
        raise ServiceError(404, "not_found", f"no user {wanted!r}")
    return found.id


@router.get("/{job_id}", response_model=JobOut, responses=error_responses(404))
def get_job(job_id: str, db: DbSession, user: CurrentUser) -> JobOut:
    return _views(db, [visible_job(db, user, job_id)])[0]


@router.get("/{job_id}/steps", response_model=StepList, responses=error_responses(404))
def get_steps(job_id: str, db: DbSession, user: CurrentUser) -> StepList:
    job = visible_job(db, user, job_id)
    rows = db.scalars(select(JobStep).where(JobStep.job_id == job.id).order_by(JobStep.seq))
    return StepList(items=[StepOut.model_validate(r) for r in rows])


@router.post(
    "/{job_id}/cancel",
    status_code=202,
    response_model=JobOut,
    responses=error_responses(403, 404, 409),
)
def cancel_job(job_id: str, db: DbSession, user: CurrentUser, state: StateDep) -> JobOut:
    """Cancel a job: at once while queued, at the next step boundary while running.

    Its owner, an admin or an owner of its project may cancel; other project
    members see the job but get 403.
    """
    job = changeable_job(db, user, job_id)
    return _views(db, [service.cancel_job(db, celery=state.celery, job=job)])[0]
