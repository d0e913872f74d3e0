"""Server-Sent Events for a job, read from its Redis stream, resumable by Last-Event-ID."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse

from services.api.access import visible_job
from services.api.deps import CurrentUser, DbSession, StateDep
from services.api.errors import ApiError
from services.api.state import AppState
from services.common.events import decode_entry, stream_key
from services.common.models import TERMINAL_STATUSES, Job

router = APIRouter(prefix="/v1/jobs", tags=["events"])

STREAM_ID = re.compile(r"^\d{1,20}-\d{1,20}$")


@router.get("/{job_id}/events")
def job_events(
    job_id: str,
    request: Request,
    db: DbSession,
    user: CurrentUser,
    state: StateDep,
    last_event_id: str | None = Query(None, alias="last_event_id"),
) -> StreamingResponse:
    job = visible_job(db, user, job_id)
    start = request.headers.get("last-event-id") or last_event_id or "0-0"
    if not STREAM_ID.match(start):
        raise ApiError(422, "invalid_request", "Last-Event-ID must look like '<ms>-<seq>'")
    # Once streaming starts the status is 200; check Redis first so an outage is a 503.
    state.redis.ping()
    return StreamingResponse(
        _stream(request, state, str(job.id), start),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _stream(request: Request, state: AppState, job_id: str, start: str) -> AsyncIterator[str]:
    key = stream_key(job_id)
    last = start
    block_ms = int(state.settings.sse_ping_s * 1000)
    while not await request.is_disconnected():
        # redis-py types XREAD for every protocol version at once; the shape is fixed.
        batch: Any = await state.aredis.xread({key: last}, block=block_ms, count=200)
        if not batch:
            if await _job_finished(state, job_id):
                return
            yield ": ping\n\n"
            continue
        for entry_id, fields in batch[0][1]:
            event = decode_entry(entry_id, fields)
            last = event["id"]
            data = json.dumps(event["data"])
            yield f"id: {event['id']}\nevent: {event['type']}\ndata: {data}\n\n"
            if event["type"] == "final":
                return


async def _job_finished(state: AppState, job_id: str) -> bool:
    def _check() -> bool:
        with state.session_factory() as db:
            job = db.get(Job, job_id)
            return job is None or job.status in TERMINAL_STATUSES

    return await asyncio.to_thread(_check)
