"""What a collector receives from Leaflab's OTLP encoder is what the SDK's exporter sends.

Both exporters post the same spans over real HTTP to real receivers; the
bodies are decoded with opentelemetry-proto and compared (and their bytes).
The spans cover what the encoder writes: every attribute type, events, links,
status, a remote parent with trace state, dropped counts, two resources and
scopes with versions, attributes and schema URLs, and an attribute the SDK's
encoder cannot encode (an integer outside int64, skipped by both).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
)
from opentelemetry.trace.span import TraceState

from services.common.telemetry.otlp_sink import OtlpSpanExporter
from services.common.telemetry.redaction import RedactionPolicy
from tests.telemetry.otlp_receiver import OtlpReceiver, start_receiver

SCHEMA = "https://opentelemetry.io/schemas/1.21.0"


class _Collect(SpanExporter):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


def _provider(sink: _Collect, service: str, schema_url: str = "") -> TracerProvider:
    provider = TracerProvider(
        resource=Resource.create({"service.name": service, "host.name": "h1"}, schema_url),
        span_limits=SpanLimits(max_span_attributes=24, max_events=3, max_links=2),
    )
    provider.add_span_processor(SimpleSpanProcessor(sink))
    return provider


def varied_spans() -> list[ReadableSpan]:
    """Spans of two providers and three scopes, interleaved as a batch would hold them."""
    sink = _Collect()
    worker, api = _provider(sink, "leaflab-worker", SCHEMA), _provider(sink, "leaflab-api")
    scoped = worker.get_tracer("leaflab.worker", "1.2.3", SCHEMA, {"scope.kind": "agent"})
    plain, other = worker.get_tracer("plain"), api.get_tracer("leaflab.api", "0.1")
    remote = SpanContext(
        0x0AF7651916CD43DD8448EB211C80319C,
        0xB7AD6B7169203331,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
        trace_state=TraceState([("vendor", "v1"), ("rojo", "00f067aa0ba902b7")]),
    )
    linked = SpanContext(0x1234, 0x5678, is_remote=False, trace_state=TraceState([("k", "v")]))
    with scoped.start_as_current_span(
        "job",
        context=trace.set_span_in_context(NonRecordingSpan(remote)),
        kind=SpanKind.SERVER,
        links=[Link(linked, {"link.reason": "retry", "n": 2})],
    ) as job:
        job.set_attributes(
            {
                "text": "héllo ☃",
                "empty": "",
                "long": "x" * 300,
                "yes": True,
                "no": False,
                "zero": 0,
                "negative": -42,
                "big": 2**70,  # outside int64: both encoders skip it
                "ratio": 0.25,
                "nan": float("nan"),
                "names": ("a", "b"),
                "flags": (True, False),
                "counts": (1, -2, 3),
                "weights": (0.5, 1.5),
            }
        )
        job.add_event("started", {"step": 1, "tool": "shell"})
        job.add_event("no attributes")
        job.set_status(Status(StatusCode.ERROR, "tool failed: exit 2"))
        for i in range(3):
            with plain.start_as_current_span(f"call {i}", kind=SpanKind.CLIENT) as call:
                call.set_attribute("i", i)
                if i == 1:
                    call.set_status(Status(StatusCode.OK))
                    for n in range(30):  # past every limit: dropped counts are sent
                        call.set_attribute(f"a{n}", n)
                    for n in range(5):
                        call.add_event(f"e{n}", {"n": n})
        with other.start_as_current_span("request", kind=SpanKind.PRODUCER) as request:
            request.set_attribute("http.route", "/jobs/{id}")
        with scoped.start_span("consumer", kind=SpanKind.CONSUMER, links=[Link(linked)] * 3):
            pass
    with plain.start_as_current_span(""):  # no name at all
        pass
    return sink.spans


@pytest.fixture
def receivers() -> Iterator[tuple[OtlpReceiver, OtlpReceiver]]:
    started = [start_receiver(), start_receiver()]
    yield started[0][0], started[1][0]
    for _, server in started:
        server.shutdown()
        server.server_close()


def _post(exporter: SpanExporter, spans: list[ReadableSpan]) -> None:
    assert exporter.export(spans) is SpanExportResult.SUCCESS
    exporter.shutdown()


class TestCollectorReceivesTheSdksRequest:
    @pytest.mark.parametrize("cleaned", [False, True], ids=["as ended", "redacted"])
    def test_same_request_as_the_sdk_exporter(
        self, receivers: tuple[OtlpReceiver, OtlpReceiver], cleaned: bool
    ) -> None:
        spans = varied_spans()
        if cleaned:  # what the pipeline hands the sink
            spans = [RedactionPolicy().clean_span(span) for span in spans]
        sdk, ours = receivers
        _post(OTLPSpanExporter(endpoint=f"{sdk.url}/v1/traces"), spans)
        leaflab = OtlpSpanExporter(endpoint=f"{ours.url}/v1/traces")
        assert leaflab.own_encoder  # this SDK is the one the encoder follows
        _post(leaflab, spans)

        assert len(sdk.bodies) == len(ours.bodies) == 1
        expected = ExportTraceServiceRequest.FromString(sdk.bodies[0])
        got = ExportTraceServiceRequest.FromString(ours.bodies[0])
        assert got == expected
        assert ours.bodies[0] == sdk.bodies[0]
        # The comparison is not between two empty requests.
        assert len(ours.spans) == len(spans) == 7
        sent = [s for r in got.resource_spans for g in r.scope_spans for s in g.spans]
        job = next(s for s in sent if s.name == "job")
        assert [e.name for e in job.events] == ["started", "no attributes"]
        assert job.trace_state and job.links and job.status.message
        assert "big" not in {a.key for a in job.attributes}

    def test_a_failing_collector_is_a_failed_export(self) -> None:
        receiver, server = start_receiver(paths=("/elsewhere",))  # answers 404
        try:
            exporter = OtlpSpanExporter(endpoint=f"{receiver.url}/v1/traces", timeout=2)
            assert exporter.export(varied_spans()) is SpanExportResult.FAILURE
            exporter.shutdown()
        finally:
            server.shutdown()
            server.server_close()
