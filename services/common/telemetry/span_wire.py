"""What crosses the pipe between a traced process and its span exporter process.

Defined once, read by both sides (handoff.py writes, exporter_process.py reads).
A frame is a 4-byte big-endian length and a ``marshal`` payload: marshal dumps
plain tuples, dicts, strings and ints in C, one call per batch, which is the
cheapest encoding the traced process can pay (both ends are the same
interpreter, started from the same executable, so its format always matches).

A finished span travels as a tuple of the fields the sinks read
(:data:`SpanRecord`); resources and instrumentation scopes, shared by every span
of a provider, travel once per batch in a table the records index into.
Decoding rebuilds an SDK ``ReadableSpan`` equal field for field to the one the
process ended, so the exporter redacts and writes it with the same code as the
in-process pipeline, and the stored spans are the same.
"""

from __future__ import annotations

import marshal
import struct
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace.span import TraceState

# Message kinds, traced process -> exporter.
CONFIG = "config"  # the telemetry settings, first message of each exporter's life
SPANS = "spans"  # a batch: (resources, scopes, records)
FLUSH = "flush"  # (number, timeout_ms): write all sent so far, answer FLUSHED with the number
# Exporter -> traced process.
COUNTS = "counts"  # what the sinks wrote and lost since the last report
FLUSHED = "flushed"  # (number, ok)

_HEADER = struct.Struct(">I")
HEADER_SIZE = _HEADER.size

# The span counters the exporter reports back, by short name (the traced
# process owns the /metrics endpoint, so it re-counts them there).
COUNT_EXPORTED = "exported"
COUNT_DROPPED = "dropped"
COUNT_REDACTION_FAILED = "redaction_failed"

SpanRecord = tuple[Any, ...]
_KINDS = {kind.value: kind for kind in SpanKind}
_CODES = {code.value: code for code in StatusCode}
_UNSET = Status(StatusCode.UNSET)
_OK = Status(StatusCode.OK)


def frame(message: tuple[Any, ...]) -> bytes:
    """One length-prefixed frame."""
    payload = marshal.dumps(message)
    return _HEADER.pack(len(payload)) + payload


def frame_length(header: bytes) -> int:
    return int(_HEADER.unpack(header)[0])


def unframe(payload: bytes) -> tuple[Any, ...]:
    message = marshal.loads(payload)  # noqa: S302 - our own child/parent, never the network
    assert isinstance(message, tuple)
    return message


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None  # end of input
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_message(stream: BinaryIO) -> tuple[Any, ...] | None:
    """The next frame's message, or None at end of input."""
    header = _read_exactly(stream, HEADER_SIZE)
    if header is None:
        return None
    payload = _read_exactly(stream, frame_length(header))
    return None if payload is None else unframe(payload)


def _plain(attributes: Any) -> dict[str, Any]:
    # The SDK keeps attributes in a BoundedAttributes whose ``_dict`` is a plain
    # dict: copying that runs in C, where going through its Mapping interface
    # costs a Python call per key (this runs for every span of the process).
    inner = getattr(attributes, "_dict", None)
    if type(inner) is dict:
        return inner.copy()
    return dict(attributes or {})


def _state(state: TraceState | None) -> tuple[tuple[str, str], ...] | None:
    return tuple(state.items()) if state else None


