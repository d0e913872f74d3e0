"""``agent.advance(job_id)``: take the lease, run a time slice, hand the job on.

A Celery message only says "advance job X"; it may be lost, duplicated or
redelivered. The lease makes duplicates no-ops, the sweeper recovers losses,
and the ledger makes redelivery resume where the job stopped.

What a slice does is the job kind's :data:`JobRunner`, looked up in the
registry the worker's composition root builds (``worker/runtime/runners.py``):
the spine knows no feature, so a new job kind is one entry there.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from typing import Protocol

from opentelemetry import trace
from sqlalchemy import text

from services.common.contracts.statuses import JobStatus
from services.common.contracts.tasks import send_advance
from services.common.db import autocommit
from services.common.models import Job
from services.common.telemetry import attached_context, job_attributes
from services.common.telemetry.names import SPAN_JOB, TRACER_WORKER
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.drain import draining
from services.worker.spine.events import JobEvents
from services.worker.spine.finish import commit_finish
from services.worker.spine.lease import Lease, LeaseLost, acquire, release
from services.worker.spine.outcome import Outcome
from services.worker.spine.revoked import stop_if_revoked

log = logging.getLogger(__name__)
tracer = trace.get_tracer(TRACER_WORKER)


class JobRunner(Protocol):
    """Runs one slice of a job of one kind, until it finishes, waits or ``deadline``."""

    def __call__(
        self, deps: RuntimeDeps, lease: Lease, job: Job, events: JobEvents, deadline: float
    ) -> Outcome: ...


# Job kind -> its runner (``jobs.kind``: turn, survey, batch, memory).
JobRunners = Mapping[str, JobRunner]


def advance(deps: RuntimeDeps, job_id: uuid.UUID, runners: JobRunners) -> Outcome | None:
    """Advance one job for at most one time slice; None when the lease was not ours."""
    settings = deps.settings
    if draining():
        # This worker is stopping: leave the job to one that is not.
        enqueue(deps, job_id)
        return None
    lease = acquire(
        deps.writer,
        job_id=job_id,
        owner=settings.worker_id,
        ttl_s=settings.lease_ttl_s,
        per_user_cap=settings.max_running_jobs_per_user,
    )
    if lease is None:
        return None
    deps.keeper.hold(lease)
    outcome = Outcome.LEASE_LOST
    try:
        if lease.lost_slices > settings.max_lost_slices:
            # Each of its last slices took its worker down (or was cut off with it)
            # before finishing a step: running it again would do the same.
            outcome = _give_up_lost(deps, lease)
            return outcome
        if lease.lost_slices:
            log.warning(
                "job %s: its last %d slice(s) lost their worker before finishing a step "
                "(a crash, the OOM killer, a lost host); trying again",
                job_id,
                lease.lost_slices,
            )
        if lease.attempts > settings.max_job_attempts:
            # Something makes every attempt die (a bug, a poison input): stop
            # retrying forever and say so on the job.
            outcome = _give_up(deps, lease)
            return outcome
        outcome = _run_slice(deps, lease, runners)
        return outcome
    except LeaseLost as lost:
        log.warning("%s", lost)
        return Outcome.LEASE_LOST
    finally:
        deps.keeper.drop(lease)
        if outcome in (Outcome.SLICE_EXPIRED, Outcome.WAITING):
            release(deps.factory, lease)
            if outcome is Outcome.SLICE_EXPIRED:
                enqueue(deps, job_id)


def _run_slice(deps: RuntimeDeps, lease: Lease, runners: JobRunners) -> Outcome:
    deadline = time.monotonic() + deps.settings.time_slice_s
    events = JobEvents(deps.publisher, str(lease.job_id), flush_s=deps.settings.token_flush_s)
    if lease.behind_earlier:
        # Turns of one session run in order; the earlier job wakes this one.
        return Outcome.WAITING
    job = lease.job
    if job is None:
        # A read with no shared snapshot: no BEGIN/ROLLBACK round trips.
        with autocommit(deps.factory) as db:
            job = db.get(Job, lease.job_id)
            if job is None:
                return Outcome.LEASE_LOST
            db.expunge(job)
    if job.attempts == 1:
        events.emit("status", {"status": JobStatus.RUNNING})
    # Every slice, on any worker, joins the trace the API request started.
    with attached_context(job.trace_context), tracer.start_as_current_span(SPAN_JOB) as span:
        span.set_attributes(
            job_attributes(
                job_id=str(job.id),
                user_id=str(job.user_id),
                project_id=str(job.project_id) if job.project_id else None,
            )
        )
        span.set_attribute("leaflab.job.kind", job.kind)
        span.set_attribute("leaflab.job.attempt", job.attempts)
        # Which worker ran this slice: a job hops between workers and hosts.
        span.set_attribute("leaflab.worker.id", deps.settings.worker_id)
        # Before anything reads project state (a turn's prompt reads project memory).
        stopped = stop_if_revoked(deps, lease, events, job, verdict=lease.access)
        runner = runners.get(job.kind)
        if stopped is not None:
            outcome = stopped
        elif runner is None:
            # A kind this worker was not built with (a newer API, an older worker):
            # no retry here would run it.
            outcome = _fail(deps, lease, f"this worker runs no job of kind {job.kind!r}")
        else:
            outcome = runner(deps, lease, job, events, deadline)
        span.set_attribute("leaflab.job.outcome", outcome.value)
    return outcome


def _give_up(deps: RuntimeDeps, lease: Lease) -> Outcome:
    error = (
        f"gave up after {lease.attempts - 1} attempts to advance this job; "
        "see the worker logs for the failure"
    )
    return _fail(deps, lease, error)


def _give_up_lost(deps: RuntimeDeps, lease: Lease) -> Outcome:
    error = (
        f"gave up after {lease.lost_slices} attempts in a row lost their worker "
        "(killed, crashed or cut off) before this job finished a step: it may be what "
        "takes the worker down (memory, a crashing library); see the worker logs"
    )
    return _fail(deps, lease, error)


def _fail(deps: RuntimeDeps, lease: Lease, error: str) -> Outcome:
    commit_finish(deps.writer, lease, status=JobStatus.FAILED, error=error)
    deps.publisher.publish(str(lease.job_id), "final", {"status": JobStatus.FAILED, "error": error})
    return Outcome.FINISHED


def enqueue(deps: RuntimeDeps, job_id: uuid.UUID) -> None:
    """Send an advance message and note when, so the sweeper knows it is in flight."""
    with autocommit(deps.factory) as db:
        db.execute(text("UPDATE jobs SET enqueued_at = now() WHERE id = :id"), {"id": job_id})
    send_advance(deps.celery, job_id)
