"""Installing tracing in a process: one TracerProvider, two sinks.

Spans go (redacted, batched) to Postgres for Leaflab's own trace pages and,
when an OTLP endpoint is set (``OTEL_EXPORTER_OTLP_ENDPOINT`` or its alias
``LEAFLAB_OTLP_ENDPOINT``), over OTLP/HTTP to a collector (Jaeger, Tempo …).
Code that creates spans uses the plain ``opentelemetry.trace.get_tracer(...)``
API, which is a no-op until this runs, and stays one under ``OTEL_SDK_DISABLED``.
"""

from __future__ import annotations

import logging
import socket
import threading

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter

from services.common.settings import CommonSettings
from services.common.telemetry.handoff import SpanHandoff
from services.common.telemetry.names import SERVICE_WORKER
from services.common.telemetry.otel_env import build_sampler, parse_headers, traces_url
from services.common.telemetry.otlp_sink import OtlpSpanExporter
from services.common.telemetry.pipeline import SpanPipeline
from services.common.telemetry.postgres_sink import SINK_POSTGRES, PostgresSpanExporter
from services.common.telemetry.redaction import RedactionPolicy
from services.common.telemetry.settings import TelemetrySettings

log = logging.getLogger(__name__)

SINK_OTLP = "otlp"

_lock = threading.Lock()
_installed: TracerProvider | None = None


def telemetry_settings(settings: CommonSettings | None = None) -> TelemetrySettings:
    """Telemetry fields from the environment, with the service's database URL."""
    if isinstance(settings, TelemetrySettings):
        return settings
    if settings is None:
        return TelemetrySettings()
    return TelemetrySettings(database_url=settings.database_url, env=settings.env)


def _postgres_on(settings: TelemetrySettings) -> bool:
    return bool(settings.trace_db_export and settings.database_url)


def configured_sink_names(settings: TelemetrySettings) -> list[str]:
    """The sinks :func:`configured_sinks` builds, without building them."""
    return [SINK_POSTGRES] * _postgres_on(settings) + [SINK_OTLP] * bool(traces_url(settings))


def configured_sinks(settings: TelemetrySettings) -> dict[str, SpanExporter]:
    """The span sinks the settings turn on (the one place they are built, in either mode)."""
    sinks: dict[str, SpanExporter] = {}
    if _postgres_on(settings):
        assert settings.database_url is not None
        sinks[SINK_POSTGRES] = PostgresSpanExporter(
            settings.database_url,
            connect_timeout_s=settings.trace_db_connect_timeout_s,
            statement_timeout_ms=settings.trace_db_statement_timeout_ms,
        )
    url = traces_url(settings)
    if url:
        sinks[SINK_OTLP] = OtlpSpanExporter(
            endpoint=url,
            headers=parse_headers(settings.otlp_headers),
            timeout=settings.otlp_timeout_s,
        )
    return sinks


def export_mode(service_name: str, settings: TelemetrySettings) -> str:
    """``process`` or ``thread``: the settings' choice, ``auto`` resolved for this service."""
    if settings.trace_export_mode != "auto":
        return settings.trace_export_mode
    return "process" if service_name == SERVICE_WORKER else "thread"


def build_tracer_provider(
    service_name: str,
    settings: TelemetrySettings,
    *,
    extra_sinks: dict[str, SpanExporter] | None = None,
) -> TracerProvider:
    """A TracerProvider with every configured sink behind redaction and a bounded queue.

    Not installed globally: :func:`setup_tracing` does that. Benchmarks and
    tests build private providers with this. ``extra_sinks`` (objects of this
    process) always go through the in-process pipeline, with the configured
    sinks, whatever ``trace_export_mode`` says.
    """
    resource = Resource.create(
        {
            "service.name": settings.service_name or service_name,
            "service.namespace": "leaflab",
            "deployment.environment.name": settings.env,
            "host.name": socket.gethostname(),
        }
    )
    provider = TracerProvider(
        resource=resource,
        sampler=build_sampler(settings),
        span_limits=SpanLimits(max_events=settings.trace_max_events),
    )
    policy = RedactionPolicy(
        full_capture=settings.trace_full_capture,
        preview_chars=settings.trace_preview_chars,
        max_events=settings.trace_max_events,
    )
    if export_mode(service_name, settings) == "process" and not extra_sinks:
        names = configured_sink_names(settings)
        if names:
            # The agent's thread appends; one thread hands batches to a child
            # exporter process, which redacts and writes (handoff.py).
            provider.add_span_processor(SpanHandoff(settings, names))
        return provider
    sinks = {**configured_sinks(settings), **(extra_sinks or {})}
    if sinks:
        # One processor for every sink: the agent's thread only appends the span
        # (pipeline.py); redaction runs once, off that thread.
        provider.add_span_processor(
            SpanPipeline(
                sinks,
                policy,
                max_queue_size=settings.trace_queue_size,
                max_export_batch_size=settings.trace_batch_size,
                schedule_delay_millis=settings.trace_schedule_delay_ms,
            )
        )
    return provider


def setup_tracing(service_name: str, settings: CommonSettings | None = None) -> None:
    """Install the global TracerProvider for this process (idempotent).

    ``settings`` may be any service's settings; telemetry-specific values
    (``OTEL_*``, ``LEAFLAB_TRACE_FULL_CAPTURE`` …) are read from the
    environment when that class does not carry them.
    """
    global _installed
    with _lock:
        if _installed is not None:
            return
        resolved = telemetry_settings(settings)
        if resolved.sdk_disabled or not resolved.tracing_enabled:
            log.info("tracing disabled (OTEL_SDK_DISABLED or LEAFLAB_TRACING_ENABLED=false)")
            return
        provider = build_tracer_provider(service_name, resolved)
        trace.set_tracer_provider(provider)
        _installed = provider
        log.info(
            "tracing on for %s: postgres=%s otlp=%s",
            service_name,
            bool(resolved.trace_db_export and resolved.database_url),
            traces_url(resolved) or "off",
        )


def installed_provider() -> TracerProvider | None:
    """The provider :func:`setup_tracing` installed, if any."""
    return _installed


def flush_tracing(timeout_millis: int = 5000) -> bool:
    """Export everything queued so far (tests, end of a short-lived process)."""
    provider = _installed
    return provider.force_flush(timeout_millis) if provider is not None else True


def shutdown_tracing() -> None:
    """Flush and stop the sinks (FastAPI lifespan end, worker shutdown)."""
    provider = _installed
    if provider is not None:
        provider.shutdown()
