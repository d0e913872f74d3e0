"""The step ledger read back: what a job has done, by deterministic key.

Keys are deterministic — ``llm:<round>``, ``tool:<round>:<tool_call_id>``,
``batch:task:<i>``, ``survey:<stage>[:<item>]`` — so a resumed job reads what already
happened instead of doing it again. Steps are written only by ``recorder.py``,
under the job's fence.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from services.common.contracts.statuses import STEP_DONE, StepStatus
from services.common.contracts.steps import (
    LlmStepError,
    LlmStepResult,
    ToolStepError,
    ToolStepResult,
)
from services.common.one_statement import OneStatement, rows_of

DONE_STATUSES = STEP_DONE  # the name its callers import


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
    status: StepStatus
    arguments: dict[str, Any] | None
    intent: dict[str, Any] | None
    result: Any
    error: dict[str, Any] | None
    executions: int

    @property
    def done(self) -> bool:
        return self.status in DONE_STATUSES


def llm_step_result(step: StepView) -> LlmStepResult | None:
    """A turn llm step's ``result`` as ``reply_step_result`` wrote it (None while it has
    none: failed, or recorded without one). Read with ``.get`` for a key a row written
    before that key existed may lack."""
    return cast("LlmStepResult | None", step.result)


def llm_step_error(step: StepView) -> LlmStepError | None:
    """A failed llm step's ``error`` (None when it has none)."""
    return cast("LlmStepError | None", step.error)


def tool_step_result(step: StepView) -> ToolStepResult | None:
    """A succeeded tool step's ``result`` (None while it has none: running, failed). Not
    for a waiting agent call: its result is the child job's id (runtime/child_jobs.py)."""
    return cast("ToolStepResult | None", step.result)


def tool_step_error(step: StepView) -> ToolStepError | None:
    """A failed or interrupted tool step's ``error`` (None when it has none)."""
    return cast("ToolStepError | None", step.error)


STEPS_SQL = text(
    """
    SELECT step_key, kind, name, round, tool_call_id, status, arguments, intent, result,
           error, executions
      FROM job_steps WHERE job_id = :job_id ORDER BY seq
    """
)
_STEPS = OneStatement(STEPS_SQL)


def load_steps(db: Session | Engine, job_id: uuid.UUID) -> dict[str, StepView]:
    """Every step of the job by key (columns, not ORM objects: a long job has
    hundreds of steps, loaded again at every slice)."""
    return {
        r.step_key: StepView(
            key=r.step_key,
            kind=r.kind,
            name=r.name,
            round=r.round,
            tool_call_id=r.tool_call_id,
            status=StepStatus(r.status),
            arguments=r.arguments,
            intent=r.intent,
            result=r.result,
            error=r.error,
            executions=r.executions,
        )
        for r in rows_of(db, _STEPS, {"job_id": job_id})
    }
