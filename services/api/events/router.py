"""Server-Sent Events for a job, read from its Redis stream, resumable by Last-Event-ID.

A stream survives any silence: reads block for less than the Redis socket
timeout, and a ``: ping`` comment goes out at least every ``sse_ping_s`` so
proxies keep the connection open while a slow model thinks. If Redis drops
the connection (restart, failover) the stream keeps pinging and reconnects.
Events live only in Redis (the ledger in Postgres is the record): when the
event a client resumes from is no longer there — Redis restarted empty, or
the stream was trimmed — the client gets an ``events_lost`` event telling it
to reload the job, instead of a silent gap, and then whatever comes next.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

import redis.asyncio as aioredis
from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse
from redis.exceptions import RedisError

from services.api.access import visible_job
from services.api.deps import CurrentUser, DbSession, StateDep
from services.api.errors import ApiError, error_responses
from services.api.state import AppState
from services.common.events import decode_entry, stream_key
from services.common.models import TERMINAL_STATUSES, Job
from services.common.redis_client import max_block_ms

router = APIRouter(prefix="/v1/jobs", tags=["events"], responses=error_responses(401, 404, 422))

# 19 digits: every such number fits Redis's unsigned 64-bit id parts.
STREAM_ID_PATTERN = r"^\s*\d{1,19}-\d{1,19}\s*$"
STREAM_ID = re.compile(r"^(\d{1,20})-(\d{1,20})$")
MAX_ID_PART = 2**64 - 1  # Redis stream ids are two unsigned 64-bit numbers
START = "0-0"
RECONNECT_PAUSE_S = 0.5
MIN_BLOCK_S = 0.05


def parse_event_id(raw: str) -> str:
    match = STREAM_ID.match(raw.strip())
    if not match or any(int(part) > MAX_ID_PART for part in match.groups()):
        raise ApiError(
            422, "invalid_request", "Last-Event-ID must be an event id like '1700000000000-0'"
        )
    return f"{int(match.group(1))}-{int(match.group(2))}"


@router.get(
    "/{job_id}/events",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "text/event-stream: status, token, tool_start, tool_end, todo, "
            "events_lost and final events; ': ping' comments while quiet",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        }
    },
)
def job_events(
    job_id: str,
    request: Request,
    db: DbSession,
    user: CurrentUser,
    state: StateDep,
    # Typed as plain str so OpenAPI does not offer "null" as a header value.
    last_event_id_header: Annotated[
        str, Header(alias="Last-Event-ID", pattern=STREAM_ID_PATTERN)
    ] = None,  # type: ignore[assignment]
    last_event_id: str | None = Query(
        None, pattern=STREAM_ID_PATTERN, description="Same as the Last-Event-ID header"
    ),
) -> StreamingResponse:
    job = visible_job(db, user, job_id)
    raw = last_event_id_header or last_event_id
    start = parse_event_id(raw) if raw else START
    # Once streaming starts the status is 200; check Redis first so an outage is a 503.
    state.redis.ping()
    return StreamingResponse(
        _stream(request, state, str(job.id), start),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _frame(event_id: str | None, event_type: str, data: Any) -> str:
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}event: {event_type}\ndata: {json.dumps(data)}\n\n"


async def _stream(request: Request, state: AppState, job_id: str, start: str) -> AsyncIterator[str]:
    key = stream_key(job_id)
    ping_s = state.settings.sse_ping_s
    socket_timeout_s = state.settings.redis_socket_timeout_s
    last = start
    verify = last != START  # resuming: is the event we resume from still there?
    last_write = time.monotonic()
    while not await request.is_disconnected():
        batch: Any = None
        try:
            if verify:
                if not await _holds(state.aredis, key, last):
                    yield _frame(None, "events_lost", _lost(job_id, last))
                    last_write = time.monotonic()
                verify = False
            # redis-py types XREAD for every protocol version at once; the shape is fixed.
            # Block until the next ping is due, but never as long as the socket timeout.
            until_ping = max(ping_s - (time.monotonic() - last_write), MIN_BLOCK_S)
            block_ms = max_block_ms(socket_timeout_s, until_ping)
            batch = await state.aredis.xread({key: last}, block=block_ms, count=200)
        except RedisError:
            # Redis went away: keep the client, retry, and on return check for a gap.
            verify = last != START
            await asyncio.sleep(min(RECONNECT_PAUSE_S, ping_s))
        if batch:
            for entry_id, fields in batch[0][1]:
                event = decode_entry(entry_id, fields)
                last = event["id"]
                yield _frame(event["id"], event["type"], event["data"])
                if event["type"] == "final":
                    return
            last_write = time.monotonic()
            continue
        if await _job_finished(state, job_id):
            # The final event may have landed just after that read: hand it over.
            async for frame in _drain(state.aredis, key, last):
                yield frame
            return
        if time.monotonic() - last_write >= ping_s:
            yield ": ping\n\n"
            last_write = time.monotonic()


async def _drain(client: aioredis.Redis, key: str, last: str) -> AsyncIterator[str]:
    try:
        batch: Any = await client.xread({key: last}, count=200)
    except RedisError:
        return
    for entry_id, fields in batch[0][1] if batch else []:
        event = decode_entry(entry_id, fields)
        yield _frame(event["id"], event["type"], event["data"])


def _lost(job_id: str, last: str) -> dict[str, str]:
    return {
        "last_event_id": last,
        "message": "events after this id were lost (the event store restarted or trimmed); "
        f"reload the job: GET /v1/jobs/{job_id}",
    }


async def _holds(client: aioredis.Redis, key: str, entry_id: str) -> bool:
    found: Any = await client.xrange(key, min=entry_id, max=entry_id, count=1)
    return bool(found)


async def _job_finished(state: AppState, job_id: str) -> bool:
    def _check() -> bool:
        with state.session_factory() as db:
            job = db.get(Job, job_id)
            return job is None or job.status in TERMINAL_STATUSES

    try:
        return await asyncio.to_thread(_check)
    except Exception:  # database briefly unreachable: keep streaming, ask again later
        return False
