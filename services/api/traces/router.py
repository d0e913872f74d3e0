"""Traces API: the spans of one trace, for the job page's waterfall and `leaflab trace`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from services.api.deps import CurrentUser, DbSession
from services.api.errors import error_responses, not_found
from services.api.traces.schemas import TraceOut
from services.api.traces.service import TRACE_ID_RE, load_trace, may_read_trace, trace_exists
from services.common.contracts.errors import ServiceError

router = APIRouter(prefix="/v1/traces", tags=["traces"], responses=error_responses(401, 404, 422))


@router.get("/{trace_id}", response_model=TraceOut)
def get_trace(
    # Declared for clients; checked below, with the message users know.
    trace_id: Annotated[str, Path(json_schema_extra={"pattern": r"^\s*[0-9a-fA-F]{32}\s*$"})],
    user: CurrentUser,
    db: DbSession,
) -> TraceOut:
    """Spans of a trace the caller may see, oldest first.

    A trace of another user's job answers 404, like a missing one, so trace
    ids reveal nothing. A job's own trace may still be empty for a moment
    after it starts: spans reach Postgres in batches.
    """
    trace_id = trace_id.strip().lower()
    if not TRACE_ID_RE.match(trace_id):
        raise ServiceError(422, "invalid_request", "trace_id must be 32 hexadecimal characters")
    if not may_read_trace(db, user=user, trace_id=trace_id):
        raise not_found("trace")
    trace = load_trace(db, trace_id=trace_id)
    if not trace.spans and not trace_exists(db, trace_id=trace_id):
        raise not_found("trace")
    return trace
