"""``/v1/admin/ops`` (queues, workers, breakers) and ``/v1/admin/top-jobs``: admins only."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query

from services.api.admin.ops import service
from services.api.admin.ops.schemas import OpsReport, TopJobList
from services.api.deps import AdminUser, DbSession, StateDep
from services.api.errors import error_responses

router = APIRouter(tags=["admin"], responses=error_responses(401, 403, 422))


@router.get("/ops", response_model=OpsReport)
async def ops(_: AdminUser, state: StateDep) -> OpsReport:
    """Queue depths and breakers from Redis, workers from a short Celery broadcast."""
    (found, error), queues, unacked, circuits = await asyncio.gather(
        asyncio.to_thread(service.workers, state.celery),
        asyncio.to_thread(service.queue_depths, state.redis),
        asyncio.to_thread(service.unacked, state.redis),
        asyncio.to_thread(service.breakers, state.redis),
    )
    return OpsReport(
        queues=queues, unacked=unacked, workers=found, workers_error=error, breakers=circuits
    )


@router.get("/top-jobs", response_model=TopJobList)
def top_jobs(
    db: DbSession,
    _: AdminUser,
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
    since: datetime | None = Query(None, description="Only spend settled at or after this time"),
) -> TopJobList:
    """The jobs that cost the most, from the spend ledger."""
    return TopJobList(items=service.top_jobs(db, limit=limit, since=since))
