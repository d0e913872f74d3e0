"""One way to submit a job body: what POST /v1/jobs and every schedule run go through.

A body is checked (texts within the size limit, the project and the session
the caller's, membership as it is *now*) and then queued by ``service``; the
caller's transaction boundary commits. A schedule's run calls this at its slot
as its owner, so the same roles apply then as at a request (see
services/api/schedules/firing.py).
"""

from __future__ import annotations

from typing import Any

from celery import Celery
from pydantic import TypeAdapter
from sqlalchemy.orm import Session

from services.api.access import owned_session, require_text, target_project
from services.api.jobs import service
from services.api.jobs.schemas import (
    BatchJobCreate,
    JobCreate,
    SurveyJobCreate,
    TurnJobCreate,
)
from services.api.jobs.service import ScheduleRun
from services.api.settings import ApiSettings
from services.common.models import ChatSession, Job, Project, User

JobBody = TurnJobCreate | SurveyJobCreate | BatchJobCreate
JOB_BODY: TypeAdapter[JobBody] = TypeAdapter(JobCreate)


def submit(
    db: Session,
    *,
    settings: ApiSettings,
    celery: Celery,
    user: User,
    body: JobBody,
    run: ScheduleRun | None = None,
) -> Job:
    """Queue ``body`` as ``user`` (ServiceError 404/413/422 when it may not be)."""
    job_input, project, session = admit(db, settings=settings, user=user, body=body, lock=True)
    return service.submit_job(
        db,
        celery=celery,
        user=user,
        kind=body.kind,
        job_input=job_input,
        session=session,
        project=project,
        max_turns=body.max_turns or settings.max_turns_default,
        run=run,
    )


def admit(
    db: Session, *, settings: ApiSettings, user: User, body: JobBody, lock: bool = False
) -> tuple[dict[str, Any], Project | None, ChatSession | None]:
    """What ``submit`` checks before it writes: the input (as stored), the project and
    the session. A schedule's creation calls it alone, so a body that could never
    run is refused then, not at its first slot."""
    job_input = body.input.model_dump(mode="json")
    if "since" in job_input and job_input["since"] is None:
        # A survey without "what's new since": its input reads as it always did.
        del job_input["since"]
    for text_value in _texts(body.kind, job_input):
        require_text(text_value, limit=settings.max_message_chars, what="content")
    project = target_project(db, user, body.project)
    session = owned_session(db, user, body.session_id, lock=lock) if body.session_id else None
    return job_input, project, session


def _texts(kind: str, job_input: dict[str, Any]) -> list[str]:
    if kind == "turn":
        return [job_input["content"]]
    if kind == "batch":
        return [t["content"] for t in job_input["tasks"]]
    return []
