"""A job's statuses, and the sets every process decides "finished" by.

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
    # Parked while every endpoint of its model is down (runtime/model_wait.py).
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


def sql_list(statuses: Iterable[JobStatus]) -> str:
    """``'a', 'b'`` for ``status IN (…)`` inside SQL text, in a stable order.

    The members are fixed identifiers (no quotes in them, checked here), not user
    input, so spelling them into the statement is as safe as a literal."""
    words = sorted(str(s) for s in statuses)
    assert all(w.isidentifier() for w in words), words
    return ", ".join(f"'{w}'" for w in words)
