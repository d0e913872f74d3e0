"""Finished spans as OTLP protobuf bytes, written directly: the request a collector receives.

The SDK's encoder (``opentelemetry.exporter.otlp.proto.common``) builds a
protobuf message object per span, attribute and value, then serialises them;
in the exporter process that was the largest cost per span (57 µs of ~150,
bench/RESULTS.md), and it hashes each span's Resource through a JSON dump to
group spans. This module writes the same bytes straight away: the protobuf wire
format is a concatenation of ``tag, length, payload`` fields, and an attribute
such as ``gen_ai.request.model = "qwen3-32b"`` is the same bytes on every span,
so the encoded key/value of short scalar attributes is cached.

What a collector receives does not change: the fields, their presence rules
and their order are the SDK's (encode_spans in 1.45), byte for byte —
tests/telemetry/test_otlp_encoding.py decodes both with opentelemetry-proto
and compares them. In particular: an attribute the SDK cannot encode (an
integer outside int64, an unknown type) is skipped and logged, as it does;
``status`` is always present; dropped counts are written only when non-zero.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Mapping, Sequence
from typing import Any

log = logging.getLogger(__name__)

_FIXED64 = struct.Struct("<Q").pack
_DOUBLE = struct.Struct("<d").pack
_FIXED32 = struct.Struct("<I").pack
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_ONE_BYTE = [bytes((n,)) for n in range(128)]

# Span.flags: the SDK always says whether the parent's remoteness is known.
_HAS_IS_REMOTE = 0x100
_IS_REMOTE = 0x200
# Short scalar attribute values repeat (model, tool, status names): their
# encoded key/value is cached; longer strings (payload previews) are not.
_CACHE_MAX_CHARS = 128
_SCALARS = frozenset({str, int, float, bool})


def _varint(value: int) -> bytes:
    if value < 0x80:
        return _ONE_BYTE[value] if value >= 0 else _varint(value & 0xFFFFFFFFFFFFFFFF)
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: ``tag`` (one byte here), the length, the payload."""
    size = len(payload)
    return tag + (_ONE_BYTE[size] if size < 0x80 else _varint(size)) + payload


def _any_value(value: Any) -> bytes:
    """An ``AnyValue`` message; raises where the SDK's encoder raises."""
    if value is None:
        return b""
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, str):
        return _field(b"\x0a", value.encode())
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise ValueError(f"Value out of range: {value}")
        return b"\x18" + _varint(value)
    if isinstance(value, float):
        return b"\x21" + _DOUBLE(value)
    if isinstance(value, bytes):
        return _field(b"\x3a", value)
    if isinstance(value, Sequence):
        return _field(b"\x2a", b"".join([_field(b"\x0a", _any_value(v)) for v in value]))
    if isinstance(value, Mapping):
        pairs = b"".join([_field(b"\x0a", _key_value(str(k), v)) for k, v in value.items()])
        return _field(b"\x32", pairs)
    raise TypeError(f"Invalid type {type(value)} of value {value}")


def _key_value(key: str, value: Any) -> bytes:
    return (_field(b"\x0a", key.encode()) if key else b"") + _field(b"\x12", _any_value(value))


# Encoded attribute fields by (tag, key, type, value); ``type`` keeps True, 1 and
# 1.0 apart (they are equal dict keys). Emptied when full: cheaper than an LRU.
_PAIRS: dict[tuple[bytes, str, type, Any], bytes] = {}
_PAIRS_MAX = 16384


def attributes_fields(tag: bytes, attributes: Mapping[str, Any] | None) -> bytes:
    """One ``KeyValue`` field per attribute under ``tag``; unencodable ones skipped, logged."""
    if not attributes:
        return b""
    out = []
    pairs = _PAIRS
    for key, value in attributes.items():
        kind = type(value)
        cacheable = kind in _SCALARS and (kind is not str or len(value) <= _CACHE_MAX_CHARS)
        if cacheable:
            found = pairs.get((tag, key, kind, value))
            if found is not None:
                out.append(found)
                continue
        try:
            encoded = _field(tag, _key_value(key, value))
        except Exception as error:  # the SDK's encoder skips the attribute too
            log.exception("Failed to encode key %s: %s", key, error)
            continue
        if cacheable:
            if len(pairs) >= _PAIRS_MAX:
                pairs.clear()
            pairs[(tag, key, kind, value)] = encoded
        out.append(encoded)
    return b"".join(out)


def _trace_state(state: Any) -> bytes:
    if state is None:
        return b""
    text = ",".join([f"{key}={value}" for key, value in state.items()])
    return _field(b"\x1a", text.encode()) if text else b""


def _flags(context: Any) -> int:
    return _HAS_IS_REMOTE | _IS_REMOTE if context and context.is_remote else _HAS_IS_REMOTE


