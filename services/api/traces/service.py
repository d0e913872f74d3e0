"""Reading a trace, and deciding who may read it."""

from __future__ import annotations

import re

from sqlalchemy import exists, select
from sqlalchemy.orm import Session

from services.api.access import key_scope, may_read
from services.api.traces.schemas import SpanOut, TraceOut
from services.common.models import Job, SpanRecord, User

TRACE_ID_RE = re.compile(r"^[0-9a-f]{32}$")
MAX_SPANS = 20_000


def may_read_trace(db: Session, *, user: User, trace_id: str) -> bool:
    """Whoever may read the job that started the trace (``access.may_read``):
    its owner, an admin, or a member of its project, within the key's scope.

    A trace belongs to the job that started it: the first job created with
    that trace id (a batch's children share their parent's). Trace ids are
    made by the server, never taken from a caller's ``traceparent``; rows
    written before that rule could share an id across users, and the first
    job decides for them too, so a later job carrying a copied id grants
    nothing.
    """
    first = db.execute(
        select(Job.user_id, Job.project_id)
        .where(Job.trace_id == trace_id)
        .order_by(Job.created_at, Job.id)
        .limit(1)
    ).first()
    if first is None:
        return user.is_admin and key_scope(db) is None
    return may_read(db, user, owner_id=first.user_id, project_id=first.project_id)


def load_trace(db: Session, *, trace_id: str) -> TraceOut:
    """All stored spans of a trace, oldest first (capped to keep responses bounded)."""
    rows = db.scalars(
        select(SpanRecord)
        .where(SpanRecord.trace_id == trace_id)
        .order_by(SpanRecord.start_time, SpanRecord.span_id)
        .limit(MAX_SPANS)
    ).all()
    return TraceOut(
        trace_id=trace_id,
        spans=[
            SpanOut(
                span_id=row.span_id,
                parent_span_id=row.parent_span_id,
                name=row.name,
                kind=row.kind,
                service=row.service,
                start=row.start_time,
                end=row.end_time,
                duration_ms=round((row.end_time - row.start_time).total_seconds() * 1000, 3),
                status=row.status_code,
                status_message=row.status_message,
                attributes=row.attributes,
                events=row.events,
            )
            for row in rows
        ],
    )


def trace_exists(db: Session, *, trace_id: str) -> bool:
    """Whether any span or job carries this trace id."""
    spans = select(exists().where(SpanRecord.trace_id == trace_id))
    jobs = select(exists().where(Job.trace_id == trace_id))
    return bool(db.execute(spans).scalar() or db.execute(jobs).scalar())
