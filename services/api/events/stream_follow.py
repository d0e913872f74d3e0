"""Follow one Redis stream as Server-Sent Events: the loop shared by the job
events route and the library document events route.

A stream survives any silence: reads block for less than the Redis socket
timeout, and a ``: ping`` comment goes out at least every ``sse_ping_s`` so
proxies keep the connection open. If Redis drops the connection (restart,
failover) the stream keeps pinging and reconnects. When the event a client
resumes from is gone (Redis restarted empty, or the stream was trimmed) the
client gets an ``events_lost`` event instead of a silent gap.

The stream is a view, the database row the record: when a read comes back
empty the caller's ``finished`` check asks the row, and a finished subject ends
the stream after whatever landed meanwhile — plus, when the stream holds no
terminal event, the terminal event the caller made from the row.

Access is re-checked while the stream runs (``stream_access.py``): at least every
``sse_access_check_s``, busy or quiet, before anything more is sent; a refusal
ends the stream with an ``access_revoked`` event.

A stream given a contract (``FollowedStream.check``: both routes give one) relays
only the entries it accepts: one it refuses is logged and skipped, never sent, and
a refused terminal type does not end the stream (the row's ``finished`` does). The
job route gives none: its publishers outside tests publish a malformed event on
purpose rather than hide progress, and the pages read what they know of it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any

import redis.asyncio as aioredis
from fastapi import Depends, Header, Query, Request
from redis.exceptions import RedisError

from services.api.events.stream_access import REVOKED_EVENT
from services.api.state import AppState
from services.common.contracts.errors import ServiceError
from services.common.events import decode_entry
from services.common.redis_client import max_block_ms

log = logging.getLogger(__name__)

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
        raise ServiceError(
            422, "invalid_request", "Last-Event-ID must be an event id like '1700000000000-0'"
        )
    return f"{int(match.group(1))}-{int(match.group(2))}"


def resume_point(
    # Typed as plain str so OpenAPI does not offer "null" as a header value.
    last_event_id_header: Annotated[
        str, Header(alias="Last-Event-ID", pattern=STREAM_ID_PATTERN)
    ] = None,  # type: ignore[assignment]
    last_event_id: str | None = Query(
        None, pattern=STREAM_ID_PATTERN, description="Same as the Last-Event-ID header"
    ),
) -> str:
    """Where a (re)connecting client resumes: after its Last-Event-ID, else the start."""
    raw = last_event_id_header or last_event_id
    return parse_event_id(raw) if raw else START


ResumeFrom = Annotated[str, Depends(resume_point)]


@dataclass(frozen=True)
class Finished:
    """The subject has ended; ``fallback`` is the terminal event ``(type, data)``
    made from the row, sent when the stream itself holds none (None: send nothing)."""

    fallback: tuple[str, dict[str, Any]] | None = None


@dataclass(frozen=True)
class FollowedStream:
    key: str
    start: str
    terminal: frozenset[str]  # event types after which the stream ends
    reload_hint: str  # where a client that lost events reloads the record
    finished: Callable[[], Awaitable[Finished | None]]
    # None while the caller may still read the subject, else the reason (stream_access).
    still_allowed: Callable[[], Awaitable[str | None]]
    # The stream's contract, ``(type, data)`` -> raises ValueError for an entry it
    # refuses (skipped); None relays every entry.
    check: Callable[[str, dict[str, Any]], object] | None = None


def frame(event_id: str | None, event_type: str, data: Any) -> str:
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}event: {event_type}\ndata: {json.dumps(data)}\n\n"


async def follow(request: Request, state: AppState, stream: FollowedStream) -> AsyncIterator[str]:
    ping_s = state.settings.sse_ping_s
    check_s = min(state.settings.sse_access_check_s, ping_s)
    socket_timeout_s = state.settings.redis_socket_timeout_s
    last = stream.start
    verify = last != START  # resuming: is the event we resume from still there?
    last_write = last_check = time.monotonic()
    while not await request.is_disconnected():
        if time.monotonic() - last_check >= check_s:
            refused = await stream.still_allowed()
            if refused is not None:
                yield frame(None, REVOKED_EVENT, {"error": "access revoked", "reason": refused})
                return
            last_check = time.monotonic()
        batch: Any = None
        try:
            if verify:
                if not await _holds(state.aredis, stream.key, last):
                    yield frame(None, "events_lost", _lost(stream.reload_hint, last))
                    last_write = time.monotonic()
                verify = False
            # Block until the next ping or access check is due, never as long as the
            # socket timeout.
            now = time.monotonic()
            until_due = min(ping_s - (now - last_write), check_s - (now - last_check))
            block_ms = max_block_ms(socket_timeout_s, max(until_due, MIN_BLOCK_S))
            # redis-py types XREAD for every protocol version at once; the shape is fixed.
            batch = await state.aredis.xread({stream.key: last}, block=block_ms, count=200)
        except RedisError:
            # Redis went away: keep the client, retry, and on return check for a gap.
            verify = last != START
            await asyncio.sleep(min(RECONNECT_PAUSE_S, ping_s))
        if batch:
            for entry_id, fields in batch[0][1]:
                event = _relayed(stream, entry_id, fields)
                last = _text(entry_id)
                if event is None:
                    continue
                yield frame(event["id"], event["type"], event["data"])
                if event["type"] in stream.terminal:
                    return
            last_write = time.monotonic()
            continue
        ended = await stream.finished()
        if ended is not None:
            async for chunk in _closing(state.aredis, stream, last, ended):
                yield chunk
            return
        if time.monotonic() - last_write >= ping_s:
            yield ": ping\n\n"
            last_write = time.monotonic()


async def _closing(
    client: aioredis.Redis, stream: FollowedStream, last: str, ended: Finished
) -> AsyncIterator[str]:
    """The terminal event may have landed just after the last read: hand it over,
    else the one made from the row."""
    try:
        batch: Any = await client.xread({stream.key: last}, count=200)
    except RedisError:
        batch = None
    for entry_id, fields in batch[0][1] if batch else []:
        event = _relayed(stream, entry_id, fields)
        if event is None:
            continue
        yield frame(event["id"], event["type"], event["data"])
        if event["type"] in stream.terminal:
            return
    if ended.fallback is not None:
        yield frame(None, *ended.fallback)


def _relayed(stream: FollowedStream, entry_id: Any, fields: Any) -> dict[str, Any] | None:
    """The entry as ``{id, type, data}``, or None when the stream's contract refuses it
    (its data not even JSON, an unknown type, a field of the wrong type)."""
    if stream.check is None:
        return decode_entry(entry_id, fields)
    try:
        event = decode_entry(entry_id, fields)
        stream.check(event["type"], event["data"])
    # JSONDecodeError and pydantic's ValidationError are ValueErrors; data that is not
    # an object (a bare number) is a TypeError to the contract.
    except (ValueError, TypeError) as exc:
        log.warning("not relaying entry %s of %s: %s", _text(entry_id), stream.key, exc)
        return None
    return event


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _lost(reload_hint: str, last: str) -> dict[str, str]:
    return {
        "last_event_id": last,
        "message": "events after this id were lost (the event store restarted or trimmed); "
        f"reload {reload_hint}",
    }


async def _holds(client: aioredis.Redis, key: str, entry_id: str) -> bool:
    found: Any = await client.xrange(key, min=entry_id, max=entry_id, count=1)
    return bool(found)
