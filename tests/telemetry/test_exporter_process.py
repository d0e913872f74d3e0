"""The exporter process (handoff.py, exporter_process.py): spans cross the pipe unchanged,
a burst within the bound arrives whole in both sinks, an exporter that dies is
started again with its losses counted, and a stopped one never holds up the agent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Link, SpanKind, Status, StatusCode
from sqlalchemy import Engine, func, select

from services.common.metrics import SPANS_DROPPED, SPANS_EXPORTED
from services.common.models import SpanRecord
from services.common.telemetry import TelemetrySettings, build_tracer_provider, span_wire
from services.common.telemetry.handoff import SpanHandoff
from services.common.telemetry.postgres_sink import span_to_row
from services.common.telemetry.redaction import RedactionPolicy
from tests.conftest import Stack
from tests.telemetry.conftest import Tracing

ROOT = Path(__file__).resolve().parents[2]
SINKS = ("postgres", "otlp")
SECRET = "Authorization: Bearer abcdefghijklmnop1234"


class _Collect(SpanExporter):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: object) -> SpanExportResult:
        self.spans.extend(spans)  # type: ignore[arg-type]
        return SpanExportResult.SUCCESS


def _varied_spans() -> list[ReadableSpan]:
    """Spans using every field the sinks read: parent, events, links, error status, arrays."""
    sink = _Collect()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(sink))
    tracer = provider.get_tracer("test.wire", "1.2", schema_url="https://example.org/s")
    with tracer.start_as_current_span("job", kind=SpanKind.CONSUMER) as parent:
        with tracer.start_as_current_span(
            "chat m1", links=[Link(parent.get_span_context(), {"why": "retry"})]
        ) as span:
            span.set_attributes(
                {
                    "s": f"{SECRET} https://u:pw@host/x?q=1",
                    "i": 7,
                    "f": float("nan"),
                    "b": True,
                    "a": ("x", "password=hunter2"),
                    "n": (1, 2),
                    "url.full": "https://h/p?secret=1",
                    "url.query": "q=private",
                    "long": "y" * 3000,
                }
            )
            span.add_event("tool.output", {"stdout": "token=abc123456789"})
            span.set_status(Status(StatusCode.ERROR, f"failed: {SECRET}"))
    return sink.spans


def _round_trip(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    encoder = span_wire.BatchEncoder()
    for span in spans:
        encoder.add(span)
    framed = span_wire.frame(encoder.message())
    kind, payload = span_wire.unframe(framed[span_wire.HEADER_SIZE :])
    assert kind == span_wire.SPANS
    return span_wire.BatchDecoder().spans(payload)


class TestWire:
    def test_both_sinks_get_the_same_bytes_as_in_process(self) -> None:
        policy = RedactionPolicy()
        original = _varied_spans()
        decoded = _round_trip(original)
        for before, after in zip(original, decoded, strict=True):
            assert span_to_row(policy.clean_span(after)) == span_to_row(policy.clean_span(before))
        # The OTLP request body, byte for byte (resource, scope, flags, links, status).
        as_sent = encode_spans([policy.clean_span(s) for s in original]).SerializeToString()
        as_rebuilt = encode_spans([policy.clean_span(s) for s in decoded]).SerializeToString()
        assert as_rebuilt == as_sent


def _counted(sinks: tuple[str, ...] = SINKS) -> dict[str, float]:
    reasons = ("queue_full", "export_failed", "sink_down", "exporter_lost")
    out = {f"exported/{s}": SPANS_EXPORTED.labels(sink=s)._value.get() for s in sinks}
    for s in sinks:
        out[f"dropped/{s}"] = sum(
            SPANS_DROPPED.labels(sink=s, reason=r)._value.get() for r in reasons
        )
    return out


def _delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in before}


@pytest.fixture
def handoff_provider(stack: Stack, tracing: Tracing) -> Iterator[TracerProvider]:
    settings = TelemetrySettings(
        database_url=stack.database_url,
        otlp_endpoint=tracing.receiver.url,
        trace_schedule_delay_ms=50,
        trace_export_mode="process",
    )
    provider = build_tracer_provider("leaflab-handoff", settings)
    yield provider
    provider.shutdown()


def _handoff(provider: TracerProvider) -> SpanHandoff:
    (processor,) = provider._active_span_processor._span_processors  # noqa: SLF001
    assert isinstance(processor, SpanHandoff)
    return processor


def _burst(provider: TracerProvider, n: int, tag: str) -> None:
    tracer = provider.get_tracer("test.handoff")
    for i in range(n):
        with tracer.start_as_current_span(f"{tag} {i % 5}") as span:
            span.set_attributes({"i": i, "leaflab.tool.arguments": f"{SECRET}{i} /data/{i}"})


def _stored(engine: Engine, tag: str) -> list[SpanRecord]:
    with engine.connect() as conn:
        return list(conn.execute(select(SpanRecord).where(SpanRecord.name.like(f"{tag} %"))))


class TestExporterProcess:
    def test_burst_arrives_whole_and_redacted_in_both_sinks(
        self, handoff_provider: TracerProvider, tracing: Tracing, engine: Engine
    ) -> None:
        tag = f"burst-{uuid.uuid4().hex[:8]}"
        before = _counted()
        _burst(handoff_provider, 5000, tag)
        assert handoff_provider.force_flush(60_000)
        rows = _stored(engine, tag)
        assert sorted(int(r.attributes["i"]) for r in rows) == list(range(5000))
        values = [str(r.attributes["leaflab.tool.arguments"]) for r in rows]
        assert all(v.startswith("Authorization: [REDACTED]") for v in values)
        received = [s for s in tracing.receiver.spans if s.name.startswith(f"{tag} ")]
        assert len(received) == 5000
        assert not any("abcdefghijklmnop" in str(s.attributes) for s in received)
        # The exporter's counts, reported back to the /metrics of this process.
        assert _delta(before, _counted()) == {
            "exported/postgres": 5000,
            "exported/otlp": 5000,
            "dropped/postgres": 0,
            "dropped/otlp": 0,
        }
        assert _handoff(handoff_provider).exporter_pid != os.getpid()

    def test_a_killed_exporter_is_restarted_and_its_losses_counted(
        self, handoff_provider: TracerProvider, engine: Engine
    ) -> None:
        tag = f"kill-{uuid.uuid4().hex[:8]}"
        handoff = _handoff(handoff_provider)
        _burst(handoff_provider, 10, f"{tag}-warm")
        assert handoff_provider.force_flush(30_000)
        first = handoff.exporter_pid
        assert first is not None
        before = _counted()
        _burst(handoff_provider, 3000, tag)
        os.kill(first, signal.SIGKILL)
        _burst(handoff_provider, 3000, tag)
        deadline = time.monotonic() + 30
        while not handoff_provider.force_flush(5000) and time.monotonic() < deadline:
            time.sleep(0.2)  # the exporter is being started again
        assert handoff.exporter_pid not in (None, first)
        delta = _delta(before, _counted())
        for sink in SINKS:  # nothing silent: every span written or counted lost
            assert delta[f"exported/{sink}"] + delta[f"dropped/{sink}"] == 6000, delta
        # Spans the killed exporter wrote in its last report interval count as
        # lost too: the count errs on the side of loss, never of silence.
        assert len(_stored(engine, tag)) >= delta["exported/postgres"] > 0

    def test_a_stopped_exporter_never_holds_up_the_agent(
        self, handoff_provider: TracerProvider
    ) -> None:
        handoff = _handoff(handoff_provider)
        _burst(handoff_provider, 10, "stop-warm")
        assert handoff_provider.force_flush(30_000)
        pid = handoff.exporter_pid
        assert pid is not None
        before = SPANS_DROPPED.labels(sink="postgres", reason="queue_full")._value.get()
        os.kill(pid, signal.SIGSTOP)
        try:
            started = time.perf_counter()
            _burst(handoff_provider, 30_000, "stopped")  # far past pipe + bounded buffer
            assert time.perf_counter() - started < 30
            full = SPANS_DROPPED.labels(sink="postgres", reason="queue_full")._value.get()
            assert full - before > 0  # the bound held, and the loss is counted
        finally:
            os.kill(pid, signal.SIGCONT)


# Installs tracing from the environment, as a worker does, emits spans and exits
# without flushing: the provider's exit hook must hand them to the exporter,
# which writes them before it exits.
EMIT_AND_EXIT = """
import sys
from opentelemetry import trace
from services.common.telemetry import setup_tracing
setup_tracing("leaflab-exit-test")
tracer = trace.get_tracer("leaflab.test")
for i in range(int(sys.argv[2])):
    with tracer.start_as_current_span(sys.argv[1]):
        pass
