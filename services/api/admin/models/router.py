"""``GET /v1/admin/models``: each routed endpoint's capabilities (admins only).

Workers discover and publish them in Redis (services/common/model_caps.py); this
route only reads them. ``?refresh=true`` asks every worker to rediscover and waits
(at most ``wait_s``) for the fresh records; a worker-less deployment gets the old
ones back with ``refresh_pending`` set.
"""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field
from redis import Redis

from services.api.deps import AdminUser, StateDep
from services.api.errors import error_responses
from services.common import model_caps

router = APIRouter(tags=["admin"], responses=error_responses(401, 403, 422))


class ModelEndpoint(BaseModel):
    profile: str
    model: str
    base_url: str | None = None
    expired: bool = Field(default=False, description="Its record ran out; being rediscovered")
    configured: dict[str, Any] = Field(default_factory=dict, description="Set by the profile")
    discovered: dict[str, Any] = Field(default_factory=dict, description="Found by the probes")
    effective: dict[str, Any] = Field(
        default_factory=dict, description="What calls use: configured values win"
    )
    sources: dict[str, str] = Field(
        default_factory=dict, description="Field → configured | discovered | default"
    )


class ModelReport(BaseModel):
    items: list[ModelEndpoint]
    refresh_requested_at: float | None = None
    refresh_pending: bool = Field(
        default=False, description="A refresh was asked for and not every worker record is new"
    )


def _fresh(records: list[dict[str, Any]], since: float) -> bool:
    stamps = [(r.get("discovered") or {}).get("discovered_at", 0) for r in records]
    return bool(records) and all(not r.get("expired") for r in records) and min(stamps) >= since


async def _refreshed(redis: Redis, wait_s: float) -> tuple[list[dict[str, Any]], float, bool]:
    since = await asyncio.to_thread(model_caps.request_refresh, redis)
    deadline = time.monotonic() + wait_s
    while True:
        records = await asyncio.to_thread(model_caps.read_records, redis)
        if _fresh(records, since):
            return records, since, False
        if time.monotonic() >= deadline:
            return records, since, True
        await asyncio.sleep(0.2)


@router.get("/models", response_model=ModelReport)
async def models(
    _: AdminUser,
    state: StateDep,
    refresh: bool = Query(False, description="Ask the workers to rediscover every endpoint"),
    wait_s: Annotated[float, Query(ge=0, le=25)] = 20.0,
) -> ModelReport:
    if refresh:
        records, since, pending = await _refreshed(state.redis, wait_s)
        return ModelReport(
            items=[ModelEndpoint(**r) for r in records],
            refresh_requested_at=since,
            refresh_pending=pending,
        )
    records = await asyncio.to_thread(model_caps.read_records, state.redis)
    return ModelReport(items=[ModelEndpoint(**r) for r in records])
