"""A job's statuses and kinds as the API and the CLI spell them.

The statuses themselves live in ``services.common.contracts.statuses``; this is
their ``Literal`` spelling for pydantic schemas (an inline enum in the OpenAPI
document) and click choices. Kept apart from ``services.common.models`` (which
loads the whole ORM) so that a CLI help text can list them without SQLAlchemy.
"""

from __future__ import annotations

from typing import Literal, get_args

from services.common.contracts.statuses import TERMINAL, JobStatus

# The same words as ``JobStatus``, for type checkers (a Literal cannot be built from
# an enum); the assert below keeps the two from drifting.
JobStatusName = Literal[
    "queued",
    "running",
    "waiting_approval",
    "waiting_model",
    "budget_exhausted",
    "paused",
    "succeeded",
    "failed",
    "cancelled",
]
JOB_STATUSES: tuple[str, ...] = tuple(s.value for s in JobStatus)  # plain str: click choices
if get_args(JobStatusName) != JOB_STATUSES:  # an import-time failure, in every process
    raise RuntimeError(f"JobStatusName {get_args(JobStatusName)} != JobStatus {JOB_STATUSES}")
TERMINAL_STATUSES = TERMINAL
JOB_KINDS = ("turn", "survey", "batch", "memory")
