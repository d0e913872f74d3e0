"""The Celery messages the services send each other: names, queues, and one sender each.

No service imports another, so a task is known by name. The name alone does not
make a message: its arguments, its queue and whether a result is kept must match
what the consumer registered. Each message is therefore spelled once, here, as a
typed sender; call sites say what they want sent (``send_ingest(celery, doc)``),
never how. ``tests/test_import_rules.py`` holds ``send_task`` to this module.

Celery is imported only for type checking: the CLI reads the queue names
without paying for Celery's import.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from celery import Celery
    from celery.result import AsyncResult

ADVANCE_TASK = "agent.advance"
AGENT_QUEUE = "agent"
SANDBOX_EXEC_TASK = "sandbox.exec"
# After a session delete: remove its workspace (the sandbox re-checks the row).
SANDBOX_DROP_WORKSPACE_TASK = "sandbox.drop_workspace"
SANDBOX_QUEUE = "sandbox"
LIBRARY_INGEST_TASK = "library.ingest"
# Settle a bibliography import's pending entries (services/library/imports).
LIBRARY_IMPORT_TASK = "library.import"
LIBRARY_QUEUE = "library"

Id = uuid.UUID | str


def send_advance(celery: Celery, job_id: Id) -> None:
    """Ask an agent worker to run the job's next slice; safe to send twice (the lease dedups)."""
    # Nobody reads the result: registering for it would make a send stall while
    # the result backend (Redis) is down, instead of failing fast to the sweeper.
    celery.send_task(ADVANCE_TASK, args=[str(job_id)], queue=AGENT_QUEUE, ignore_result=True)


def send_ingest(celery: Celery, document_id: Id) -> None:
    """Ask a library worker to ingest a registered document (after its row is committed)."""
    celery.send_task(
        LIBRARY_INGEST_TASK, args=[str(document_id)], queue=LIBRARY_QUEUE, ignore_result=True
    )


def send_import(celery: Celery, import_id: Id) -> None:
    """Ask a library worker to settle a bibliography import's pending entries."""
    celery.send_task(
        LIBRARY_IMPORT_TASK, args=[str(import_id)], queue=LIBRARY_QUEUE, ignore_result=True
    )


def send_drop_workspace(celery: Celery, session_id: Id, *, queue: str) -> None:
    """Ask a sandbox worker of ``queue`` to remove a deleted session's workspace."""
    celery.send_task(
        SANDBOX_DROP_WORKSPACE_TASK, args=[str(session_id)], queue=queue, ignore_result=True
    )


def send_sandbox_exec(celery: Celery, request: Mapping[str, Any], *, queue: str) -> AsyncResult:
    """Send one execution to the sandbox workers of ``queue``; its result is awaited."""
    return celery.send_task(SANDBOX_EXEC_TASK, kwargs=dict(request), queue=queue)
