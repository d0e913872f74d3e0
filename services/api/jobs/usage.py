"""A job's usage as the API reports it: a batch's is its own plus its tasks'.

A batch makes no model call itself; each task is a child turn job
(``parent_job_id``) whose row the worker updates after every model call. The
sum is taken when the job is read, never copied onto the parent's row, so it is
right while tasks still run and after they finish, and nothing counts twice: a
task's tokens live on the task's row alone. Only direct children are summed: a
task reports its own usage the same way (its subagents are their own jobs).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from services.common.models import Job

ROLLED_UP_KINDS = ("batch",)


@dataclass(frozen=True)
class UsageTotals:
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cost_usd: Decimal
    estimated: bool

    @classmethod
    def own(cls, job: Job) -> UsageTotals:
        return cls(
            input_tokens=job.input_tokens,
            output_tokens=job.output_tokens,
            cached_tokens=job.cached_tokens,
            cost_usd=Decimal(job.cost_usd),
            estimated=bool(job.usage_estimated),
        )

    def __add__(self, other: UsageTotals) -> UsageTotals:
        return UsageTotals(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            estimated=self.estimated or other.estimated,
        )


def job_usage(db: Session, jobs: Sequence[Job]) -> dict[uuid.UUID, UsageTotals]:
    """Each job's usage, a batch's with its tasks' added (one query for all batches)."""
    totals = {job.id: UsageTotals.own(job) for job in jobs}
    batches = [job.id for job in jobs if job.kind in ROLLED_UP_KINDS]
    if not batches:
        return totals
    rows = db.execute(
        select(
            Job.parent_job_id,
            func.coalesce(func.sum(Job.input_tokens), 0),
            func.coalesce(func.sum(Job.output_tokens), 0),
            func.coalesce(func.sum(Job.cached_tokens), 0),
            func.coalesce(func.sum(Job.cost_usd), 0),
            func.bool_or(Job.usage_estimated),
        )
        .where(Job.parent_job_id.in_(batches))
        .group_by(Job.parent_job_id)
    )
    for parent_id, tokens_in, tokens_out, cached, cost, estimated in rows:
        tasks = UsageTotals(
            int(tokens_in), int(tokens_out), int(cached), Decimal(cost), bool(estimated)
        )
        totals[parent_id] = totals[parent_id] + tasks
    return totals
