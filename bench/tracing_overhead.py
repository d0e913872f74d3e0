"""Tracing overhead: span throughput end to end, exporter cost, hot-path cost per span.

Run:  .venv/bin/python -m bench.tracing_overhead [--spans 20000] [--modes thread,process]
                                                 [--rounds 1]

``--modes`` runs the end-to-end and hot-path figures once per export mode
(``LEAFLAB_TRACE_EXPORT_MODE``: ``thread``, the in-process pipeline; ``process``,
spans handed to a child exporter process), alternating, ``--rounds`` times, so
the two are compared in the same run. The agent process's CPU per span counts
this process only; the exporter's own CPU is printed next to it.

- end to end: spans created by the application thread go through the SDK's
  batch processors (the production settings: bounded queue, batches of 512)
  into BOTH sinks, Postgres and OTLP/HTTP to the loopback receiver of the
  telemetry tests (its own process, as a collector would be); the rate counts
  spans that reached each sink, and spans dropped are reported;
- the Postgres exporter alone (batched INSERT, redaction), against the baseline
  of one INSERT + commit per span;
- the hot path (start, 15 attributes, end) with both sinks on, against tracing
  disabled (the OpenTelemetry no-op provider).

Needs a PostgreSQL server (LEAFLAB_TEST_PG_ADMIN, default
postgresql://postgres@127.0.0.1:5432/postgres); a scratch database with a
unique name is created and dropped.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NoOpTracerProvider, Tracer
from sqlalchemy import create_engine, text
from sqlalchemy.dialects.postgresql import insert as pg_insert

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script too

from bench.otlp_sink import OtlpSinkProcess  # noqa: E402
from bench.scratch_stack import scratch_stack  # noqa: E402
from services.common.metrics import SPANS_DROPPED  # noqa: E402
from services.common.models import SpanRecord  # noqa: E402
from services.common.telemetry import TelemetrySettings, build_tracer_provider  # noqa: E402
from services.common.telemetry.attributes import model_call_attributes  # noqa: E402
from services.common.telemetry.handoff import SpanHandoff  # noqa: E402
from services.common.telemetry.postgres_sink import PostgresSpanExporter, span_to_row  # noqa: E402
from services.common.telemetry.redaction import RedactingSpanExporter, RedactionPolicy  # noqa: E402

ATTRS = {
    **model_call_attributes(
        request_model="qwen3-32b",
        response_model="qwen3-32b",
        input_tokens=1834,
        output_tokens=212,
        cached_tokens=1500,
        finish_reasons=["tool_calls"],
        cost_usd=0.0012,
        route_reason="scene=agent_reasoning tier=balanced",
        fallback=False,
        circuit_state="closed",
        provider="vllm",
    ),
    "leaflab.job.id": "0b9f3a6e-6a51-4c1e-9a35-1f2f5d0c8e11",
    # One payload with a secret in it, so redaction does real work on every span.
    "leaflab.tool.arguments": '{"command": "curl -H \'Authorization: Bearer abcdefghijklmnop1\'"}',
}


class _Collect(SpanExporter):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: object) -> SpanExportResult:
        self.spans.extend(spans)  # type: ignore[arg-type]
        return SpanExportResult.SUCCESS


def span_attributes(i: int) -> dict[str, Any]:
    """Typical model-call attributes; the job id and tool arguments vary like real ones."""
    return {
        **ATTRS,
        "leaflab.job.id": f"0b9f3a6e-6a51-4c1e-9a35-{i // 50:012d}",
        "leaflab.tool.arguments": (
            f'{{"command": "curl -H \'Authorization: Bearer abcdefghijklmnop{i}\' '
            f'https://example.org/data/{i}.csv"}}'
        ),
    }


def make_spans(n: int) -> list[ReadableSpan]:
    sink = _Collect()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(sink))
    tracer = provider.get_tracer("bench")
    with tracer.start_as_current_span("job"):
        for i in range(n - 1):
            with tracer.start_as_current_span(f"chat m{i % 5}", attributes=span_attributes(i)):
                pass
    return sink.spans


def hot_path(tracer: Tracer, n: int) -> list[float]:
    """Per-span wall time of a typical instrumented call: start, 13 attributes, end."""
    out = []
    for i in range(n):
        attributes = span_attributes(i)
        started = time.perf_counter()
        with tracer.start_as_current_span(f"chat m{i % 5}") as span:
            span.set_attributes(attributes)
        out.append(time.perf_counter() - started)
    return out


def _count(url: str) -> int:
    engine = create_engine(url)
    with engine.connect() as conn:
        value = int(conn.execute(text("SELECT count(*) FROM spans")).scalar_one())
    engine.dispose()
    return value


def _truncate(url: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("TRUNCATE spans"))
    engine.dispose()


def _timed(fn: Callable[[], None]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def bench_persistence(url: str, spans: list[ReadableSpan], batch: int) -> None:
    exporter = RedactingSpanExporter(PostgresSpanExporter(url), RedactionPolicy())
    exporter.export(spans[:10])  # connect and warm the statement cache
    _truncate(url)

    def batched() -> None:
        for i in range(0, len(spans), batch):
            assert exporter.export(spans[i : i + batch]) is SpanExportResult.SUCCESS

    cpu = time.process_time()
    elapsed = _timed(batched)
    cpu = time.process_time() - cpu
    assert _count(url) == len(spans)
    rate = len(spans) / elapsed
    print(
        f"persist, batched {batch}/INSERT, redacted: {rate:,.0f} spans/s "
        f"(exporter CPU {cpu / len(spans) * 1e6:.0f} µs/span → {len(spans) / cpu:,.0f} spans/CPU-s)"
    )

    _truncate(url)
    sample = spans[: min(2000, len(spans) // 4)]
    engine = create_engine(url)
    rows = [span_to_row(s) for s in sample]

    def one_by_one() -> None:
        for row in rows:
            with engine.begin() as conn:
                conn.execute(pg_insert(SpanRecord).values(row).on_conflict_do_nothing())

    elapsed_single = _timed(one_by_one)
    engine.dispose()
    rate = len(sample) / elapsed_single
    print(f"baseline, one INSERT + commit per span:   {rate:,.0f} spans/s")
    exporter.shutdown()


def _dropped() -> float:
    return sum(
        sample.value
        for metric in SPANS_DROPPED.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
    )


def _process_cpu(pid: int | None) -> float:
    """CPU seconds of a live process (the exporter), from /proc; 0 without one."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _exporter_pid(provider: TracerProvider) -> int | None:
    processors = provider._active_span_processor._span_processors  # noqa: SLF001
    return next((p.exporter_pid for p in processors if isinstance(p, SpanHandoff)), None)


