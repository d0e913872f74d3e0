"""``/v1/schedules``: a job body submitted on every slot of a cron expression.

A schedule without a project runs as, and is billed to, its creator; with one,
its runs are that project's jobs (the creator must be a member, then and at
every run). Reading follows the jobs' rules (owner, admin, project members);
pausing, resuming and removing follow changing a job (owner, admin, project
owner). Each run is a normal job, listed under ``/{id}/runs``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from fastapi import APIRouter, Query, Response
from sqlalchemy import or_, select

from services.api.access import (
    key_scope,
    may_change,
    may_read,
    member_or_personal,
    parse_id,
    target_project,
)
from services.api.deps import CurrentUser, DbSession, StateDep
from services.api.errors import error_responses, not_found
from services.api.jobs.schemas import JobOut
from services.api.jobs.submission import admit
from services.api.jobs.usage import job_usage
from services.api.schedules.cron import BadSchedule, parse
from services.api.schedules.schemas import (
    MAX_JOB_BODY_BYTES,
    ScheduleCreate,
    ScheduleList,
    ScheduleRuns,
    ScheduleView,
)
from services.common.contracts.errors import ServiceError
from services.common.models import Job, Schedule, User
from services.common.models.users import ProjectMember

router = APIRouter(prefix="/v1/schedules", tags=["schedules"], responses=error_responses(401, 422))

MAX_SCHEDULES_PER_USER = 50


def _view(schedule: Schedule) -> ScheduleView:
    return ScheduleView.model_validate(schedule, from_attributes=True)


def _visible(db: DbSession, user: User, schedule_id: str) -> Schedule:
    schedule = db.get(Schedule, parse_id(schedule_id, "schedule"))
    if schedule is None or not may_read(
        db, user, owner_id=schedule.user_id, project_id=schedule.project_id
    ):
        raise not_found("schedule")
    return schedule


def _changeable(db: DbSession, user: User, schedule_id: str) -> Schedule:
    schedule = _visible(db, user, schedule_id)
    if not may_change(db, user, owner_id=schedule.user_id, project_id=schedule.project_id):
        raise ServiceError(403, "forbidden", "only its owner, a project owner or an admin")
    return schedule


@router.post(
    "", status_code=201, response_model=ScheduleView, responses=error_responses(404, 409, 413)
)
def create_schedule(
    body: ScheduleCreate, db: DbSession, user: CurrentUser, state: StateDep
) -> ScheduleView:
    """Submit ``job`` at every slot of ``cron`` in ``timezone`` (the first: the next one)."""
    try:
        cron = parse(body.cron, body.timezone)
    except BadSchedule as bad:
        raise ServiceError(422, bad.code, str(bad)) from None
    now = datetime.now(UTC)
    gap = cron.shortest_gap(now)
    floor = state.settings.schedule_min_interval_s
    if gap.total_seconds() < floor:
        raise ServiceError(
            422,
            "too_frequent",
            f"{body.cron!r} runs every {int(gap.total_seconds())} s at its most frequent; "
            f"the shortest interval allowed is {floor} s",
        )
    job = body.job
    if body.project and job.project and body.project != job.project:
        raise ServiceError(422, "invalid_request", "the schedule's and the job's project differ")
    project = target_project(db, user, body.project or job.project)
    job = job.model_copy(update={"project": str(project.id) if project else None})
    # The checks a submission makes, now: a body that could never run is refused here.
    admit(db, settings=state.settings, user=user, body=job)
    stored = job.model_dump(mode="json", exclude_none=True)
    size = len(json.dumps(stored))
    if size > MAX_JOB_BODY_BYTES:
        raise ServiceError(
            413, "too_large", f"the job body is {size} bytes; the limit is {MAX_JOB_BODY_BYTES}"
        )
    count = len(db.scalars(select(Schedule.id).where(Schedule.user_id == user.id)).all())
    if count >= MAX_SCHEDULES_PER_USER:
        raise ServiceError(409, "too_many", f"at most {MAX_SCHEDULES_PER_USER} schedules per user")
    schedule = Schedule(
        user_id=user.id,
        project_id=project.id if project else None,
        cron=cron.expression,
        timezone=body.timezone,
        job=stored,
        next_slot=cron.next_after(now),
    )
    db.add(schedule)
    db.flush()
    db.refresh(schedule)
    return _view(schedule)


@router.get("", response_model=ScheduleList)
def list_schedules(
    db: DbSession,
    user: CurrentUser,
    all_users: bool = Query(False, alias="all", description="admins: every user's schedules"),
) -> ScheduleList:
    """The caller's schedules and those of the projects they belong to."""
    stmt = select(Schedule).order_by(Schedule.created_at)
    if not (user.is_admin and all_users):
        member_of = select(ProjectMember.project_id).where(ProjectMember.user_id == user.id)
        stmt = stmt.where(
            or_(Schedule.user_id == user.id, Schedule.project_id.in_(member_of)),
            member_or_personal(user, Schedule.project_id),
        )
    scope = key_scope(db)
    if scope is not None:
        stmt = stmt.where(Schedule.project_id == scope)
    return ScheduleList(items=[_view(s) for s in db.scalars(stmt)])


@router.get("/{schedule_id}", response_model=ScheduleView, responses=error_responses(404))
def get_schedule(schedule_id: str, db: DbSession, user: CurrentUser) -> ScheduleView:
    return _view(_visible(db, user, schedule_id))


@router.get("/{schedule_id}/runs", response_model=ScheduleRuns, responses=error_responses(404))
def list_runs(
    schedule_id: str, db: DbSession, user: CurrentUser, limit: int = Query(50, ge=1, le=500)
) -> ScheduleRuns:
    """The schedule's runs (normal jobs), the latest slot first."""
    schedule = _visible(db, user, schedule_id)
    jobs = list(
        db.scalars(
            select(Job)
            .where(Job.schedule_id == schedule.id)
            .order_by(Job.schedule_slot.desc())
            .limit(limit)
        )
    )
    usage = job_usage(db, jobs)
    return ScheduleRuns(items=[JobOut.of(j, usage[j.id]) for j in jobs])


def _set_paused(db: DbSession, user: User, schedule_id: str, *, paused: bool) -> ScheduleView:
    schedule = _changeable(db, user, schedule_id)
    if schedule.paused and not paused:
        # Resumed: the slots missed while paused are not run; the next one is.
        cron = parse(schedule.cron, schedule.timezone)
        schedule.next_slot = cron.next_after(datetime.now(UTC))
    schedule.paused = paused
    db.flush()
    return _view(schedule)


@router.post(
    "/{schedule_id}/pause", response_model=ScheduleView, responses=error_responses(403, 404)
)
def pause_schedule(schedule_id: str, db: DbSession, user: CurrentUser) -> ScheduleView:
    """No slot runs until it is resumed."""
    return _set_paused(db, user, schedule_id, paused=True)


@router.post(
    "/{schedule_id}/resume", response_model=ScheduleView, responses=error_responses(403, 404)
)
def resume_schedule(schedule_id: str, db: DbSession, user: CurrentUser) -> ScheduleView:
    """Run again from the next slot on (the ones missed while paused are skipped)."""
    return _set_paused(db, user, schedule_id, paused=False)


@router.delete("/{schedule_id}", status_code=204, responses=error_responses(403, 404))
def delete_schedule(schedule_id: str, db: DbSession, user: CurrentUser) -> Response:
    """No more runs; the jobs it already made stay (unlinked)."""
    db.delete(_changeable(db, user, schedule_id))
    return Response(status_code=204)
