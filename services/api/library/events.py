"""Server-Sent Events of one library document's ingestion progress.

The library service writes each document's progress to its own Redis stream
(``services/common/documents/streams.py``: ``document.parsed``,
``document.batch``, ``document.ready`` / ``document.failed``); this route
replays and follows it the way the job events route does — resumable with
``Last-Event-ID``, ``: ping`` comments while quiet, an ``events_lost`` event when
the id a client resumes from is gone — and ends after the terminal event.

The stream is a view; the document row is the record. When the row is ready
or failed but the stream holds no terminal event (it expired, or Redis
restarted empty), the terminal event is made from the row (without an id), so
a client always learns how the document ended.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any

import redis.asyncio as aioredis
from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse
from redis.exceptions import RedisError

from services.api.deps import DbSession, StateDep
from services.api.errors import ApiError, error_responses
from services.api.events.router import (
    MIN_BLOCK_S,
    RECONNECT_PAUSE_S,
    START,
    STREAM_ID_PATTERN,
    parse_event_id,
)
from services.api.library.router import AccessDep, LibraryAccess
from services.api.state import AppState
from services.common.documents.collections import personal_collection, project_collection
from services.common.documents.streams import TERMINAL_EVENTS, document_stream_key
from services.common.events import decode_entry
from services.common.models import Document
from services.common.redis_client import max_block_ms

router = APIRouter(
    prefix="/v1/library", tags=["library"], responses=error_responses(401, 404, 422, 503)
)


def readable(access: LibraryAccess) -> set[str]:
    """The collections the caller may read: a scoped key sees only its project."""
    scoped = access.scoped_collections()
    if scoped is not None:
        return set(scoped)
    projects = {project_collection(pid) for pid in access.projects.values()}
    return {personal_collection(access.user_id), *projects}


def visible_document(db: Any, access: LibraryAccess, document_id: str) -> Document:
    """The document, if the caller may read it; any other case is the same 404."""
    try:
        ident = uuid.UUID(document_id)
    except ValueError:
        raise ApiError(404, "not_found", "document not found") from None
    doc = db.get(Document, ident)
    if doc is None or doc.collection not in readable(access):
        raise ApiError(404, "not_found", "document not found")
    return doc


@router.get(
    "/documents/{document_id}/events",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "text/event-stream: document.parsed, document.batch, "
            "document.ready / document.failed (the last event), events_lost; "
            "': ping' comments while quiet",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        }
    },
)
def document_events(
    document_id: str,
    request: Request,
    db: DbSession,
    access: AccessDep,
    state: StateDep,
    # Typed as plain str so OpenAPI does not offer "null" as a header value.
    last_event_id_header: Annotated[
        str, Header(alias="Last-Event-ID", pattern=STREAM_ID_PATTERN)
    ] = None,  # type: ignore[assignment]
    last_event_id: str | None = Query(
        None, pattern=STREAM_ID_PATTERN, description="Same as the Last-Event-ID header"
    ),
) -> StreamingResponse:
    """Ingestion progress of one document until it is ready or failed."""
    doc = visible_document(db, access, document_id)
    raw = last_event_id_header or last_event_id
    start = parse_event_id(raw) if raw else START
    # Once streaming starts the status is 200; check Redis first so an outage is a 503.
    state.redis.ping()
    return StreamingResponse(
        _stream(request, state, str(doc.id), start),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _frame(event_id: str | None, event_type: str, data: Any) -> str:
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}event: {event_type}\ndata: {json.dumps(data)}\n\n"


async def _stream(request: Request, state: AppState, doc_id: str, start: str) -> AsyncIterator[str]:
    key = document_stream_key(doc_id)
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
                    yield _frame(None, "events_lost", _lost(doc_id, last))
                    last_write = time.monotonic()
                verify = False
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
                if event["type"] in TERMINAL_EVENTS:
                    return
            last_write = time.monotonic()
            continue
        ended = await _ended(state, doc_id)
        if ended is not None:
            # The terminal event may have landed just after that read: hand it over,
            # else tell the client from the row how the document ended.
            for event in await _drain(state.aredis, key, last):
                yield _frame(event["id"], event["type"], event["data"])
                if event["type"] in TERMINAL_EVENTS:
                    return
            yield _frame(None, *ended)
            return
        if time.monotonic() - last_write >= ping_s:
            yield ": ping\n\n"
            last_write = time.monotonic()


async def _drain(client: aioredis.Redis, key: str, last: str) -> list[dict[str, Any]]:
    try:
        batch: Any = await client.xread({key: last}, count=200)
    except RedisError:
        return []
    return [decode_entry(entry_id, fields) for entry_id, fields in (batch[0][1] if batch else [])]


def _lost(doc_id: str, last: str) -> dict[str, str]:
    return {
        "last_event_id": last,
        "message": "events after this id were lost (the event store restarted or trimmed); "
        f"reload the document: GET /v1/library/documents/{doc_id}",
    }


async def _holds(client: aioredis.Redis, key: str, entry_id: str) -> bool:
    found: Any = await client.xrange(key, min=entry_id, max=entry_id, count=1)
    return bool(found)


async def _ended(state: AppState, doc_id: str) -> tuple[str, dict[str, Any]] | None:
    """``(event type, data)`` made from the row once the document is ready or
    failed (or gone), else None."""

    def _check() -> tuple[str, dict[str, Any]] | None:
        with state.session_factory() as db:
            doc = db.get(Document, uuid.UUID(doc_id))
            if doc is None:
                return "document.failed", {"document_id": doc_id, "reason": "document deleted"}
            if doc.status == "ready":
                return "document.ready", {
                    "document_id": doc_id,
                    "chunks": doc.chunks,
                    "pages": doc.pages,
                }
            if doc.status == "failed":
                return "document.failed", {"document_id": doc_id, "reason": doc.error}
            return None

    try:
        return await asyncio.to_thread(_check)
    except Exception:  # database briefly unreachable: keep streaming, ask again later
        return None
