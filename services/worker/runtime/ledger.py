"""The step ledger: what a job has done, written once per step under the job's fence.

Keys are deterministic — ``llm:<round>`` and ``tool:<round>:<tool_call_id>`` —
so a resumed job reads what already happened instead of doing it again.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from services.common.models import JobStep

DONE_STATUSES = ("succeeded", "failed", "interrupted")


def llm_key(round_no: int) -> str:
    return f"llm:{round_no}"


def tool_key(round_no: int, tool_call_id: str) -> str:
    return f"tool:{round_no}:{tool_call_id}"


@dataclass(frozen=True)
class StepView:
    key: str
    kind: str
    name: str
    round: int
    tool_call_id: str | None
    status: str
    arguments: dict[str, Any] | None
    intent: dict[str, Any] | None
    result: Any
    error: dict[str, Any] | None
    executions: int

    @property
    def done(self) -> bool:
        return self.status in DONE_STATUSES


def load_steps(db: Session, job_id: uuid.UUID) -> dict[str, StepView]:
    rows = db.scalars(select(JobStep).where(JobStep.job_id == job_id).order_by(JobStep.seq))
    return {
        r.step_key: StepView(
            key=r.step_key,
            kind=r.kind,
            name=r.name,
            round=r.round,
            tool_call_id=r.tool_call_id,
            status=r.status,
            arguments=r.arguments,
            intent=r.intent,
            result=r.result,
            error=r.error,
            executions=r.executions,
        )
        for r in rows
    }


def begin_step(
    db: Session,
    *,
    job_id: uuid.UUID,
    key: str,
    kind: str,
    name: str,
    round_no: int,
    fence: int,
    tool_call_id: str | None = None,
    arguments: dict[str, Any] | None = None,
    intent: dict[str, Any] | None = None,
    status: str = "running",
    result: Any = None,
    error: dict[str, Any] | None = None,
) -> None:
    """Record that a step is starting; a step started before (crash) counts one more run.

    With a final ``status`` it records a step that started and finished in one
    write (model calls: re-running an unrecorded one is harmless, so they are
    written once, when they complete).
    """
    next_seq = select(func.coalesce(func.max(JobStep.seq), 0) + 1).where(JobStep.job_id == job_id)
    stmt = insert(JobStep).values(
        id=uuid.uuid4(),
        job_id=job_id,
        seq=next_seq.scalar_subquery(),
        step_key=key,
        kind=kind,
        name=name,
        round=round_no,
        tool_call_id=tool_call_id,
        status=status,
        arguments=arguments,
        intent=intent,
        result=result,
        error=error,
        fence=fence,
        executions=1,
        finished_at=None if status == "running" else func.now(),
    )
    stmt = stmt.on_conflict_do_update(
        constraint="uq_job_steps_job_key",
        set_={
            "executions": JobStep.executions + 1,
            "fence": fence,
            "status": stmt.excluded.status,
            "intent": stmt.excluded.intent,
            "result": stmt.excluded.result,
            "error": stmt.excluded.error,
            "started_at": func.now(),
            "finished_at": stmt.excluded.finished_at,
        },
    )
    db.execute(stmt)


def finish_step(
    db: Session,
    *,
    job_id: uuid.UUID,
    key: str,
    status: str,
    result: Any = None,
    error: dict[str, Any] | None = None,
) -> None:
    db.execute(
        update(JobStep)
        .where(JobStep.job_id == job_id, JobStep.step_key == key)
        .values(status=status, result=result, error=error, finished_at=datetime.now(UTC))
    )
