"""Server-Sent Events of one library document's ingestion progress.

The library service writes each document's progress to its own Redis stream
(``keys.document_stream``; the events are ``contracts/document_events.py``:
``document.parsed``, ``document.batch``, ``document.ready`` / ``document.failed``);
this route replays and follows it the way the job events route does — resumable
with ``Last-Event-ID``, ``: ping`` comments while quiet, an ``events_lost`` event
when the id a client resumes from is gone — and ends after the terminal event.
Each entry is parsed with ``DocumentEvent`` before it is relayed: one the union
refuses is logged and skipped, so a client only ever reads the contract's events.

The stream is a view; the document row is the record. When the row is ready
or failed but the stream holds no terminal event (it expired, or Redis
restarted empty), the terminal event is made from the row (without an id), so
a client always learns how the document ended.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from sqlalchemy.orm import Session

from services.api.api_keys import Caller
from services.api.deps import DbSession, StateDep
from services.api.errors import error_responses
from services.api.events.stream_access import stream_access
from services.api.events.stream_follow import Finished, FollowedStream, ResumeFrom, follow
from services.api.library.access import AccessDep, library_access, visible_document
from services.api.state import AppState
from services.common.contracts import keys
from services.common.contracts.document_events import (
    DOCUMENT_TERMINAL,
    DocumentEvent,
    DocumentFailed,
    DocumentReady,
    parse_document_event,
)
from services.common.contracts.statuses import DocumentStatus
from services.common.models import Document

router = APIRouter(
    prefix="/v1/library", tags=["library"], responses=error_responses(401, 404, 422, 503)
)


@router.get(
    "/documents/{document_id}/events",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "text/event-stream: document.parsed, document.batch, "
            "document.ready / document.failed (the last event), events_lost, "
            "access_revoked (the last event) when the reader's access ends; "
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
    start: ResumeFrom,
) -> StreamingResponse:
    """Ingestion progress of one document until it is ready or failed."""
    doc = visible_document(db, access, document_id)
    # Once streaming starts the status is 200; check Redis first so an outage is a 503.
    state.redis.ping()
    return StreamingResponse(
        follow(request, state, _document_stream(request, state, str(doc.id), start)),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _document_stream(request: Request, state: AppState, doc_id: str, start: str) -> FollowedStream:
    def readable_by(db: Session, caller: Caller) -> None:
        visible_document(db, library_access(caller.user, db, state), doc_id)

    async def finished() -> Finished | None:
        ended = await _ended(state, doc_id)
        return None if ended is None else Finished(fallback=ended)

    return FollowedStream(
        key=keys.document_stream(doc_id),
        start=start,
        terminal=DOCUMENT_TERMINAL,
        reload_hint=f"the document: GET /v1/library/documents/{doc_id}",
        finished=finished,
        still_allowed=stream_access(request, state, readable_by),
        check=parse_document_event,
    )


async def _ended(state: AppState, doc_id: str) -> tuple[str, dict[str, Any]] | None:
    """``(event type, data)`` made from the row once the document is ready or
    failed (or gone), else None."""

    def _check() -> DocumentEvent | None:
        with state.session_factory() as db:
            doc = db.get(Document, uuid.UUID(doc_id))
            if doc is None:
                return DocumentFailed(
                    type="document.failed", document_id=doc_id, reason="document deleted"
                )
            if doc.status == DocumentStatus.READY:
                return DocumentReady(
                    type="document.ready", document_id=doc_id, chunks=doc.chunks, pages=doc.pages
                )
            if doc.status == DocumentStatus.FAILED:
                return DocumentFailed(type="document.failed", document_id=doc_id, reason=doc.error)
            return None

    try:
        event = await asyncio.to_thread(_check)
    except Exception:  # database briefly unreachable: keep streaming, ask again later
        return None
    return None if event is None else (event.type, event.data())