class BatchEncoder:
    """Encodes one batch: per-batch tables of resources and scopes, a record per span."""

    def __init__(self) -> None:
        self.resources: list[tuple[dict[str, Any], str]] = []
        self.scopes: list[tuple[str, str | None, str | None, dict[str, Any]] | None] = []
        self._resource_ids: dict[int, int] = {}
        self._scope_ids: dict[int, int] = {}
        self.records: list[SpanRecord] = []

    def _resource(self, resource: Resource) -> int:
        index = self._resource_ids.get(id(resource))
        if index is None:
            index = self._resource_ids[id(resource)] = len(self.resources)
            self.resources.append((_plain(resource.attributes), resource.schema_url))
        return index

    def _scope(self, scope: InstrumentationScope | None) -> int:
        index = self._scope_ids.get(id(scope))
        if index is None:
            index = self._scope_ids[id(scope)] = len(self.scopes)
            self.scopes.append(
                None
                if scope is None
                else (scope.name, scope.version, scope.schema_url, _plain(scope.attributes))
            )
        return index

    def add(self, span: ReadableSpan) -> None:
        ctx, parent, status = span.context, span.parent, span.status
        self.records.append(
            (
                span.name,
                ctx.trace_id,
                ctx.span_id,
                int(ctx.trace_flags),
                _state(ctx.trace_state),
                ctx.is_remote,
                None
                if parent is None
                else (
                    parent.trace_id,
                    parent.span_id,
                    int(parent.trace_flags),
                    _state(parent.trace_state),
                    parent.is_remote,
                ),
                span.kind.value,
                span.start_time,
                span.end_time,
                status.status_code.value,
                status.description,
                _plain(span._attributes),  # noqa: SLF001 - see _plain
                tuple((e.name, e.timestamp, _plain(e.attributes)) for e in span.events) or None,
                tuple(
                    (_context_fields(link.context), _plain(link.attributes)) for link in span.links
                )
                or None,
                self._resource(span.resource),
                self._scope(span.instrumentation_scope),
            )
        )

    def message(self) -> tuple[Any, ...]:
        return (SPANS, (self.resources, self.scopes, self.records))


def _context_fields(ctx: SpanContext) -> tuple[Any, ...]:
    return (ctx.trace_id, ctx.span_id, int(ctx.trace_flags), _state(ctx.trace_state), ctx.is_remote)


def _context(fields: Sequence[Any]) -> SpanContext:
    trace_id, span_id, flags, state, is_remote = fields
    return SpanContext(
        trace_id,
        span_id,
        is_remote,
        TraceFlags(flags),
        TraceState(list(state)) if state else None,
    )


class BatchDecoder:
    """Rebuilds ``ReadableSpan``s; resources and scopes are kept across batches."""

    def __init__(self) -> None:
        self._resources: dict[Any, Resource] = {}
        self._scopes: dict[Any, InstrumentationScope | None] = {}

    def _resource(self, fields: Sequence[Any]) -> Resource:
        attributes, schema_url = fields
        key = (tuple(attributes.items()), schema_url)
        found = self._resources.get(key)
        if found is None:
            found = self._resources[key] = Resource(attributes, schema_url)
        return found

    def _scope(self, fields: Sequence[Any] | None) -> InstrumentationScope | None:
        if fields is None:
            return None
        name, version, schema_url, attributes = fields
        key = (name, version, schema_url, tuple(attributes.items()))
        if key not in self._scopes:
            self._scopes[key] = InstrumentationScope(name, version, schema_url, attributes or None)
        return self._scopes[key]

    def spans(self, payload: Sequence[Any]) -> list[ReadableSpan]:
        resource_table, scope_table, records = payload
        resources = [self._resource(r) for r in resource_table]
        scopes = [self._scope(s) for s in scope_table]
        return [_span(record, resources, scopes) for record in records]


def _status(code: int, description: str | None) -> Status:
    if description is None and code != StatusCode.ERROR.value:
        return _OK if code == StatusCode.OK.value else _UNSET
    return Status(_CODES[code], description)


def _span(
    record: SpanRecord,
    resources: Sequence[Resource],
    scopes: Sequence[InstrumentationScope | None],
) -> ReadableSpan:
    (
        name,
        trace_id,
        span_id,
        flags,
        state,
        is_remote,
        parent,
        kind,
        start_time,
        end_time,
        code,
        description,
        attributes,
        events,
        links,
        resource,
        scope,
    ) = record
    return ReadableSpan(
        name=name,
        context=_context((trace_id, span_id, flags, state, is_remote)),
        parent=None if parent is None else _context(parent),
        resource=resources[resource],
        attributes=attributes,
        events=[Event(n, a, t) for n, t, a in events] if events else (),
        links=[Link(_context(c), a) for c, a in links] if links else (),
        kind=_KINDS[kind],
        status=_status(code, description),
        start_time=start_time,
        end_time=end_time,
        instrumentation_scope=scopes[scope],
    )


def counts_message(deltas: Mapping[tuple[str, str, str], float]) -> tuple[Any, ...]:
    """A COUNTS message: ``{(counter, sink, reason): increase}``."""
    return (COUNTS, dict(deltas))
