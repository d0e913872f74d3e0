"""The span pipeline (pipeline.py): a burst within the bound loses nothing, every
sink gets redacted spans, and a hung sink holds up neither the agent nor the others."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from services.common.metrics import SPANS_DROPPED
from services.common.telemetry import TelemetrySettings, build_tracer_provider

BURST = 5000
SECRET = "Authorization: Bearer abcdefghijklmnop1234"


class _Collect(SpanExporter):
    def __init__(self, gate: threading.Event | None = None) -> None:
        self.spans: list[ReadableSpan] = []
        self.gate = gate

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.gate is not None:
            self.gate.wait(30)  # a hung sink until the test opens the gate
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


def _dropped(sinks: Sequence[str]) -> float:
    reasons = ("queue_full", "export_failed", "sink_down")
    return sum(SPANS_DROPPED.labels(sink=s, reason=r)._value.get() for s in sinks for r in reasons)


def _settings() -> TelemetrySettings:
    # The production bounds (queue 8,192, batches of 512); only the sinks are private.
    return TelemetrySettings(trace_db_export=False, otlp_endpoint=None, trace_schedule_delay_ms=50)


def _burst(provider: object, n: int) -> None:
    tracer = provider.get_tracer("test.pipeline")  # type: ignore[attr-defined]
    for i in range(n):
        with tracer.start_as_current_span(f"chat m{i % 5}") as span:
            span.set_attributes({"i": i, "leaflab.tool.arguments": f"{SECRET}{i} /data/{i}"})


def test_burst_within_the_bound_is_delivered_whole_and_redacted() -> None:
    first, second = _Collect(), _Collect()
    sinks = {"burst-a": first, "burst-b": second}
    provider = build_tracer_provider("leaflab-pipeline", _settings(), extra_sinks=sinks)
    before = _dropped(tuple(sinks))
    _burst(provider, BURST)  # far faster than one export thread drains (no pacing)
    assert provider.force_flush(60_000)
    provider.shutdown()
    assert _dropped(tuple(sinks)) - before == 0
    for sink in (first, second):
        assert sorted(int(s.attributes["i"]) for s in sink.spans) == list(range(BURST))
        values = [str(s.attributes["leaflab.tool.arguments"]) for s in sink.spans]
        assert not any("abcdefghijklmnop" in v for v in values)
        assert all(v.startswith("Authorization: [REDACTED]") for v in values)


def test_a_hung_sink_holds_up_neither_the_agent_nor_the_other_sink() -> None:
    gate = threading.Event()
    hung, healthy = _Collect(gate), _Collect()
    sinks = {"hung": hung, "healthy": healthy}
    provider = build_tracer_provider("leaflab-pipeline", _settings(), extra_sinks=sinks)
    full_before = SPANS_DROPPED.labels(sink="hung", reason="queue_full")._value.get()
    try:
        started = time.perf_counter()
        _burst(provider, 2000)
        assert time.perf_counter() - started < 10  # the agent never waited on the hung sink
        deadline = time.monotonic() + 10
        while len(healthy.spans) < 2000 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(healthy.spans) == 2000  # delivered while the other sink hangs
        assert hung.spans == []
    finally:
        gate.set()
        provider.shutdown()
    # 2,000 spans: the hung sink held one batch and queued the rest (bound 8,192 spans).
    assert SPANS_DROPPED.labels(sink="hung", reason="queue_full")._value.get() == full_before
    assert len(hung.spans) == 2000
