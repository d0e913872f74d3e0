"""A real OTLP/HTTP trace receiver for tests: decodes the protobuf like a collector does."""

from __future__ import annotations

import gzip
import threading
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def _any_value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


@dataclass
class ReceivedSpan:
    service: str
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str | None
    attributes: dict[str, Any]
    events: list[dict[str, Any]]


@dataclass
class OtlpReceiver:
    url: str
    spans: list[ReceivedSpan] = field(default_factory=list)
    requests: int = 0
    # Path and headers (lower-cased names) of every export request, in arrival order.
    deliveries: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    # Each request's body as received (decompressed), for byte-level comparisons.
    bodies: list[bytes] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(
        self, body: bytes, path: str = "/v1/traces", headers: dict[str, str] | None = None
    ) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        found: list[ReceivedSpan] = []
        for resource_spans in request.resource_spans:
            resource = {a.key: _any_value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(
                        ReceivedSpan(
                            service=str(resource.get("service.name")),
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex() or None,
                            attributes={a.key: _any_value(a.value) for a in span.attributes},
                            events=[
                                {
                                    "name": e.name,
                                    "attributes": {
                                        a.key: _any_value(a.value) for a in e.attributes
                                    },
                                }
                                for e in span.events
                            ],
                        )
                    )
        with self.lock:
            self.requests += 1
            self.spans.extend(found)
            self.deliveries.append((path, dict(headers or {})))
            self.bodies.append(body)

    def named(self, name: str) -> list[ReceivedSpan]:
        with self.lock:
            return [s for s in self.spans if s.name == name]

    def for_trace(self, trace_id: str) -> list[ReceivedSpan]:
        with self.lock:
            return [s for s in self.spans if s.trace_id == trace_id]


def start_receiver(
    paths: tuple[str, ...] = ("/v1/traces",),
) -> tuple[OtlpReceiver, ThreadingHTTPServer]:
    """Serve ``POST`` on ``paths`` (others: 404) on a free port until the server is shut down."""
    holder: dict[str, OtlpReceiver] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            encoding = (self.headers.get("content-encoding") or "").lower()
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            if self.path not in paths:
                self.send_response(404)
                self.end_headers()
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            holder["r"].add(body, self.path, headers)
            payload = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver = OtlpReceiver(url=f"http://127.0.0.1:{server.server_address[1]}")
    holder["r"] = receiver
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver, server
