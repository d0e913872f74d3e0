"""Jobs: submit, list, read, cancel, and the ledger and artifacts of each."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Query, Response
from pydantic import ValidationError
from sqlalchemy import func, select, update

from services.api.access import member_project, owned_session, require_text, visible_job
from services.api.deps import CurrentUser, DbSession, StateDep
from services.api.errors import ApiError, not_found
from services.api.jobs import service
from services.api.jobs.schemas import INPUT_MODELS, ArtifactOut, JobCreate, StepOut, job_view
from services.api.jobs.survey import survey_prompt
from services.common.models import JOB_STATUSES, Artifact, Job, JobStep
from services.common.turns import next_queued_turn

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])


@router.post("", status_code=202)
def submit_job(
    body: JobCreate, db: DbSession, user: CurrentUser, state: StateDep
) -> dict[str, Any]:
    try:
        parsed = INPUT_MODELS[body.kind].model_validate(body.input)
    except ValidationError as exc:
        problems = [f"input.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
        raise ApiError(422, "invalid_request", "; ".join(problems[:5])) from None
    job_input = parsed.model_dump()
    limit = state.settings.max_message_chars
    for text_value in _texts(body.kind, job_input):
        require_text(text_value, limit=limit, what="content")
    project = member_project(db, user, body.project) if body.project else None
    session = None
    if body.session_id:
        session = owned_session(db, user, body.session_id, lock=True)
    elif body.kind != "batch":
        title = job_input.get("topic") or job_input.get("content", "")[:60]
        session = service.open_job_session(db, user=user, project=project, title=title or "job")
    content = None
    if session is not None:
        content = survey_prompt(job_input) if body.kind == "survey" else job_input["content"]
    job = service.create_job(
        db,
        user=user,
        kind=body.kind,
        job_input=job_input,
        session=session,
        project=project,
        max_turns=body.max_turns or state.settings.max_turns_default,
        first_message=content,
    )
    db.commit()
    service.enqueue(state.celery, job.id)
    return {"id": str(job.id), "status": job.status, "session_id": _sid(job)}


def _texts(kind: str, job_input: dict[str, Any]) -> list[str]:
    if kind == "turn":
        return [job_input["content"]]
    if kind == "batch":
        return [t["content"] for t in job_input["tasks"]]
    return []


def _sid(job: Job) -> str | None:
    return str(job.session_id) if job.session_id else None


@router.get("")
def list_jobs(
    db: DbSession,
    user: CurrentUser,
    status: str | None = Query(None),
    kind: str | None = Query(None),
    all_users: bool = Query(False, alias="all"),
    limit: int = Query(50, ge=1, le=500),
) -> dict[str, Any]:
    stmt = select(Job).order_by(Job.created_at.desc()).limit(limit)
    if not (user.is_admin and all_users):
        stmt = stmt.where(Job.user_id == user.id)
    if status is not None:
        if status not in JOB_STATUSES:
            raise ApiError(422, "invalid_request", f"unknown status {status!r}")
        stmt = stmt.where(Job.status == status)
    if kind is not None:
        stmt = stmt.where(Job.kind == kind)
    return {"items": [job_view(j) for j in db.scalars(stmt)]}


@router.get("/{job_id}")
def get_job(job_id: str, db: DbSession, user: CurrentUser) -> dict[str, Any]:
    return job_view(visible_job(db, user, job_id))


@router.get("/{job_id}/steps")
def get_steps(job_id: str, db: DbSession, user: CurrentUser) -> dict[str, Any]:
    job = visible_job(db, user, job_id)
    rows = db.scalars(select(JobStep).where(JobStep.job_id == job.id).order_by(JobStep.seq))
    return {"items": [StepOut.model_validate(r).model_dump(mode="json") for r in rows]}


@router.post("/{job_id}/cancel", status_code=202)
def cancel_job(job_id: str, db: DbSession, user: CurrentUser, state: StateDep) -> dict[str, Any]:
    job = visible_job(db, user, job_id)
    if job.status in ("succeeded", "failed", "cancelled"):
        raise ApiError(409, "conflict", f"job is already {job.status}")
    db.execute(update(Job).where(Job.id == job.id).values(cancel_requested=True))
    # A queued job nobody has leased yet is cancelled at once; a running one at
    # its next step boundary.
    db.execute(
        update(Job)
        .where(Job.id == job.id, Job.status == "queued", Job.lease_until.is_(None))
        .values(status="cancelled", error="cancelled by user", finished_at=func.now())
    )
    db.commit()
    db.refresh(job)
    if job.status != "cancelled" or job.kind == "batch":
        service.enqueue(state.celery, job.id)
    elif job.session_id is not None:
        # A later turn of the same session may be waiting for this one.
        waiting = next_queued_turn(db, session_id=job.session_id)
        if waiting is not None:
            service.enqueue(state.celery, waiting)
    return job_view(job)


@router.get("/{job_id}/artifacts")
def list_artifacts(job_id: str, db: DbSession, user: CurrentUser) -> dict[str, Any]:
    job = visible_job(db, user, job_id)
    rows = db.execute(
        select(Artifact.name, Artifact.size, Artifact.mime)
        .where(Artifact.job_id == job.id)
        .order_by(Artifact.name)
    )
    items = [
        ArtifactOut(
            name=r.name,
            size=r.size,
            mime=r.mime,
            url=f"/v1/jobs/{job.id}/artifacts/{quote(r.name, safe='')}",
        ).model_dump()
        for r in rows
    ]
    return {"items": items}


@router.get("/{job_id}/artifacts/{name:path}")
def download_artifact(job_id: str, name: str, db: DbSession, user: CurrentUser) -> Response:
    job = visible_job(db, user, job_id)
    row = db.scalar(select(Artifact).where(Artifact.job_id == job.id, Artifact.name == name))
    if row is None:
        raise not_found("artifact")
    filename = quote(row.name.rsplit("/", 1)[-1])
    return Response(
        content=row.content,
        media_type=row.mime,
        headers={"Content-Disposition": f"attachment; filename*=UTF-8''{filename}"},
    )
