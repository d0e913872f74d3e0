"""Spans lost at the platform's own load: the spine benchmark with both span sinks on.

Run:  .venv/bin/python -m bench.tracing_at_load [--export-mode thread|process]
      [spine_concurrency options]

``--export-mode`` sets the worker's ``LEAFLAB_TRACE_EXPORT_MODE`` (default: the
settings' default); run it once per mode, one after the other, to compare.

Runs ``bench.spine_concurrency`` unchanged (its jobs, worker, simulator), with
the worker's OTLP sink pointed at the loopback receiver of the telemetry tests
(its own process, as a collector would be) next to the Postgres sink, and its
Prometheus endpoint on. After each burst it reads the worker's
``leaflab_spans_exported_total`` and ``leaflab_spans_dropped_total`` (once they
stop moving: the last batches are still being written when the jobs finish)
and the rows of the ``spans`` table. One worker process (``--processes 1``).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script too

from bench import spine_concurrency  # noqa: E402
from bench.otlp_sink import OtlpSinkProcess  # noqa: E402
from tests.fixtures.processes import free_port  # noqa: E402


def span_counters(metrics_url: str) -> dict[str, float]:
    """``exported/<sink>`` and ``dropped/<sink>/<reason>`` totals of one process."""
    out: dict[str, float] = {}
    try:
        body = httpx.get(metrics_url, timeout=5).text
    except httpx.HTTPError:
        return out  # not serving yet: the worker builds its dependencies on first use
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            if sample.name == "leaflab_spans_exported_total":
                out[f"exported/{sample.labels['sink']}"] = sample.value
            elif sample.name == "leaflab_spans_dropped_total":
                key = f"dropped/{sample.labels['sink']}/{sample.labels['reason']}"
                out[key] = sample.value
    return out


def settled_counters(
    metrics_url: str, quiet_s: float = 1.5, limit_s: float = 30
) -> dict[str, float]:
    """The counters once they have not moved for ``quiet_s`` (the exporter caught up)."""
    deadline = time.monotonic() + limit_s
    last = span_counters(metrics_url)
    since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.25)
        now = span_counters(metrics_url)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            break
    return last


def _export_mode() -> str | None:
    """Takes ``--export-mode M`` out of argv (spine_concurrency does not know it)."""
    if "--export-mode" not in sys.argv:
        return None
    at = sys.argv.index("--export-mode")
    mode = sys.argv[at + 1]
    del sys.argv[at : at + 2]
    return mode


def main() -> None:
    mode = _export_mode()
    if mode is not None:
        os.environ["LEAFLAB_TRACE_EXPORT_MODE"] = mode
    print(f"export mode {mode or 'default'}, load average {os.getloadavg()[0]:.2f}")
    if "--processes" not in sys.argv:
        sys.argv += ["--processes", "1"]
    port = free_port()
    metrics_url = f"http://127.0.0.1:{port}/metrics"
    figures: list[dict[str, Any]] = []
    original = spine_concurrency._batch

    def batch_with_spans(factory: Any, *args: Any, **kwargs: Any) -> Any:
        before = settled_counters(metrics_url, quiet_s=0.5)
        received_before = otlp.count()
        with factory() as db:
            rows_before = int(db.execute(text("SELECT count(*) FROM spans")).scalar_one())
        batch = original(factory, *args, **kwargs)
        after = settled_counters(metrics_url)
        with factory() as db:
            rows = int(db.execute(text("SELECT count(*) FROM spans")).scalar_one())
        delta = {k: v - before.get(k, 0.0) for k, v in after.items() if v - before.get(k, 0.0)}
        figures.append(
            {
                "makespan": batch.makespan,
                "counters": delta,
                "rows": rows - rows_before,
                "otlp": otlp.count() - received_before,
            }
        )
        return batch

    with OtlpSinkProcess() as otlp:
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = otlp.url
        os.environ["LEAFLAB_METRICS_PORT"] = str(port)
        spine_concurrency._batch = batch_with_spans
        spine_concurrency.main()
    print(f"load average {os.getloadavg()[0]:.2f}")
    for number, fig in enumerate(figures, start=1):
        counters = fig["counters"]
        dropped = sum(v for k, v in counters.items() if k.startswith("dropped/"))
        print(
            f"spans, batch {number}: {fig['rows']} stored in Postgres, {fig['otlp']} received "
            f"over OTLP in a {fig['makespan']:.2f} s burst "
            f"({fig['rows'] / fig['makespan']:,.0f} spans/s stored); "
            f"leaflab_spans_dropped_total +{dropped:.0f} {counters}"
        )


if __name__ == "__main__":
    main()
