"""Batch jobs: N independent tasks run as child turn jobs, then one summary.

The parent keeps at most ``max_concurrency`` children active. Each child is
created in the same transaction as its ledger step (``batch:task:<i>``) and
its row carries its task index, so a crash never creates a task twice; each
finished child wakes the parent, which tops up and, when all are done, writes
the summary.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.common.contracts.statuses import JobStatus, StepStatus
from services.common.contracts.tasks import send_advance
from services.common.failpoints import failpoint
from services.common.models import TERMINAL_STATUSES, Job
from services.common.turns import JobOrigin, create_job_in_new_session
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.events import JobEvents
from services.worker.spine.finish import finish_job
from services.worker.spine.lease import Lease, check_fence
from services.worker.spine.outcome import Outcome
from services.worker.spine.recorder import StepWrite, record


class BatchRunner:
    def __init__(self, deps: RuntimeDeps, lease: Lease, job: Job, events: JobEvents) -> None:
        self.deps = deps
        self.lease = lease
        self.job_id = job.id
        self.events = events

    def run(self) -> Outcome:
        to_start: list[uuid.UUID] = []
        with self.deps.factory() as db, db.begin():
            _, cancel = check_fence(db, self.lease)
            parent = db.get(Job, self.job_id)
            assert parent is not None
            tasks: list[dict[str, Any]] = parent.input.get("tasks", [])
            limit = max(1, int(parent.input.get("max_concurrency") or 4))
            children = self._children(db)
            if cancel:
                for child in children.values():
                    if child.status not in TERMINAL_STATUSES:
                        child.cancel_requested = True
                        if child.status == JobStatus.QUEUED:
                            child.status = JobStatus.CANCELLED
            active = sum(1 for c in children.values() if c.status not in TERMINAL_STATUSES)
            if not cancel:
                for index, task in enumerate(tasks):
                    if active >= limit:
                        break
                    if index not in children:
                        to_start.append(self._spawn(db, parent, index, task))
                        active += 1
            done = len(children) == len(tasks) and active == 0 and not to_start
            if done or (cancel and active == 0):
                summary = _summary(tasks, self._children(db))
                status = JobStatus.CANCELLED if cancel else JobStatus.SUCCEEDED
                failpoint("job.before_finish")
                finish_job(db, self.lease, status=status, result=summary)
        if done or (cancel and active == 0):
            failpoint("job.after_finish")
        for child_id in to_start:
            send_advance(self.deps.celery, child_id)
        if done or (cancel and active == 0):
            self.events.emit("final", {"status": status, "result": summary})
            return Outcome.FINISHED
        progress = _progress(children, tasks, started=len(to_start))
        self.events.emit("status", {"status": JobStatus.RUNNING, "progress": progress})
        return Outcome.WAITING

    def _children(self, db: Session) -> dict[int, Job]:
        rows = db.scalars(select(Job).where(Job.parent_job_id == self.job_id))
        return {int(j.input.get("batch_index", -1)): j for j in rows}

    def _spawn(self, db: Session, parent: Job, index: int, task: dict[str, Any]) -> uuid.UUID:
        origin = JobOrigin(
            user_id=parent.user_id,
            project_id=parent.project_id,
            parent_job_id=parent.id,
            trace_id=parent.trace_id,
            trace_context=parent.trace_context,
        )
        child = create_job_in_new_session(
            db,
            origin=origin,
            title=f"batch task {index + 1}",
            kind="turn",
            job_input={"content": task["content"], "batch_index": index},
            max_turns=parent.max_turns,
            first_message=task["content"],
        )
        # The step commits with the child, in this transaction: both or neither.
        record(
            db,
            self.lease,
            session_id=None,
            step=StepWrite(
                key=f"batch:task:{index}",
                kind="spawn",
                name="batch_task",
                round_no=index,
                status=StepStatus.SUCCEEDED,
                arguments=task,
                result={"job_id": str(child.id)},
            ),
        )
        return child.id


def _progress(
    children: dict[int, Job], tasks: list[dict[str, Any]], *, started: int
) -> dict[str, int]:
    """The tasks' counts, which add up to ``total``: ``started`` children were created
    in this wake-up (not in ``children``, read before), the rest wait their turn."""
    statuses = [c.status for c in children.values()]
    running = sum(1 for s in statuses if s not in TERMINAL_STATUSES) + started
    succeeded = statuses.count(JobStatus.SUCCEEDED)
    failed = statuses.count(JobStatus.FAILED) + statuses.count(JobStatus.CANCELLED)
    return {
        "total": len(tasks),
        "succeeded": succeeded,
        "failed": failed,
        "running": running,
        "queued": max(len(tasks) - succeeded - failed - running, 0),
    }


def _summary(tasks: list[dict[str, Any]], children: dict[int, Job]) -> dict[str, Any]:
    items = []
    for index in range(len(tasks)):
        child = children.get(index)
        items.append(
            {
                "index": index,
                "job_id": str(child.id) if child else None,
                "status": child.status if child else "not_started",
                "result": child.result if child else None,
                "error": child.error if child else None,
                "trace_id": child.trace_id if child else None,
            }
        )
    statuses = [i["status"] for i in items]
    return {
        "total": len(items),
        "succeeded": statuses.count(JobStatus.SUCCEEDED),
        "failed": len(items) - statuses.count(JobStatus.SUCCEEDED),
        "tasks": items,
    }
