"""Trace context across Celery: injected on publish, extracted when a task runs.

``before_task_publish`` writes the publisher's context into the message
headers; ``task_prerun`` reads it back and starts a consumer span that is
current while the task body runs; ``task_postrun`` ends it. Signals are
process-wide, so :func:`instrument_celery` connects them once.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from typing import Any

from celery import Celery, signals
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from services.common.metrics.definitions import CELERY_TASK_DURATION, CELERY_TASKS
from services.common.telemetry.names import TRACER_CELERY, celery_task_span_name
from services.common.telemetry.propagation import extract_context, inject_carrier

_TRACE_HEADERS = ("traceparent", "tracestate", "baggage")


@dataclass
class _Running:
    span: Span
    token: object
    started: float
    failed: bool = False


_running: dict[str, _Running] = {}
_running_lock = threading.Lock()
_connected = False


def _carrier_from_request(request: Any) -> dict[str, str]:
    """Trace headers of the running task's message.

    Celery exposes custom message headers as attributes of ``task.request``;
    headers passed with ``apply_async(headers=…)`` can also land nested under
    ``request.headers``. Both are checked.
    """
    carrier: dict[str, str] = {}
    nested = getattr(request, "headers", None) or {}
    for key in _TRACE_HEADERS:
        value = getattr(request, key, None) or (
            nested.get(key) if isinstance(nested, dict) else None
        )
        if isinstance(value, str):
            carrier[key] = value
    return carrier


def _on_publish(sender: str | None = None, headers: dict[str, Any] | None = None, **_: Any) -> None:
    if headers is None:
        return
    for key, value in inject_carrier().items():
        headers.setdefault(key, value)


def _on_prerun(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    if task_id is None or task is None:
        return
    parent = extract_context(_carrier_from_request(task.request))
    name = str(getattr(task, "name", "celery.task"))
    delivery = getattr(task.request, "delivery_info", None) or {}
    span = trace.get_tracer(TRACER_CELERY).start_span(
        celery_task_span_name(name),
        context=parent,
        kind=SpanKind.CONSUMER,
        attributes={
            "messaging.system": "celery",
            "messaging.operation.type": "process",
            "messaging.message.id": task_id,
            "messaging.destination.name": str(delivery.get("routing_key") or ""),
            "celery.task.name": name,
            "celery.retries": int(getattr(task.request, "retries", 0) or 0),
        },
    )
    token = otel_context.attach(trace.set_span_in_context(span, parent))
    with _running_lock:
        _running[task_id] = _Running(span=span, token=token, started=time.perf_counter())


def _on_failure(
    task_id: str | None = None, exception: BaseException | None = None, **_: Any
) -> None:
    with _running_lock:
        running = _running.get(task_id or "")
    if running is None:
        return
    running.failed = True
    if exception is not None:
        running.span.record_exception(exception)
        message = f"{type(exception).__name__}: {exception}"
        running.span.set_status(Status(StatusCode.ERROR, message))


def _on_postrun(
    task_id: str | None = None, task: Any = None, state: str | None = None, **_: Any
) -> None:
    with _running_lock:
        running = _running.pop(task_id or "", None)
    if running is None:
        return
    name = str(getattr(task, "name", "celery.task"))
    outcome = {"SUCCESS": "success", "RETRY": "retry"}.get(state or "", "failure")
    CELERY_TASKS.labels(task=name, outcome=outcome).inc()
    CELERY_TASK_DURATION.labels(task=name).observe(time.perf_counter() - running.started)
    running.span.set_attribute("celery.state", state or "UNKNOWN")
    if outcome == "failure" and not running.failed:
        running.span.set_status(Status(StatusCode.ERROR, f"task ended in state {state}"))
    running.span.end()
    # Only a task whose pre- and post-run hooks ran on different threads could
    # fail here; OpenTelemetry logs that case itself and nothing else is needed.
    with contextlib.suppress(Exception):
        otel_context.detach(running.token)  # type: ignore[arg-type]


def instrument_celery(app: Celery | None = None) -> None:
    """Connect the tracing signal handlers (idempotent; ``app`` is accepted for clarity).

    Celery signals are global to the process, so one call covers every app in
    it, on both the publishing side (API, worker re-enqueues) and the worker side.
    """
    global _connected
    if _connected:
        return
    signals.before_task_publish.connect(_on_publish, weak=False, dispatch_uid="leaflab-otel-pub")
    signals.task_prerun.connect(_on_prerun, weak=False, dispatch_uid="leaflab-otel-prerun")
    signals.task_failure.connect(_on_failure, weak=False, dispatch_uid="leaflab-otel-failure")
    signals.task_postrun.connect(_on_postrun, weak=False, dispatch_uid="leaflab-otel-postrun")
    _connected = True
