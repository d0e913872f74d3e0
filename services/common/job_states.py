"""A job's statuses and kinds: the one list the ORM, the API and the CLI share.

Kept apart from ``services.common.models`` (which loads the whole ORM) so that a
CLI help text can list them without importing SQLAlchemy.
"""

from __future__ import annotations

from typing import Literal, get_args

JobStatus = Literal[
    "queued",
    "running",
    "waiting_approval",
    # Parked while every endpoint of its model is down (runtime/model_wait.py).
    "waiting_model",
    "budget_exhausted",
    "paused",
    "succeeded",
    "failed",
    "cancelled",
]
JOB_STATUSES: tuple[str, ...] = get_args(JobStatus)
TERMINAL_STATUSES = ("succeeded", "failed", "cancelled")
JOB_KINDS = ("turn", "survey", "batch", "memory")
