"""Writing a job's terminal state and waking whoever waits on it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from celery import Celery
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from services.common.contracts.statuses import JobStatus
from services.common.contracts.tasks import send_advance
from services.common.failpoints import failpoint
from services.common.metrics import JOB_DURATION
from services.common.one_statement import OneStatement
from services.worker.spine.admission import EARLIER_IN_SESSION
from services.worker.spine.events import JobEvents
from services.worker.spine.lease import Lease, LeaseLost
from services.worker.spine.outcome import Outcome

if TYPE_CHECKING:
    from services.worker.spine.deps import RuntimeDeps


# The terminal write and what it wakes, in one statement: the fenced UPDATE, the
# session's next queued turn and — only when there is none — the user's oldest
# queued job that could take the freed slot. Another job's rows are read in the
# statement's snapshot; this job's own new status is not needed by either read
# (the user's next job is looked for only when this session has none queued).
#
# The freed slot is handed over, not merely pointed at: the chosen job is marked
# sent (``enqueued_at``) in the same statement, under its row lock, and a row
# another finishing transaction has locked is skipped. Without the mark, every
# job that finishes before the woken one has started picks that same oldest job,
# so eight slots freed together wake one job and the other seven wait for the
# sweeper's next pass; with it, each finish hands its slot to a different job.
FINISH_SQL = text(
    f"""
    WITH f AS (
        UPDATE jobs
           SET status = :status, result = CAST(:result AS jsonb), error = :error,
               finished_at = now(), updated_at = now(), lease_owner = NULL, lease_until = NULL
         WHERE id = :job_id AND fence = :fence
        RETURNING kind, created_at, user_id, session_id, parent_job_id
    ), done AS (
        SELECT f.*,
               (SELECT q.id FROM jobs q
                 WHERE f.session_id IS NOT NULL AND q.session_id = f.session_id
                   AND q.status = 'queued' AND q.id <> :job_id
                 ORDER BY q.created_at LIMIT 1) AS next_turn
          FROM f
    ), handed AS (
        UPDATE jobs SET enqueued_at = now()
         WHERE id = (SELECT j.id FROM jobs j, done
                      WHERE done.kind IS NOT NULL AND done.next_turn IS NULL
                        AND j.user_id = done.user_id AND j.status = 'queued'
                        AND j.enqueued_at IS NULL AND j.id <> :job_id
                        AND NOT {EARLIER_IN_SESSION.format(j="j")}
                      ORDER BY j.created_at LIMIT 1
                      FOR UPDATE OF j SKIP LOCKED)
        RETURNING id
    )
    SELECT done.kind, done.created_at, done.user_id, done.parent_job_id, done.next_turn,
           now() AS finished_at,
           (SELECT id FROM handed) AS next_for_user,
           (SELECT fence FROM jobs WHERE id = :job_id) AS current_fence
      FROM (SELECT 1) AS one LEFT JOIN done ON true
    """
)
_FINISH = OneStatement(FINISH_SQL)


def finish_job(
    db: Session | Engine,
    lease: Lease,
    *,
    status: JobStatus,
    result: Mapping[str, Any] | None = None,
    error: str | None = None,
) -> list[uuid.UUID]:
    """Set the terminal status under the fence; returns jobs to wake (parent, the
    session's next turn, or else the user's next queued job).

    One statement (:data:`FINISH_SQL`). With a ``Session`` it joins the caller's
    transaction; with the autocommit writer ``Engine`` it is its own.
    """
    params = {
        "job_id": lease.job_id,
        "fence": lease.fence,
        "status": status,
        "result": None if result is None else json.dumps(result, default=str),
        "error": error,
    }
    row = (
        db.execute(FINISH_SQL, params).one() if isinstance(db, Session) else _FINISH.one(db, params)
    )
    if row.kind is None:
        lease.lost.set()
        raise LeaseLost.refused(lease, row.current_fence)
    JOB_DURATION.labels(row.kind, status).observe(
        (row.finished_at - row.created_at).total_seconds()
    )
    # The slot this job held under its user's cap is free: when nothing of its
    # session is queued, the user's next queued job takes it (admission re-checks;
    # the sweeper is the backstop).
    wake = [row.parent_job_id] if row.parent_job_id is not None else []
    wake += [job for job in (row.next_turn, row.next_for_user) if job is not None]
    return wake


def commit_finish(
    writer: Engine,
    lease: Lease,
    *,
    status: JobStatus,
    result: Mapping[str, Any] | None = None,
    error: str | None = None,
) -> list[uuid.UUID]:
    """:func:`finish_job`, committed before events or wake-ups go out (the
    autocommit ``writer``: the statement is its own transaction)."""
    failpoint("job.before_finish")
    wake = finish_job(writer, lease, status=status, result=result, error=error)
    failpoint("job.after_finish")
    return wake


def finish_and_announce(
    writer: Engine,
    celery: Celery,
    lease: Lease,
    events: JobEvents,
    *,
    status: JobStatus,
    result: Mapping[str, Any] | None = None,
    error: str | None = None,
) -> None:
    """Commit the terminal state, tell the job's watchers, then wake who waited on it."""
    wake = commit_finish(writer, lease, status=status, result=result, error=error)
    events.emit_final(
        [
            ("status", {"status": status, "error": error}),
            ("final", {"status": status, "result": result, "error": error}),
        ]
    )
    for job_id in wake:
        send_advance(celery, job_id)


def finish_slice(
    deps: RuntimeDeps,
    lease: Lease,
    events: JobEvents,
    *,
    status: JobStatus,
    result: Mapping[str, Any] | None = None,
    error: str | None = None,
) -> Outcome:
    """:func:`finish_and_announce` with the worker's deps: how a job's slice ends it."""
    finish_and_announce(
        deps.writer, deps.celery, lease, events, status=status, result=result, error=error
    )
    return Outcome.FINISHED