"""


def _traced_env(stack: Stack) -> dict[str, str]:
    """A child traced as a worker is, into the test's Postgres only, its spans held
    5 s by the exporter (nothing leaves before the exit or signal the test causes)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        PYTHONPATH=str(ROOT),
        LEAFLAB_DATABASE_URL=stack.database_url,
        LEAFLAB_TRACE_EXPORT_MODE="process",
        LEAFLAB_TRACE_SCHEDULE_DELAY_MS="5000",
    )
    env.pop("LEAFLAB_OTLP_ENDPOINT", None)
    return env


def test_spans_are_written_when_the_process_exits(stack: Stack, engine: Engine) -> None:
    name = f"exit-{uuid.uuid4().hex[:8]}"
    env = _traced_env(stack)
    done = subprocess.run(
        [sys.executable, "-c", EMIT_AND_EXIT, name, "300"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    with engine.connect() as conn:
        count = conn.execute(
            select(func.count()).select_from(SpanRecord).where(SpanRecord.name == name)
        ).scalar_one()
    assert count == 300


# As a worker stops on SIGTERM (Celery's warm shutdown, then the exit hook): the
# spans are made first, then the process says it is ready and waits for the signal.
EMIT_AND_WAIT_FOR_TERM = """
import signal, sys, time
from opentelemetry import trace
from services.common.telemetry import setup_tracing
setup_tracing("leaflab-term-test")
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
tracer = trace.get_tracer("leaflab.test")
for i in range(int(sys.argv[2])):
    with tracer.start_as_current_span(sys.argv[1]):
        pass
time.sleep(3)  # past one hand-off batch (512): the exporter runs and holds them
print("ready", flush=True)
while True:
    time.sleep(1)
"""


def test_spans_are_written_when_the_whole_process_group_is_terminated(
    stack: Stack, engine: Engine
) -> None:
    """``kill -TERM -<pgid>`` (systemd's default stop, a supervisor stopping a group)
    reaches the exporter too: it must outlive its traced process's shutdown and
    write what that hands over last, not die holding it."""
    name = f"term-{uuid.uuid4().hex[:8]}"
    env = _traced_env(stack)
    proc = subprocess.Popen(
        [sys.executable, "-c", EMIT_AND_WAIT_FOR_TERM, name, "1100"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, which the signal below goes to whole
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
        deadline = time.monotonic() + 30
        count = 0
        while time.monotonic() < deadline and count < 1100:
            with engine.connect() as conn:
                count = conn.execute(
                    select(func.count()).select_from(SpanRecord).where(SpanRecord.name == name)
                ).scalar_one()
            time.sleep(0.2)
        assert count == 1100
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
