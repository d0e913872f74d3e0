"""The job kinds this worker runs: the registry the spine's ``advance`` dispatches on.

Built once by the composition root (``worker/app.py``) and passed to the spine,
so the spine imports no feature and a new job kind is one entry here.
"""

from __future__ import annotations

from services.common.contracts.statuses import JobStatus
from services.common.models import Job
from services.worker.memory.maintenance import MaintenanceRunner
from services.worker.runtime.batch import BatchRunner
from services.worker.runtime.turn import TurnRunner
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.dispatch import JobRunners
from services.worker.spine.events import JobEvents
from services.worker.spine.finish import finish_slice
from services.worker.spine.lease import Lease
from services.worker.spine.outcome import Outcome
from services.worker.survey.runner import SurveyRunner


def _turn(deps: RuntimeDeps, lease: Lease, job: Job, events: JobEvents, deadline: float) -> Outcome:
    if job.session_id is None:
        # Deleting a session row sets its jobs' session to NULL: a queued turn then
        # has no conversation to answer into, and no retry will give it one.
        error = "this turn's chat session was deleted before it ran"
        return finish_slice(deps, lease, events, status=JobStatus.FAILED, error=error)
    return TurnRunner(deps, lease, job, events).run(deadline)


def _batch(
    deps: RuntimeDeps, lease: Lease, job: Job, events: JobEvents, deadline: float
) -> Outcome:
    # A batch's slice only starts and collects child jobs: it runs to its end.
    return BatchRunner(deps, lease, job, events).run()


def _survey(
    deps: RuntimeDeps, lease: Lease, job: Job, events: JobEvents, deadline: float
) -> Outcome:
    return SurveyRunner(deps, lease, job, events).run(deadline)


def _memory(
    deps: RuntimeDeps, lease: Lease, job: Job, events: JobEvents, deadline: float
) -> Outcome:
    return MaintenanceRunner(deps, lease, job, events).run(deadline)


def job_runners() -> JobRunners:
    """Every job kind (``services.common.job_states.JOB_KINDS``) and its runner."""
    return {"turn": _turn, "survey": _survey, "batch": _batch, "memory": _memory}
