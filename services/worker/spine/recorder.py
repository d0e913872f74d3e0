"""The only writer of ledger steps: one write = one SQL statement = one round trip.

A step's record, the message it adds to the session, the job's usage, the
fence check and the next step's access check (``membership.access_verdict``) all
go into one statement of data-modifying CTEs, run in autocommit: Postgres
executes a single statement atomically, so there is no BEGIN/COMMIT round trip
and no window between checking the fence and writing. If the fence is stale the
``jobs`` CTE matches no row and nothing else is written (every other CTE depends
on it).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, cast

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from services.common.contracts.statuses import StepStatus
from services.common.contracts.steps import ContextOverflowError, ModelCallError, ToolCallRecord
from services.common.models import Message
from services.common.one_statement import OneStatement
from services.worker.spine.budget.reservation import (
    NO_SETTLEMENT,
    SETTLE_CTES,
    PendingSettlement,
    count_overrun,
)
from services.worker.spine.lease import Lease, LeaseLost
from services.worker.spine.membership import access_verdict

RECORD_SQL = text(
    f"""
    WITH j AS (
        UPDATE jobs
           SET updated_at = now(),
               input_tokens = input_tokens + :in_tok,
               output_tokens = output_tokens + :out_tok,
               cached_tokens = cached_tokens + :cached_tok,
               cost_usd = cost_usd + :cost,
               usage_estimated = usage_estimated OR :usage_estimated,
               -- A finished step is progress: earlier lost slices were not this job's doing.
               lost_slices = CASE WHEN :finished THEN 0 ELSE lost_slices END,
               -- A new step takes the next number under this row's lock: concurrent
               -- writers (a survey's parallel sections) never share one.
               step_seq = step_seq + CASE WHEN EXISTS (
                   SELECT 1 FROM job_steps WHERE job_id = :job_id AND step_key = :key
               ) THEN 0 ELSE 1 END
         WHERE id = :job_id AND fence = :fence
        RETURNING cancel_requested, step_seq,
                  -- The next step's access check, read at this step boundary (turn.py).
                  {access_verdict(user="jobs.user_id", project="jobs.project_id")} AS access
    ), st AS (
        INSERT INTO job_steps (id, job_id, seq, step_key, kind, name, round, tool_call_id,
                               status, arguments, intent, result, error, executions, fence,
                               started_at, finished_at)
        SELECT :step_id, :job_id, j.step_seq, :key, :kind, :name, :round, :tool_call_id, :status,
               CAST(:arguments AS jsonb), CAST(:intent AS jsonb), CAST(:result AS jsonb),
               CAST(:error AS jsonb), 1, :fence,
               COALESCE(CAST(:started_at AS timestamptz), now()),
               CASE WHEN :finished THEN now() END
          FROM j
        ON CONFLICT ON CONSTRAINT uq_job_steps_job_key DO UPDATE SET
               executions = job_steps.executions + CASE WHEN :count_run THEN 1 ELSE 0 END,
               started_at = CASE WHEN :count_run
                                 THEN COALESCE(CAST(:started_at AS timestamptz), now())
                                 ELSE job_steps.started_at END,
               arguments = COALESCE(EXCLUDED.arguments, job_steps.arguments),
               intent = COALESCE(EXCLUDED.intent, job_steps.intent),
               status = EXCLUDED.status,
               result = EXCLUDED.result,
               error = EXCLUDED.error,
               fence = EXCLUDED.fence,
               finished_at = EXCLUDED.finished_at
        RETURNING 1
    ), s AS (
        UPDATE sessions SET message_seq = message_seq + 1, updated_at = now()
         WHERE id = :session_id AND :with_message AND EXISTS (SELECT 1 FROM j)
        RETURNING message_seq
    ), m AS (
        INSERT INTO messages (id, session_id, job_id, seq, role, content, model_content,
                              tool_calls, tool_call_id, name, created_at)
        SELECT :message_id, :session_id, :job_id, s.message_seq, :role, :content,
               :model_content, CAST(:tool_calls AS jsonb), :message_tool_call_id,
               :message_name, now()
          FROM s
        RETURNING seq
    ), {SETTLE_CTES}
    SELECT (SELECT cancel_requested FROM j) AS cancel,
           (SELECT access FROM j) AS access,
           (SELECT seq FROM m) AS seq,
           (SELECT count(*) FROM st) AS steps,
           (SELECT fence FROM jobs WHERE id = :job_id) AS current_fence,
           -- Last: the budget rows are locked after the job and session rows.
           (SELECT count(*) FROM charged) AS charged,
           (SELECT COALESCE(sum(overrun_usd), 0) FROM overrun) AS overrun_usd,
           (SELECT count(*) FROM overrun) AS overruns
    """
)

_RECORD = OneStatement(RECORD_SQL)


@dataclass(frozen=True)
class StepWrite:
    key: str
    kind: str
    name: str
    round_no: int
    status: StepStatus
    tool_call_id: str | None = None
    arguments: Any = None
    intent: Any = None
    result: Any = None
    error: Any = None
    # True when this write starts an execution (begin, or write-once); False
    # when it only records the outcome of an execution already counted.
    count_run: bool = True
    # When the work began, for a write-once step recorded after it (a model call):
    # its duration is then real instead of 0 ms. None: the write itself starts it.
    started_at: datetime | None = None


@dataclass(frozen=True)
class MessageWrite:
    role: str
    content: str | None
    model_content: str | None = None
    # An assistant message's calls: the same records as its llm step's ``tool_calls``.
    tool_calls: list[ToolCallRecord] | None = None
    tool_call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class UsageDelta:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: Decimal = Decimal(0)
    # The counts are a local estimate (the endpoint reported no usage).
    estimated: bool = False


@dataclass(frozen=True)
class Recorded:
    cancel_requested: bool
    message: Message | None
    # Whether the job's user may still act in its project, as this write read it
    # (``membership.access_verdict``).
    access: str | None = None


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, default=str)


def record(
    writer: Engine | Session,
    lease: Lease,
    *,
    session_id: uuid.UUID | None,
    step: StepWrite,
    message: MessageWrite | None = None,
    usage: UsageDelta | None = None,
    settle: PendingSettlement | None = None,
) -> Recorded:
    """Write a step (and its message and usage) under the fence, atomically.

    With the autocommit ``Engine`` the statement is its own transaction; with a
    ``Session`` it joins the caller's transaction, for a step that must commit
    together with other rows (a batch task's child job).

    ``settle`` settles the budget reservation of the model call this step
    records, in the same statement: the spend row, the budgets and the job's
    usage then always agree. It is applied even when the fence is stale (the
    call was made and paid for), and only then is :class:`LeaseLost` raised.
    """
    if settle is not None and settle.payer.job_id != lease.job_id:
        raise ValueError("a step can only settle a call of its own job")
    usage = usage or UsageDelta()
    msg = message or MessageWrite(role="", content=None)
    params = {
        "job_id": lease.job_id,
        "fence": lease.fence,
        "in_tok": usage.input_tokens,
        "out_tok": usage.output_tokens,
        "cached_tok": usage.cached_tokens,
        "cost": usage.cost_usd,
        "usage_estimated": usage.estimated,
        "step_id": uuid.uuid4(),
        "key": step.key,
        "kind": step.kind,
        "name": step.name,
        "round": step.round_no,
        "tool_call_id": step.tool_call_id,
        "status": step.status,
        "finished": step.status != StepStatus.RUNNING,
        "arguments": _json(step.arguments),
        "intent": _json(step.intent),
        "result": _json(step.result),
        "error": _json(step.error),
        "count_run": step.count_run,
        "started_at": step.started_at,
        "session_id": session_id,
        "with_message": message is not None,
        "message_id": uuid.uuid4(),
        "role": msg.role,
        "content": msg.content,
        "model_content": msg.model_content,
        "tool_calls": _json(msg.tool_calls),
        "message_tool_call_id": msg.tool_call_id,
        "message_name": msg.name,
        **(settle.params() if settle is not None else NO_SETTLEMENT),
    }
    if isinstance(writer, Session):
        row = writer.execute(RECORD_SQL, params).one()
    else:
        row = _RECORD.one(writer, params)
    count_overrun(settle, Decimal(row.overrun_usd), int(row.overruns))
    if row.cancel is None:
        lease.lost.set()
        raise LeaseLost.refused(lease, row.current_fence)
    stored = None
    if message is not None:
        stored = Message(
            id=params["message_id"],
            session_id=session_id,
            job_id=lease.job_id,
            seq=int(row.seq),
            role=msg.role,
            content=msg.content,
            model_content=msg.model_content,
            # The ORM column is untyped JSON (a session's messages of every origin).
            tool_calls=cast("list[dict[str, Any]] | None", msg.tool_calls),
            tool_call_id=msg.tool_call_id,
            name=msg.name,
        )
    return Recorded(cancel_requested=bool(row.cancel), message=stored, access=str(row.access))


def record_failed_llm(
    writer: Engine,
    lease: Lease,
    *,
    session_id: uuid.UUID | None,
    key: str,
    round_no: int,
    request: dict[str, Any],
    error: ModelCallError | ContextOverflowError,
) -> None:
    """Record round ``round_no``'s llm step as failed with ``error`` (the turn then ends)."""
    record(
        writer,
        lease,
        session_id=session_id,
        step=StepWrite(
            key=key,
            kind="llm",
            name=str(request["model"]),
            round_no=round_no,
            status=StepStatus.FAILED,
            arguments=request,
            error=error,
        ),
    )
