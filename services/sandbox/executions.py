"""Exactly-once bookkeeping for ``sandbox.exec`` (table ``sandbox_executions``).

A message may be delivered twice. The first delivery claims the row; a later
one gets the stored result, waits for a live run to finish, or, when the
running worker died (deadline passed), an ``interrupted`` result. Code that
may have half-run is never silently run again.

The claim commits synchronously (flushed to disk before anything runs: a
database crash never forgets a started exec). The finish commits
asynchronously (``finish``): it is visible to every reader at once and on disk
within PostgreSQL's WAL writer delay (200 ms by default), or sooner with the
next synchronous commit. A database crash inside that window leaves the row
``running``, which a later delivery resolves as ``interrupted`` once its
deadline passes -- never a second run. The caller's own answer travels
through Redis (Celery's result), which is no more durable than that.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, delete, func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.statuses import EXECUTION_DONE, ExecutionStatus
from services.common.db import transaction
from services.common.models.sandbox import SandboxExecution
from services.sandbox.statement import autocommit_connection

POLL_S = 0.2


@dataclass(frozen=True)
class Claim:
    fresh: bool
    result: dict[str, Any] | None = None
    reads: tuple[Any, ...] = ()  # the values of ``claim``'s ``reads``, in their order


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
    reads: Sequence[ColumnElement[Any]] = (),
) -> Claim:
    """Claim ``key`` for this run, or resolve what an earlier delivery left.

    ``reads`` are scalar expressions the run needs (its user's sessions, its
    project's network policy), evaluated in the claim's own statement: one
    round trip instead of one per read. They see the database as of the claim.
    """
    deadline = datetime.now(UTC) + timedelta(seconds=run_for_s)
    claimed = (
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
        .cte("claimed")
    )
    # One statement that commits itself (and waits for the disk flush): the claim is
    # durable before anything runs, without the BEGIN and COMMIT round trips of a
    # transaction around it. A read that fails takes the claim with it: nothing is
    # claimed, nothing runs.
    with autocommit_connection(factory) as conn:
        row = conn.execute(select(select(claimed.c.exec_key).scalar_subquery(), *reads)).one()
    if row[0] is not None:
        return Claim(fresh=True, reads=tuple(row[1:]))
    return Claim(fresh=False, result=_await_existing(factory, key), reads=tuple(row[1:]))


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
    """Store the result; committed asynchronously (see the module docstring)."""
    with autocommit_connection(factory) as conn:  # one statement: it commits on its own
        conn.execute(
            update(SandboxExecution)
            .where(SandboxExecution.exec_key == key, _ASYNC_COMMIT)
            .values(status=ExecutionStatus.FINISHED, result=result, finished_at=datetime.now(UTC))
        )


# Turns off the wait for the disk flush for the statement's own (implicit) transaction:
# a flush costs 1-4 ms on these disks (more the busier the disk), a warm exec ~16.
# A condition on the UPDATE because a self-committing statement has no transaction to
# SET LOCAL in, and a session-wide SET would outlive it on the pooled connection (the
# claim needs the flush).
_ASYNC_COMMIT = func.set_config("synchronous_commit", "off", True).is_not(None)


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
