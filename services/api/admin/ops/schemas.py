"""Bodies of ``/v1/admin/ops`` and ``/v1/admin/top-jobs``."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, Field


class QueueDepth(BaseModel):
    name: str
    waiting: int = Field(description="Messages in the broker list, not yet taken by a worker")


class WorkerState(BaseModel):
    name: str
    queues: list[str]
    active: int = Field(description="Tasks this worker is running now")


class CircuitState(BaseModel):
    endpoint: str
    model: str
    state: str = Field(description="closed | half_open | open")
    failures: int


class OpsReport(BaseModel):
    queues: list[QueueDepth]
    unacked: int = Field(description="Messages delivered to workers and not yet acknowledged")
    workers: list[WorkerState]
    workers_error: str | None = Field(
        default=None, description="Why the worker list may be incomplete (inspect failed)"
    )
    breakers: list[CircuitState]


class TopJob(BaseModel):
    job_id: uuid.UUID
    kind: str | None
    status: str | None
    user_email: str | None
    calls: int
    cost_usd: float
    created_at: datetime | None


class TopJobList(BaseModel):
    items: list[TopJob]
