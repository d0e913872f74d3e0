"""OpenTelemetry for every Leaflab service: setup, sinks, redaction, propagation.

Typical use in a service entry point::

    setup_tracing(SERVICE_WORKER, settings)
    instrument_celery(celery_app)

and in code, the plain OpenTelemetry API with the shared names::

    tracer = trace.get_tracer(TRACER_WORKER)
    with tracer.start_as_current_span(model_call_span_name(model)) as span:
        span.set_attributes(model_call_attributes(request_model=model, ...))
"""

from services.common.telemetry.attributes import (
    error_attributes,
    job_attributes,
    model_call_attributes,
    tool_call_attributes,
)
from services.common.telemetry.celery_hooks import instrument_celery
from services.common.telemetry.http_middleware import TracingMiddleware
from services.common.telemetry.propagation import (
    ainject_httpx_request,
    attached_context,
    current_span_id_hex,
    current_trace_id_hex,
    extract_context,
    inject_carrier,
    inject_httpx_request,
)
from services.common.telemetry.redaction import RedactionPolicy, redact_text
from services.common.telemetry.settings import TelemetrySettings
from services.common.telemetry.setup import (
    build_tracer_provider,
    flush_tracing,
    installed_provider,
    setup_tracing,
    shutdown_tracing,
)

__all__ = [
    "RedactionPolicy",
    "TelemetrySettings",
    "TracingMiddleware",
    "ainject_httpx_request",
    "attached_context",
    "build_tracer_provider",
    "current_span_id_hex",
    "current_trace_id_hex",
    "error_attributes",
    "extract_context",
    "flush_tracing",
    "inject_carrier",
    "inject_httpx_request",
    "installed_provider",
    "instrument_celery",
    "job_attributes",
    "model_call_attributes",
    "redact_text",
    "setup_tracing",
    "shutdown_tracing",
    "tool_call_attributes",
]
