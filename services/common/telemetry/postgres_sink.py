"""The Postgres span sink: batches of spans become rows of the ``spans`` table.

The exporter runs on its sink writer thread (pipeline.py). It never raises: when the
database is slow or down it counts the batch as dropped and backs off for a
moment, so the application never waits on tracing.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from psycopg.errors import UniqueViolation
from psycopg.types.json import Jsonb
from sqlalchemy import Engine, create_engine
from sqlalchemy.pool import QueuePool

from services.common.telemetry.redaction import redact_text

log = logging.getLogger(__name__)

SINK_POSTGRES = "postgres"
# Postgres array type of each column of the ``spans`` table (SpanRecord), for
# the unnest() bulk insert. Listed explicitly: a column added to the model
# later must be added here on purpose, with its array type.
_ARRAY_TYPES = {
    "span_id": "text[]",
    "trace_id": "text[]",
    "parent_span_id": "text[]",
    "name": "text[]",
    "kind": "text[]",
    "service": "text[]",
    "start_time": "timestamptz[]",
    "end_time": "timestamptz[]",
    "status_code": "text[]",
    "status_message": "text[]",
    "attributes": "jsonb[]",
    "events": "jsonb[]",
}
_COLUMNS = tuple(_ARRAY_TYPES)
# One multi-row INSERT per batch: each column travels as one array parameter
# and unnest() turns them back into rows. Twelve parameters whatever the batch
# size, so the statement is parsed and planned once, not per span.
_INSERT_SQL = (
    f"INSERT INTO spans ({', '.join(_COLUMNS)}) "
    f"SELECT * FROM unnest({', '.join(f'%b::{_ARRAY_TYPES[c]}' for c in _COLUMNS)}) "
    "ON CONFLICT (span_id) DO NOTHING"
)
# The fast path: COPY streams rows without a statement per batch to parse and
# plan, and without building twelve arrays first.
COPY_SQL = f"COPY spans ({', '.join(_COLUMNS)}) FROM STDIN"


def _hex(value: int, width: int) -> str:
    return format(value, f"0{width}x")


def _time(ns: int | None) -> datetime:
    return datetime.fromtimestamp((ns or 0) / 1e9, UTC)


def _json_value(value: Any) -> Any:
    # JSONB has no NaN/Infinity and no NUL characters.
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    return value


def _json_attributes(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    # Hot loop of the exporter: handle the common scalar cases inline.
    out: dict[str, Any] = {}
    for key, value in (attributes or {}).items():
        if isinstance(value, str):
            if "\x00" in value:
                value = value.replace("\x00", "")
        elif isinstance(value, float):
            if not math.isfinite(value):
                value = str(value)
        elif isinstance(value, (list, tuple)):
            value = [_json_value(v) for v in value]
        out[key.replace("\x00", "") if "\x00" in key else key] = value
    return out


def span_to_row(span: ReadableSpan) -> dict[str, Any]:
    """One ``spans`` row for a finished span."""
    ctx = span.context
    assert ctx is not None  # finished SDK spans always carry a context
    service = str(span.resource.attributes.get("service.name", "unknown"))
    return {
        "span_id": _hex(ctx.span_id, 16),
        "trace_id": _hex(ctx.trace_id, 32),
        "parent_span_id": _hex(span.parent.span_id, 16) if span.parent else None,
        "name": span.name[:300],
        "kind": span.kind.name.lower(),
        "service": service[:100],
        "start_time": _time(span.start_time),
        "end_time": _time(span.end_time or span.start_time),
        "status_code": span.status.status_code.name,
        "status_message": span.status.description,
        "attributes": _json_attributes(span.attributes),
        "events": [
            {
                "name": event.name,
                "time": _time(event.timestamp).isoformat(),
                "attributes": _json_attributes(event.attributes),
            }
            for event in span.events
        ],
    }


def copy_rows(spans: Sequence[ReadableSpan]) -> list[tuple[Any, ...]]:
    """The ``spans`` rows of a batch, as COPY (and the INSERT fallback) take them."""
    rows: list[tuple[Any, ...]] = []
    for span in spans:
        row = span_to_row(span)
        row["attributes"] = Jsonb(row["attributes"])
        row["events"] = Jsonb(row["events"])
        rows.append(tuple(row[column] for column in _COLUMNS))
    return rows


class PostgresSpanExporter(SpanExporter):
    """Writes each span batch with one ``COPY``; a batch that collides with stored spans
    is written again with one multi-row ``INSERT … ON CONFLICT DO NOTHING``.

    So a retried batch stays harmless. Counting, and backing off
    from a database that is down, happen in :class:`GuardedSpanExporter`. The engine is built on
    first export (never at import) and rebuilt after a fork.
    """

    def __init__(
        self,
        database_url: str,
        *,
        connect_timeout_s: int = 2,
        statement_timeout_ms: int = 5000,
    ) -> None:
        self._url = database_url
        self._connect_timeout_s = connect_timeout_s
        self._statement_timeout_ms = statement_timeout_ms
        self._engine: Engine | None = None
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forget_engine)

    def _forget_engine(self) -> None:
        # A child process must not reuse the parent's sockets.
        self._engine = None
        self._lock = threading.Lock()

    def _get_engine(self) -> Engine:
        if self._engine is None:
            self._engine = create_engine(
                self._url,
                poolclass=QueuePool,
                pool_size=1,
                max_overflow=0,
                pool_timeout=self._connect_timeout_s,
                pool_pre_ping=True,
                connect_args={
                    "connect_timeout": self._connect_timeout_s,
                    # Spans are telemetry: losing the last few hundred ms of them in
                    # a database crash is acceptable; waiting on a WAL flush per batch is not.
                    "options": (
                        f"-c statement_timeout={self._statement_timeout_ms} "
                        "-c synchronous_commit=off"
                    ),
                    "application_name": "leaflab-span-exporter",
                },
            )
        return self._engine

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not spans:
            return SpanExportResult.SUCCESS
        try:
            rows = copy_rows(spans)
            with self._lock:
                self._write(rows)
        except Exception as exc:  # tracing must never take the service down
            log.warning(
                "span export to Postgres failed (%d spans dropped): %s",
                len(spans),
                redact_text(str(exc)),
            )
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def _write(self, rows: list[tuple[Any, ...]]) -> None:
        try:
            with self._get_engine().begin() as conn:
                cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
                with cursor.copy(COPY_SQL) as copy:
                    for row in rows:
                        copy.write_row(row)
        except UniqueViolation:
            # COPY has no ON CONFLICT: a batch holding a span already stored (a
            # retry, a duplicate) goes again through the idempotent INSERT.
            params = tuple(list(column) for column in zip(*rows, strict=True))
            with self._get_engine().begin() as conn:
                # %b placeholders: binary arrays, no per-element text escaping.
                conn.exec_driver_sql(_INSERT_SQL, params)

    def shutdown(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
