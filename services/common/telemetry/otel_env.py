"""The OpenTelemetry SDK's standard variables, interpreted as the specification says.

Kept apart from :mod:`setup` so the rules (which endpoint wins, how headers
are encoded, which samplers exist) are in one place and testable alone.
"""

from __future__ import annotations

import logging
from urllib.parse import unquote

from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)

from services.common.telemetry.settings import TelemetrySettings

log = logging.getLogger(__name__)


def otlp_traces_url(endpoint: str) -> str:
    """``http://collector:4318`` → ``http://collector:4318/v1/traces`` (full URLs kept)."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith("/v1/traces") else f"{endpoint}/v1/traces"


def traces_url(settings: TelemetrySettings) -> str | None:
    """Where spans go over OTLP/HTTP: the traces endpoint as given, else the base + /v1/traces."""
    if settings.otlp_traces_endpoint:
        return settings.otlp_traces_endpoint
    if settings.otlp_endpoint:
        return otlp_traces_url(settings.otlp_endpoint)
    return None


def parse_headers(raw: str | None) -> dict[str, str]:
    """``api-key=abc,x-tenant=lab%201`` → a dict; malformed entries are logged and skipped."""
    headers: dict[str, str] = {}
    for item in (raw or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            # The value may be a secret: name the problem, never print the entry.
            log.warning("OTEL_EXPORTER_OTLP_HEADERS: skipping an entry without key=value")
            continue
        headers[unquote(key.strip()).lower()] = unquote(value.strip())
    return headers


def _ratio(arg: str | None) -> float:
    if arg is None or not arg.strip():
        return 1.0
    try:
        value = float(arg)
    except ValueError:
        log.warning("OTEL_TRACES_SAMPLER_ARG=%r is not a number; sampling everything", arg)
        return 1.0
    return min(max(value, 0.0), 1.0)


def build_sampler(settings: TelemetrySettings) -> Sampler:
    """The sampler ``OTEL_TRACES_SAMPLER`` names (default: parent-based, always on).

    A sampled-out trace is recorded nowhere: neither the collector nor
    Leaflab's own trace pages see it.
    """
    name = (settings.traces_sampler or "parentbased_always_on").strip().lower()
    ratio = _ratio(settings.traces_sampler_arg)
    samplers: dict[str, Sampler] = {
        "always_on": ALWAYS_ON,
        "always_off": ALWAYS_OFF,
        "traceidratio": TraceIdRatioBased(ratio),
        "parentbased_always_on": ParentBased(ALWAYS_ON),
        "parentbased_always_off": ParentBased(ALWAYS_OFF),
        "parentbased_traceidratio": ParentBased(TraceIdRatioBased(ratio)),
    }
    if name not in samplers:
        log.warning("OTEL_TRACES_SAMPLER=%r is not supported; using parentbased_always_on", name)
        name = "parentbased_always_on"
    return samplers[name]
