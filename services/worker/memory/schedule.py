"""When a session's memory maintenance job is due, and creating it.

Due after ``memory_every_turns`` finished turns of the session with no memory
write since the last maintenance job (or the last turn that wrote memory).
The job is an ordinary queued job of the session, so the session's job order
(``EARLIER_IN_SESSION``, checked when a lease is taken) keeps it from ever
running beside the main agent: it waits for earlier turns, and later turns
wait for it.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from services.common.contracts.tasks import send_advance
from services.common.db import transaction
from services.common.models import ChatSession, Job, JobStep
from services.common.one_statement import OneStatement
from services.common.turns import JobOrigin, create_queued_job
from services.worker.memory.tool import MEMORY_TOOL
from services.worker.spine.deps import RuntimeDeps

MEMORY_JOB = "memory"
ACTIVE = (
    "queued",
    "running",
    "waiting_approval",
    "waiting_model",
    "paused",
    "budget_exhausted",
)


def turns_without_memory(db: Session, session_id: uuid.UUID) -> int:
    last_job = db.scalar(
        select(func.max(Job.created_at)).where(Job.session_id == session_id, Job.kind == MEMORY_JOB)
    )
    last_write = db.scalar(
        select(func.max(Job.created_at))
        .join(JobStep, JobStep.job_id == Job.id)
        .where(
            Job.session_id == session_id,
            Job.kind != MEMORY_JOB,
            JobStep.kind == "tool",
            JobStep.name == MEMORY_TOOL,
            JobStep.status == "succeeded",
            JobStep.result["data"]["action"].astext == "write",
        )
    )
    marks = [m for m in (last_job, last_write) if m is not None]
    since: datetime | None = max(marks) if marks else None
    query = select(func.count()).where(
        Job.session_id == session_id, Job.kind == "turn", Job.status == "succeeded"
    )
    if since is not None:
        query = query.where(Job.created_at > since)
    return int(db.scalar(query) or 0)


# An upper bound of ``turns_without_memory``, in one autocommit statement: most
# finishing turns are far from due, and the full check below costs a locked
# transaction of six statements after every turn.
SUCCEEDED_TURNS_SQL = text(
    """
    SELECT count(*) FROM jobs
     WHERE session_id = (SELECT session_id FROM jobs WHERE id = :job_id)
       AND kind = 'turn' AND status = 'succeeded'
    """
)


_SUCCEEDED_TURNS = OneStatement(SUCCEEDED_TURNS_SQL)


def _succeeded_turns(deps: RuntimeDeps, job_id: uuid.UUID) -> int:
    return int(_SUCCEEDED_TURNS.one(deps.writer, {"job_id": job_id}).count)


def schedule_maintenance(deps: RuntimeDeps, *, job_id: uuid.UUID) -> uuid.UUID | None:
    """Create (and send) the session's maintenance job if it is due; its id, else None."""
    every = deps.settings.memory_every_turns
    if every <= 0 or _succeeded_turns(deps, job_id) < every:
        return None
    with transaction(deps.factory) as db:
        job = db.get(Job, job_id)
        if job is None or job.kind != "turn" or job.session_id is None:
            return None
        # The row lock serialises two finishing turns' checks: one job at most.
        session = db.get(ChatSession, job.session_id, with_for_update=True)
        if session is None:
            return None
        pending = db.scalar(
            select(Job.id).where(
                Job.session_id == session.id, Job.kind == MEMORY_JOB, Job.status.in_(ACTIVE)
            )
        )
        turns = turns_without_memory(db, session.id)
        if pending is not None or turns < every:
            return None
        created = create_queued_job(
            db,
            origin=JobOrigin(user_id=job.user_id, project_id=job.project_id, trace_id=job.trace_id),
            kind=MEMORY_JOB,
            job_input={"turns": turns},
            session=session,
            max_turns=deps.settings.memory_max_steps,
        )
        new_id = created.id
    send_advance(deps.celery, new_id)
    return new_id