def _event(event: Any) -> bytes:
    parts = [b"\x09" + _FIXED64(event.timestamp)] if event.timestamp else []
    if event.name:
        parts.append(_field(b"\x12", event.name.encode()))
    parts.append(attributes_fields(b"\x1a", event.attributes))
    if event.dropped_attributes:
        parts.append(b"\x20" + _varint(event.dropped_attributes))
    return b"".join(parts)


def _link(link: Any) -> bytes:
    ctx = link.context
    parts = [
        b"\x0a\x10" + ctx.trace_id.to_bytes(16, "big"),
        b"\x12\x08" + ctx.span_id.to_bytes(8, "big"),
        attributes_fields(b"\x22", link.attributes),
    ]
    if link.dropped_attributes:
        parts.append(b"\x28" + _varint(link.dropped_attributes))
    parts.append(b"\x35" + _FIXED32(_flags(ctx)))
    return b"".join(parts)


def _status(status: Any) -> bytes:
    message = _field(b"\x12", status.description.encode()) if status.description else b""
    code = status.status_code.value
    return message + (b"\x18" + _varint(code) if code else b"")


def encode_span(span: Any) -> bytes:
    """One ``Span`` message for a finished SDK span (a ``ReadableSpan`` or its like)."""
    ctx, parent = span.context, span.parent
    parts = [
        b"\x0a\x10" + ctx.trace_id.to_bytes(16, "big"),
        b"\x12\x08" + ctx.span_id.to_bytes(8, "big"),
        _trace_state(ctx.trace_state),
    ]
    if parent:
        parts.append(b"\x22\x08" + parent.span_id.to_bytes(8, "big"))
    if span.name:
        parts.append(_field(b"\x2a", span.name.encode()))
    parts.append(b"\x30" + _ONE_BYTE[span.kind.value + 1])  # the SDK's kinds, shifted by one
    if span.start_time:
        parts.append(b"\x39" + _FIXED64(span.start_time))
    if span.end_time:
        parts.append(b"\x41" + _FIXED64(span.end_time))
    parts.append(attributes_fields(b"\x4a", span.attributes))
    if span.dropped_attributes:
        parts.append(b"\x50" + _varint(span.dropped_attributes))
    for event in span.events:
        parts.append(_field(b"\x5a", _event(event)))
    if span.dropped_events:
        parts.append(b"\x60" + _varint(span.dropped_events))
    for link in span.links:
        parts.append(_field(b"\x6a", _link(link)))
    if span.dropped_links:
        parts.append(b"\x70" + _varint(span.dropped_links))
    if span.status is not None:
        parts.append(_field(b"\x7a", _status(span.status)))
    parts.append(b"\x85\x01" + _FIXED32(_flags(parent)))
    return b"".join(parts)


def _scope(scope: Any) -> bytes:
    if scope is None:
        return b""
    parts = [_field(b"\x0a", scope.name.encode())] if scope.name else []
    if scope.version:
        parts.append(_field(b"\x12", scope.version.encode()))
    parts.append(attributes_fields(b"\x1a", scope.attributes))
    return b"".join(parts)


class _Groups:
    """Spans grouped by resource, then scope, as the SDK groups them (by equality,
    in order of first appearance), looking each distinct object up once."""

    def __init__(self) -> None:
        self.resources: dict[int, tuple[Any, dict[int, tuple[Any, list[bytes]]]]] = {}
        self._canonical: dict[int, Any] = {}  # id(object) -> the first equal object seen
        self._by_value: dict[Any, Any] = {}

    def _canon(self, thing: Any) -> Any:
        found = self._canonical.get(id(thing))
        if found is None:
            # Scopes and resources are keys here, as in the SDK; None is a scope too.
            found = self._canonical[id(thing)] = self._by_value.setdefault(thing, thing)
        return found

    def add(self, span: Any, encoded: bytes) -> None:
        resource = self._canon(span.resource)
        scope = self._canon(span.instrumentation_scope or None)
        scopes = self.resources.get(id(resource))
        if scopes is None:
            scopes = self.resources[id(resource)] = (resource, {})
        group = scopes[1].get(id(scope))
        if group is None:
            group = scopes[1][id(scope)] = (scope, [])
        group[1].append(encoded)


def encode_request(spans: Sequence[Any]) -> bytes:
    """An ``ExportTraceServiceRequest`` carrying ``spans``, serialised."""
    groups = _Groups()
    for span in spans:
        groups.add(span, _field(b"\x12", encode_span(span)))
    out = []
    for resource, scopes in groups.resources.values():
        parts = [_field(b"\x0a", attributes_fields(b"\x0a", resource.attributes))]
        for scope, encoded in scopes.values():
            scope_spans = [_field(b"\x0a", _scope(scope)), *encoded]
            if scope is not None and scope.schema_url:
                scope_spans.append(_field(b"\x1a", scope.schema_url.encode()))
            parts.append(_field(b"\x12", b"".join(scope_spans)))
        if resource.schema_url:
            parts.append(_field(b"\x1a", resource.schema_url.encode()))
        out.append(_field(b"\x0a", b"".join(parts)))
    return b"".join(out)
