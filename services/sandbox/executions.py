"""Exactly-once bookkeeping for ``sandbox.exec`` (table ``sandbox_executions``).

A message may be delivered twice. The first delivery claims the row; a later
one gets the stored result, waits for a live run to finish, or, when the
running worker died (deadline passed), an ``interrupted`` result. Code that
may have half-run is never silently run again.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.statuses import EXECUTION_DONE, ExecutionStatus
from services.common.db import autocommit, transaction
from services.common.models.sandbox import SandboxExecution

POLL_S = 0.2


@dataclass(frozen=True)
class Claim:
    fresh: bool
    result: dict[str, Any] | None = None


def exec_key(job_id: str | None, tool_call_id: str) -> str:
    return f"{job_id or '-'}:{tool_call_id}"


def interrupted_result(key: str) -> dict[str, Any]:
    return {
        "status": "interrupted",
        "error": {
            "code": "sandbox_interrupted",
            "message": "this execution was started earlier but its worker stopped before it "
            "finished; it was not run again (it may have partly run)",
        },
        "exec_key": key,
    }


def claim(
    factory: sessionmaker[Session],
    *,
    key: str,
    job_id: str | None,
    tool_call_id: str,
    owner: str,
    run_for_s: float,
) -> Claim:
    """Claim ``key`` for this run, or resolve what an earlier delivery left."""
    deadline = datetime.now(UTC) + timedelta(seconds=run_for_s)
    # One statement that commits itself: the claim is durable before anything runs,
    # without the BEGIN and COMMIT round trips of a transaction around it.
    with autocommit(factory) as s:
        row = s.execute(
            insert(SandboxExecution)
            .values(
                exec_key=key,
                job_id=uuid.UUID(job_id) if job_id else None,
                tool_call_id=tool_call_id,
                status=ExecutionStatus.RUNNING,
                owner=owner,
                deadline_at=deadline,
            )
            .on_conflict_do_nothing(index_elements=["exec_key"])
            .returning(SandboxExecution.exec_key)
        ).first()
    if row is not None:
        return Claim(fresh=True)
    return Claim(fresh=False, result=_await_existing(factory, key))


def _await_existing(factory: sessionmaker[Session], key: str) -> dict[str, Any]:
    while True:
        with transaction(factory) as s:
            row = s.get(SandboxExecution, key)
            if row is None:  # released by a run that could not start: nothing ran
                return {
                    "status": "error",
                    "error": {
                        "code": "sandbox_retry",
                        "message": "an earlier attempt released this exec",
                    },
                }
            if row.status in EXECUTION_DONE and row.result is not None:
                return dict(row.result)
            if row.deadline_at <= datetime.now(UTC):
                result = interrupted_result(key)
                s.execute(
                    update(SandboxExecution)
                    .where(SandboxExecution.exec_key == key)
                    .values(
                        status=ExecutionStatus.INTERRUPTED,
                        result=result,
                        finished_at=datetime.now(UTC),
                    )
                )
                return result
        time.sleep(POLL_S)


def interrupt(factory: sessionmaker[Session], *, key: str, owner: str) -> dict[str, Any] | None:
    """Resolve an exec whose worker ``owner`` died: interrupted if it still runs there,
    else what was stored; None when a live worker runs it (the dead one only waited)."""
    with transaction(factory) as s:
        row = s.get(SandboxExecution, key, with_for_update=True)
        if row is None:
            return {
                "status": "error",
                "error": {"code": "sandbox_retry", "message": "the exec was never started"},
            }
        if row.status == ExecutionStatus.RUNNING:
            if row.owner != owner:
                return None
            result = interrupted_result(key)
            row.status = ExecutionStatus.INTERRUPTED
            row.result = result
            row.finished_at = datetime.now(UTC)
            return result
        return dict(row.result or interrupted_result(key))


def finish(factory: sessionmaker[Session], *, key: str, result: dict[str, Any]) -> None:
    with autocommit(factory) as s:  # one statement: it commits on its own
        s.execute(
            update(SandboxExecution)
            .where(SandboxExecution.exec_key == key)
            .values(status=ExecutionStatus.FINISHED, result=result, finished_at=datetime.now(UTC))
        )


def release(factory: sessionmaker[Session], *, key: str) -> None:
    """Forget a claim whose run never started (backend unavailable): a retry may run it."""
    with transaction(factory) as s:
        s.execute(
            delete(SandboxExecution).where(
                SandboxExecution.exec_key == key, SandboxExecution.status == ExecutionStatus.RUNNING
            )
        )


def stored(factory: sessionmaker[Session], key: str) -> SandboxExecution | None:
    with factory() as s:
        return s.execute(select(SandboxExecution).where(SandboxExecution.exec_key == key)).scalar()
