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
from typing import Any

import psycopg
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NoOpTracerProvider, Tracer
from sqlalchemy import create_engine, text
from sqlalchemy.dialects.postgresql import insert as pg_insert

from services.common.migrate import upgrade_to_head
from services.common.models import SpanRecord
from services.common.telemetry import TelemetrySettings, build_tracer_provider
from services.common.telemetry.attributes import model_call_attributes
from services.common.telemetry.postgres_sink import PostgresSpanExporter, span_to_row
from services.common.telemetry.redaction import RedactingSpanExporter, RedactionPolicy

ADMIN = os.environ.get("LEAFLAB_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres")
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


def _scratch_db(db: str) -> str:
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{db}"')
        conn.execute(f'CREATE DATABASE "{db}"')
    url = ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://") + f"/{db}"
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


def bench_pipeline(url: str, n: int) -> None:
    """End to end through the SDK: create spans, flush, count rows."""
    _truncate(url)
    settings = TelemetrySettings(database_url=url, trace_queue_size=max(n, 16))
    provider = build_tracer_provider("leaflab-bench", settings)
    tracer = provider.get_tracer("bench")
    started = time.perf_counter()
    for i in range(n):
        with tracer.start_as_current_span(f"chat m{i % 5}") as span:
            span.set_attributes(span_attributes(i))
    provider.force_flush(60_000)
    elapsed = time.perf_counter() - started
    stored = _count(url)
    provider.shutdown()
    rate = stored / elapsed
    print(f"pipeline create → Postgres, {n} spans:   {rate:,.0f} spans/s ({stored} stored)")


def bench_hot_path(url: str, n: int) -> None:
    disabled = NoOpTracerProvider().get_tracer("bench")
    settings = TelemetrySettings(database_url=url)
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
    print(f"hot path, tracing disabled: median {b50 * 1e6:.1f} µs, mean {b_mean * 1e6:.1f} µs")
    print(
        f"hot path, tracing enabled:  median {t50 * 1e6:.1f} µs, mean {t_mean * 1e6:.1f} µs, "
        f"p95 {t95 * 1e6:.1f} µs"
    )
    added_median, added_mean = (t50 - b50) * 1e3, (t_mean - b_mean) * 1e3
    print(
        f"added cost per span: median {added_median:.4f} ms, mean {added_mean:.4f} ms "
        "(goal <= 0.5 ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--db", default="leaflab_bench_telemetry", help="scratch database name")
    args = parser.parse_args()
    url = _scratch_db(args.db)
    try:
        spans = make_spans(args.spans)
        bench_persistence(url, spans, args.batch)
        bench_pipeline(url, args.spans)
        bench_hot_path(url, args.spans)
    finally:
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (args.db,),
            )
            conn.execute(f'DROP DATABASE IF EXISTS "{args.db}"')


if __name__ == "__main__":
    main()
