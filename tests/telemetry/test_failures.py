"""Tracing failures never raise into, or stall, the instrumented code."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider

from services.common.metrics import SPANS_DROPPED
from services.common.telemetry import TelemetrySettings, build_tracer_provider
from tests.fixtures.dead_servers import black_hole as hung_server
from tests.fixtures.dead_servers import closed_port

SPANS = 400


@pytest.fixture
def black_hole() -> Iterator[int]:
    """A TCP server that accepts connections and never answers (a hung DB/collector)."""
    with hung_server() as port:
        yield port


def _dropped(sink: str, reason: str) -> float:
    return SPANS_DROPPED.labels(sink=sink, reason=reason)._value.get()


def _provider(db_port: int, otlp_port: int) -> TracerProvider:
    settings = TelemetrySettings(
        database_url=f"postgresql+psycopg://postgres@127.0.0.1:{db_port}/nowhere",
        otlp_endpoint=f"http://127.0.0.1:{otlp_port}",
        otlp_timeout_s=1.0,
        trace_db_connect_timeout_s=1,
        trace_queue_size=256,
        trace_batch_size=64,
        trace_schedule_delay_ms=50,
    )
    return build_tracer_provider("leaflab-failing", settings)


def _end_latencies(provider: TracerProvider) -> list[float]:
    tracer = provider.get_tracer("test.failures")
    latencies = []
    for i in range(SPANS):
        span = tracer.start_span(f"op {i % 7}", attributes={"i": i, "text": "password=x " * 5})
        started = time.perf_counter()
        span.end()
        latencies.append(time.perf_counter() - started)
    return latencies


def _report(latencies: list[float]) -> None:
    p50, worst = statistics.median(latencies), max(latencies)
    print(f"span end p50 {p50 * 1e3:.4f} ms, max {worst * 1e3:.3f} ms")


def _release(provider: TracerProvider) -> None:
    # Shutting down flushes into the dead sinks; do it off the test's critical path.
    threading.Thread(target=provider.shutdown, daemon=True).start()


class TestSinksDown:
    def test_unreachable_db_and_collector(self) -> None:
        provider = _provider(closed_port(), closed_port())
        reasons = ("export_failed", "queue_full", "sink_down")
        before = sum(_dropped("postgres", r) for r in reasons)
        latencies = _end_latencies(provider)
        provider.force_flush(5000)
        _release(provider)
        _report(latencies)  # span.end() latency: bench/tracing_sinks_down.py
        after = sum(_dropped("postgres", r) for r in reasons)
        assert after - before >= SPANS * 0.9  # every span is accounted for as lost

    def test_hung_db_and_collector(self, black_hole: int) -> None:
        provider = _provider(black_hole, black_hole)
        before = _dropped("otlp", "queue_full")
        latencies = _end_latencies(provider)
        _release(provider)
        _report(latencies)  # span.end() latency: bench/tracing_sinks_down.py
        # The exporter thread is stuck on the hung collector: the bounded queue overflowed.
        # (An exporter process reports its counts a moment later: wait for them.)
        deadline = time.monotonic() + 10
        while _dropped("otlp", "queue_full") - before <= 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _dropped("otlp", "queue_full") - before > 0
