"""Subagent calls: a child job spawned exactly once, its answer read back on resume.

The child job, its session and opening message, and the parent's ledger step
(status ``waiting``, result ``{"job_id": child}``) commit in one transaction
that also gives the parent's lease up, like a batch task. The parent holds no
worker thread while the child runs; the child's finish wakes it
(``finish.finish_job``), and a resumed parent finds the step, reads the
child's outcome and never spawns again. A kill -9 anywhere loses nothing:
before the commit there is no child, after it the step names the child.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session

from services.common.contracts.statuses import JobStatus, StepStatus
from services.common.contracts.tasks import send_advance
from services.common.failpoints import failpoint
from services.common.models import TERMINAL_STATUSES, Job
from services.common.telemetry import inject_carrier
from services.common.turns import JobOrigin, create_job_in_new_session
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.lease import Lease
from services.worker.spine.ledger import StepView
from services.worker.spine.recorder import StepWrite, record
from services.worker.spine.suspend import StepSuspended, suspend_job
from services.worker.tools.base import ToolContext, ToolError, ToolResult
from services.worker.tools.subagent import AgentTool

TITLE_CHARS = 60


def spawn_child(
    deps: RuntimeDeps,
    lease: Lease,
    *,
    tool: AgentTool,
    args: Any,
    ctx: ToolContext,
    step: dict[str, Any],
    offered: list[str],
) -> None:
    """Create the child and the waiting step together, then suspend the parent."""
    child_input = tool.child_input(args, ctx, offered)
    with deps.factory() as db, db.begin():
        parent = db.get(Job, lease.job_id)
        assert parent is not None
        origin = JobOrigin(
            user_id=parent.user_id,
            project_id=parent.project_id,
            parent_job_id=parent.id,
            trace_id=parent.trace_id,
            # the current span is the parent's tool span: the child's spans hang under it
            trace_context=inject_carrier() or parent.trace_context,
        )
        child = create_job_in_new_session(
            db,
            origin=origin,
            title=f"subagent: {child_input['content'][:TITLE_CHARS]}",
            kind="turn",
            job_input=child_input,
            max_turns=parent.max_turns,
            first_message=child_input["content"],
        )
        record(
            db,
            lease,
            session_id=None,
            step=StepWrite(**step, status=StepStatus.WAITING, result={"job_id": str(child.id)}),
        )
        suspend_job(db, lease, status=JobStatus.RUNNING)
        child_id = child.id
    failpoint("subagent.after_spawn")
    send_advance(deps.celery, child_id)
    raise StepSuspended(f"waiting for subagent job {child_id}")


def child_outcome(deps: RuntimeDeps, lease: Lease, existing: StepView) -> ToolResult:
    """The finished child's answer, or suspend the parent again while it runs.

    The child row is read under a share lock in the transaction that gives the
    parent's lease up, so a child finishing right now either is seen finished
    here or finds the lease free when its wake-up arrives.
    """
    child_id = uuid.UUID(str((existing.result or {})["job_id"]))
    with deps.factory() as db, db.begin():
        child = _locked_child(db, child_id)
        if child is None:
            raise ToolError("subagent_lost", f"subagent job {child_id} no longer exists")
        status, result, error = child.status, child.result, child.error
        if status not in TERMINAL_STATUSES:
            suspend_job(db, lease, status=JobStatus.RUNNING)
    if status not in TERMINAL_STATUSES:  # raised after the commit, never inside it
        raise StepSuspended(f"waiting for subagent job {child_id}")
    data = {"job_id": str(child_id), "status": status}
    if status == JobStatus.SUCCEEDED:
        return ToolResult(content=str((result or {}).get("content") or ""), data=data)
    raise ToolError(
        "subagent_failed",
        f"the subagent {status}: {error or 'no answer'}",
        details=data,
    )


def _locked_child(db: Session, child_id: uuid.UUID) -> Job | None:
    db.execute(text("SELECT 1 FROM jobs WHERE id = :id FOR SHARE"), {"id": child_id})
    return db.get(Job, child_id)
