"""Response shapes of the traces API."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel


class SpanOut(BaseModel):
    span_id: str
    parent_span_id: str | None
    name: str
    kind: str
    service: str
    start: datetime
    end: datetime
    duration_ms: float
    status: str
    status_message: str | None
    attributes: dict[str, Any]
    events: list[dict[str, Any]]


class TraceOut(BaseModel):
    trace_id: str
    spans: list[SpanOut]