def _dropped_by_reason() -> dict[str, float]:
    return {
        f"{sample.labels['sink']}/{sample.labels['reason']}": sample.value
        for metric in SPANS_DROPPED.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
    }


def bench_pipeline(url: str, otlp: OtlpSinkProcess, n: int, mode: str = "thread") -> None:
    """End to end through the SDK batch processors into both sinks; default queue
    and batch sizes, so a producer faster than the sinks loses spans (counted)."""
    _truncate(url)
    received_before, dropped_before = otlp.count(), _dropped()
    settings = TelemetrySettings(database_url=url, otlp_endpoint=otlp.url, trace_export_mode=mode)
    provider = build_tracer_provider("leaflab-bench", settings)
    tracer = provider.get_tracer("bench")
    if mode == "process":  # start the exporter before the clock, as a warm worker has it
        with tracer.start_as_current_span("warm"):
            pass
        provider.force_flush(60_000)
        _truncate(url)
        received_before, dropped_before = otlp.count(), _dropped()
    reasons_before = _dropped_by_reason()
    exporter = _exporter_pid(provider)
    exporter_cpu = _process_cpu(exporter)  # after its start-up: a warm worker's exporter
    cpu = time.process_time()
    started = time.perf_counter()
    for i in range(n):
        with tracer.start_as_current_span(f"chat m{i % 5}") as span:
            span.set_attributes(span_attributes(i))
    created = time.perf_counter() - started
    provider.force_flush(120_000)
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu
    exporter_cpu = _process_cpu(exporter) - exporter_cpu
    provider.shutdown()
    stored, received = _count(url), otlp.count() - received_before
    dropped = _dropped() - dropped_before
    reasons = {
        k: v - reasons_before.get(k, 0.0)
        for k, v in _dropped_by_reason().items()
        if v - reasons_before.get(k, 0.0)
    }
    print(
        f"[{mode}] agent process CPU {cpu / n * 1e6:.0f} µs/span"
        + (f", exporter process CPU {exporter_cpu / n * 1e6:.0f} µs/span" if exporter_cpu else "")
    )
    print(
        f"[{mode}] end to end, {n} spans -> Postgres + OTLP: "
        f"Postgres {stored / elapsed:,.0f} spans/s ({stored} stored), "
        f"OTLP {received / elapsed:,.0f} spans/s ({received} received), "
        f"{dropped:.0f} dropped {reasons or ''}; created in {created:.2f} s, "
        f"all exported after {elapsed:.2f} s"
    )


def bench_hot_path(url: str, otlp: OtlpSinkProcess, n: int, mode: str = "thread") -> None:
    disabled = NoOpTracerProvider().get_tracer("bench")
    settings = TelemetrySettings(database_url=url, otlp_endpoint=otlp.url, trace_export_mode=mode)
    provider = build_tracer_provider("leaflab-bench", settings)
    enabled = provider.get_tracer("bench")
    hot_path(disabled, min(2000, n // 2))
    hot_path(enabled, min(2000, n // 2))
    base = hot_path(disabled, n)
    traced = hot_path(enabled, n)
    provider.force_flush(60_000)
    provider.shutdown()
    b50, t50 = statistics.median(base), statistics.median(traced)
    b_mean, t_mean = statistics.fmean(base), statistics.fmean(traced)
    t95 = statistics.quantiles(traced, n=100)[94]
    print(f"[{mode}] hot path, disabled: median {b50 * 1e6:.1f} µs, mean {b_mean * 1e6:.1f} µs")
    print(
        f"[{mode}] hot path, enabled:  median {t50 * 1e6:.1f} µs, mean {t_mean * 1e6:.1f} µs, "
        f"p95 {t95 * 1e6:.1f} µs"
    )
    added_median, added_mean = (t50 - b50) * 1e3, (t_mean - b_mean) * 1e3
    print(
        f"[{mode}] added cost per span: median {added_median:.4f} ms, mean {added_mean:.4f} ms "
        "(goal <= 0.5 ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--db", default=None, help="scratch database name (default: unique)")
    parser.add_argument("--modes", default="thread,process", help="export modes, alternated")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--skip-exporter", action="store_true", help="no exporter-alone figure")
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    with (
        scratch_stack("telemetry", redis_db=False, name=args.db) as scratch,
        OtlpSinkProcess() as otlp,
    ):
        for round_ in range(args.rounds):
            for mode in modes if round_ % 2 == 0 else modes[::-1]:
                bench_pipeline(scratch.database_url, otlp, args.spans, mode)
        print(f"load average {os.getloadavg()[0]:.2f}")
        if not args.skip_exporter:
            bench_persistence(scratch.database_url, make_spans(args.spans), args.batch)
        for mode in modes:
            bench_hot_path(scratch.database_url, otlp, args.spans, mode)
        print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
