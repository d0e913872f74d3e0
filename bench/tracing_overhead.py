"""Tracing overhead: Postgres span persistence throughput and hot-path cost per span.

Run:  .venv/bin/python bench/tracing_overhead.py [--spans 20000]

Needs a PostgreSQL server (LEAFLAB_TEST_PG_ADMIN, default
postgresql://postgres@127.0.0.1:5432/postgres); a scratch database is created
and dropped. Baselines are measured in the same run: the hot path against
tracing disabled (the OpenTelemetry no-op provider), persistence against one
INSERT per span.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import psycopg
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NoOpTracerProvider, Tracer
from sqlalchemy import create_engine, text

from services.common.migrate import upgrade_to_head
from services.common.telemetry import TelemetrySettings, build_tracer_provider
from services.common.telemetry.attributes import model_call_attributes
from services.common.telemetry.postgres_sink import PostgresSpanExporter, span_to_row
from services.common.telemetry.redaction import RedactingSpanExporter, RedactionPolicy

ADMIN = os.environ.get("LEAFLAB_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres")
DB = "leaflab_bench_telemetry"
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
    "leaflab.tool.arguments": '{"command": "curl -H \'Authorization: Bearer abcdefghijklmnop123\'"}',
}


class _Collect(SpanExporter):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: object) -> SpanExportResult:
        self.spans.extend(spans)  # type: ignore[arg-type]
        return SpanExportResult.SUCCESS


def make_spans(n: int) -> list[ReadableSpan]:
    sink = _Collect()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(sink))
    tracer = provider.get_tracer("bench")
    with tracer.start_as_current_span("job"):
        for i in range(n - 1):
            with tracer.start_as_current_span(f"chat m{i % 5}", attributes=ATTRS):
                pass
    return sink.spans


def hot_path(tracer: Tracer, n: int) -> list[float]:
    """Per-span wall time of a typical instrumented call: start, 13 attributes, end."""
    out = []
    for i in range(n):
        started = time.perf_counter()
        with tracer.start_as_current_span(f"chat m{i % 5}") as span:
            span.set_attributes(ATTRS)
        out.append(time.perf_counter() - started)
    return out


def _scratch_db() -> str:
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB}"')
        conn.execute(f'CREATE DATABASE "{DB}"')
    url = ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://") + f"/{DB}"
    upgrade_to_head(url)
    return url


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

    elapsed = _timed(batched)
    assert _count(url) == len(spans)
    print(f"persist batched ({batch}/INSERT, redacted): {len(spans) / elapsed:,.0f} spans/s")

    _truncate(url)
    sample = spans[:2000]
    engine = create_engine(url.replace("postgresql+psycopg", "postgresql+psycopg"))
    rows = [span_to_row(s) for s in sample]
    from sqlalchemy.dialects.postgresql import insert as pg_insert

    from services.common.models import SpanRecord

    def one_by_one() -> None:
        for row in rows:
            with engine.begin() as conn:
                conn.execute(pg_insert(SpanRecord).values(row).on_conflict_do_nothing())

    elapsed_single = _timed(one_by_one)
    engine.dispose()
    print(
        f"baseline one INSERT+commit per span:        {len(sample) / elapsed_single:,.0f} spans/s"
    )
    exporter.shutdown()


def bench_pipeline(url: str, n: int) -> None:
    """End to end through the SDK: create spans, flush, count rows."""
    _truncate(url)
    settings = TelemetrySettings(database_url=url, trace_queue_size=max(n, 16))
    provider = build_tracer_provider("leaflab-bench", settings)
    tracer = provider.get_tracer("bench")
    started = time.perf_counter()
    for i in range(n):
        with tracer.start_as_current_span(f"chat m{i % 5}") as span:
            span.set_attributes(ATTRS)
    provider.force_flush(60_000)
    elapsed = time.perf_counter() - started
    stored = _count(url)
    provider.shutdown()
    print(
        f"pipeline create→Postgres ({n} spans):        {stored / elapsed:,.0f} spans/s, stored {stored}"
    )


def bench_hot_path(url: str, n: int) -> None:
    disabled = NoOpTracerProvider().get_tracer("bench")
    settings = TelemetrySettings(database_url=url)
    provider = build_tracer_provider("leaflab-bench", settings)
    enabled = provider.get_tracer("bench")
    hot_path(disabled, 2000)
    hot_path(enabled, 2000)
    base = hot_path(disabled, n)
    traced = hot_path(enabled, n)
    provider.force_flush(60_000)
    provider.shutdown()
    b50, t50 = statistics.median(base), statistics.median(traced)
    b_mean, t_mean = statistics.fmean(base), statistics.fmean(traced)
    t95 = statistics.quantiles(traced, n=100)[94]
    print(f"hot path, tracing disabled: median {b50 * 1e6:.1f} µs, mean {b_mean * 1e6:.1f} µs")
    print(
        f"hot path, tracing enabled:  median {t50 * 1e6:.1f} µs, mean {t_mean * 1e6:.1f} µs, "
        f"p95 {t95 * 1e6:.1f} µs"
    )
    print(
        f"added cost per span: median {(t50 - b50) * 1e3:.4f} ms, mean {(t_mean - b_mean) * 1e3:.4f} ms "
        "(goal <= 0.5 ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=512)
    args = parser.parse_args()
    url = _scratch_db()
    try:
        spans = make_spans(args.spans)
        bench_persistence(url, spans, args.batch)
        bench_pipeline(url, args.spans)
        bench_hot_path(url, args.spans)
    finally:
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (DB,)
            )
            conn.execute(f'DROP DATABASE IF EXISTS "{DB}"')


if __name__ == "__main__":
    main()
