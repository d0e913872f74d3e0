"""What ``span.end()`` costs the traced code when the trace sinks are down or hung.

The figures tests/telemetry/test_failures.py used to assert (p95 < 1 ms, 400
spans in < 1 s): the test keeps the functional checks (spans counted as lost,
the bounded queue overflowing instead of blocking); the timing lives here.

Cases, in one run and with the same settings as that test (1 s sink timeouts,
queue 256, batches of 64, 50 ms schedule delay):
  * healthy    — both sinks up: a scratch Postgres database and the loopback
                 OTLP receiver (baseline);
  * unreachable — nothing listens on either sink's port;
  * hung       — both sinks accept connections and never answer.

    .venv/bin/python -m bench.tracing_sinks_down [--spans 400]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from opentelemetry.sdk.trace import TracerProvider

from bench.otlp_sink import OtlpSinkProcess
from bench.scratch_stack import scratch_stack
from services.common.telemetry import TelemetrySettings, build_tracer_provider
from tests.fixtures.dead_servers import black_hole, closed_port


def _provider(database_url: str, otlp_url: str) -> TracerProvider:
    settings = TelemetrySettings(
        database_url=database_url,
        otlp_endpoint=otlp_url,
        otlp_timeout_s=1.0,
        trace_db_connect_timeout_s=1,
        trace_queue_size=256,
        trace_batch_size=64,
        trace_schedule_delay_ms=50,
    )
    return build_tracer_provider("leaflab-bench-sinks", settings)


def measure(name: str, provider: TracerProvider, n: int, *, sinks_alive: bool = False) -> None:
    tracer = provider.get_tracer("bench.sinks")
    latencies = []
    started = time.perf_counter()
    for i in range(n):
        span = tracer.start_span(f"op {i % 7}", attributes={"i": i, "text": "password=x " * 5})
        t0 = time.perf_counter()
        span.end()
        latencies.append(time.perf_counter() - t0)
    total = time.perf_counter() - started
    if sinks_alive:
        provider.shutdown()  # before the scratch database goes
    else:  # shutting down flushes into dead sinks (1 s timeouts each): off the clock
        threading.Thread(target=provider.shutdown, daemon=True).start()
    p95 = statistics.quantiles(latencies, n=100)[94]
    print(
        f"{name:12s} span.end p50 {statistics.median(latencies) * 1e3:.4f} ms, "
        f"p95 {p95 * 1e3:.4f} ms, max {max(latencies) * 1e3:.3f} ms; "
        f"{n} spans created and ended in {total:.3f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=400)
    args = parser.parse_args()
    with scratch_stack("sinks", redis_db=False) as scratch, OtlpSinkProcess() as otlp:
        provider = _provider(scratch.database_url, otlp.url)
        measure("healthy", provider, args.spans, sinks_alive=True)
    closed = f"postgresql+psycopg://postgres@127.0.0.1:{closed_port()}/none"
    measure("unreachable", _provider(closed, f"http://127.0.0.1:{closed_port()}"), args.spans)
    with black_hole() as port:
        hung = f"postgresql+psycopg://postgres@127.0.0.1:{port}/none"
        measure("hung", _provider(hung, f"http://127.0.0.1:{port}"), args.spans)


if __name__ == "__main__":
    main()
