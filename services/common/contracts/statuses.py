"""Statuses that cross a process boundary, and the sets every process decides "finished" by.

Four vocabularies, one ``StrEnum`` each: a job's (``JobStatus``), a ledger step's
(``StepStatus``), a sandbox execution's (``ExecutionStatus``) and a library
document's (``DocumentStatus``). They share words ("failed", "running",
"queued"), so code names the vocabulary it means instead of the word.

One owner for the words: the ORM, the API schemas, the sweeper's SQL, the CLI's
watch and (through the generated ``static/contracts.js``) the browser read them
here. ``JobStatus`` is a ``StrEnum``, so a member compares equal to the string
stored in the database and a row's plain ``str`` status is found in the sets.
Stdlib only: the CLI imports it for its help text.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    WAITING_APPROVAL = "waiting_approval"
    # Parked while every endpoint of its model is down (spine/model_wait.py).
    WAITING_MODEL = "waiting_model"
    # Parked until an admin raises the budget (leaflab admin budget set).
    BUDGET_EXHAUSTED = "budget_exhausted"
    PAUSED = "paused"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


# A job in one of these never changes again: its stream's last event is "final".
TERMINAL: frozenset[JobStatus] = frozenset(
    {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED}
)
# Everything else: the job may still run, or resume by itself (parked) or after a decision.
ACTIVE: frozenset[JobStatus] = frozenset(JobStatus) - TERMINAL
# Active but not running: a watcher shows "waiting", and any activity event means resumed.
PARKED: frozenset[JobStatus] = frozenset({JobStatus.WAITING_MODEL, JobStatus.BUDGET_EXHAUSTED})


class StepStatus(StrEnum):
    """A ``job_steps`` row: written running (a tool call in flight), then once finished."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    # The worker stopped during a call that may have half-run: reported, never repeated.
    INTERRUPTED = "interrupted"
    # A subagent's step while its child job runs (result: the child's id); a resumed
    # parent reads the child's outcome, it never spawns it again.
    WAITING = "waiting"


# A step in one of these is never run again: a resumed job reads it back instead.
STEP_DONE: frozenset[StepStatus] = frozenset(
    {StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.INTERRUPTED}
)


class ExecutionStatus(StrEnum):
    """A ``sandbox_executions`` row: running → finished | interrupted."""

    RUNNING = "running"
    FINISHED = "finished"
    # Its sandbox worker died (deadline passed) before it answered.
    INTERRUPTED = "interrupted"


EXECUTION_DONE: frozenset[ExecutionStatus] = frozenset(
    {ExecutionStatus.FINISHED, ExecutionStatus.INTERRUPTED}
)


class DocumentStatus(StrEnum):
    """A library ``documents`` row through its ingest."""

    QUEUED = "queued"
    PARSING = "parsing"
    EMBEDDING = "embedding"
    READY = "ready"
    FAILED = "failed"
    # Known by its metadata only (an import that found no readable full text).
    METADATA_ONLY = "metadata_only"


# An ingest may still claim it (library/lease.py); the sweeper re-queues a stale one.
DOCUMENT_IN_FLIGHT: frozenset[DocumentStatus] = frozenset(
    {DocumentStatus.QUEUED, DocumentStatus.PARSING, DocumentStatus.EMBEDDING}
)
# How an ingest ends: writing one of these releases the document's lease.
DOCUMENT_INGESTED: frozenset[DocumentStatus] = frozenset(
    {DocumentStatus.READY, DocumentStatus.FAILED}
)
# Never claimed again (the partial index on in-flight documents excludes these).
DOCUMENT_SETTLED: frozenset[DocumentStatus] = frozenset(DocumentStatus) - DOCUMENT_IN_FLIGHT


def sql_list(statuses: Iterable[StrEnum]) -> str:
    """``'a', 'b'`` for ``status IN (…)`` inside SQL text, in a stable order.

    The members are fixed identifiers (no quotes in them, checked here), not user
    input, so spelling them into the statement is as safe as a literal."""
    words = sorted(str(s) for s in statuses)
    assert all(w.isidentifier() for w in words), words
    return ", ".join(f"'{w}'" for w in words)
