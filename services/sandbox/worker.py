"""The sandbox Celery worker: serves ``sandbox.exec`` on the ``sandbox`` queue.

    celery -A services.sandbox.worker:app worker -Q sandbox --pool threads -c 4

Clients (DB, Redis, Docker) are built when the worker starts, not at import;
starting also reaps containers that dead workers left behind.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from celery import Celery, Task
from celery.signals import worker_ready, worker_shutdown
from opentelemetry import trace

from services.common.celery_app import build_celery
from services.common.contracts.tasks import SANDBOX_DROP_WORKSPACE_TASK, SANDBOX_EXEC_TASK
from services.common.metrics import SANDBOX_EXEC_DURATION, start_metrics_server
from services.common.telemetry import TelemetrySettings, instrument_celery, setup_tracing
from services.common.telemetry.names import SERVICE_SANDBOX, SPAN_SANDBOX_EXEC, TRACER_SANDBOX
from services.sandbox.backends.base import SandboxUnavailable
from services.sandbox.service import SandboxRuntime, error_result
from services.sandbox.settings import get_sandbox_settings

log = logging.getLogger(__name__)

app: Celery = build_celery(get_sandbox_settings())
# No emulated acks on the sandbox queue (as on the agent queue, services/worker/app.py):
# with them kombu writes every delivered message to an "unacked" hash and index (one
# MULTI/EXEC round trip) and takes it out at the ack (another), on each exec's path,
# only to redeliver it after the visibility timeout (600 s) if this worker dies first.
# An exec is acked as it starts; one running when its worker dies is answered
# ``sandbox_interrupted`` through the in-flight list (inflight.py), and a message lost
# before it started leaves its caller's wait to time out -- long before a redelivery
# would run the code, which the caller has given up on by then (it revokes it). A warm
# shutdown still gives back the messages taken but not started (kombu restores them).
app.conf.broker_transport_options = {
    **(app.conf.broker_transport_options or {}),
    "ack_emulation": False,
}
instrument_celery(app)
tracer = trace.get_tracer(TRACER_SANDBOX)
_runtime: SandboxRuntime | None = None
_runtime_lock = threading.Lock()


def get_runtime() -> SandboxRuntime:
    """The worker's runtime, started on first use (worker start or first task)."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            settings = get_sandbox_settings()
            setup_tracing(SERVICE_SANDBOX, settings)
            metrics_port = TelemetrySettings().metrics_port
            if metrics_port:
                start_metrics_server(metrics_port)
            runtime = SandboxRuntime(settings, answer=_answer)
            runtime.start()
            _runtime = runtime
        return _runtime


def _answer(task_id: str, result: dict[str, Any]) -> None:
    """Store ``result`` as the outcome of task ``task_id`` (whose worker died)."""
    app.backend.mark_as_done(task_id, result)


@app.task(name=SANDBOX_EXEC_TASK, bind=True)
def sandbox_exec(self: Task, **kwargs: Any) -> dict[str, Any]:
    """Run model-written code in the sandbox; see ``SandboxRuntime.run``."""
    try:
        runtime = get_runtime()
    except SandboxUnavailable as exc:
        # Never a fallback to the host: the caller gets a clear, typed error.
        return error_result("sandbox_unavailable", str(exc))
    started = time.perf_counter()
    with tracer.start_as_current_span(SPAN_SANDBOX_EXEC) as span:
        span.set_attribute("gen_ai.tool.call.id", str(kwargs.get("tool_call_id")))
        span.set_attribute("leaflab.sandbox.language", str(kwargs.get("language")))
        span.set_attribute("leaflab.sandbox.backend", runtime.backend.name)
        result = runtime.run(kwargs, task_id=self.request.id)
        status = str(result.get("status"))
        span.set_attribute("leaflab.sandbox.status", status)
        if status != "ok":
            span.set_status(trace.StatusCode.ERROR, status)
    SANDBOX_EXEC_DURATION.labels(runtime.backend.name, status).observe(
        time.perf_counter() - started
    )
    return result


@app.task(name=SANDBOX_DROP_WORKSPACE_TASK)
def sandbox_drop_workspace(session_id: str) -> bool:
    """Remove a deleted session's workspace; see ``SandboxRuntime.drop_workspace``."""
    try:
        runtime = get_runtime()
    except SandboxUnavailable as exc:
        log.warning("workspace of %s left for the sweep: %s", session_id, exc)
        return False
    return runtime.drop_workspace(session_id)


@worker_ready.connect
def _on_worker_ready(**_: Any) -> None:
    try:
        runtime = get_runtime()
    except SandboxUnavailable as exc:
        log.error("sandbox backend unusable; execs will fail until fixed: %s", exc)
        return
    log.info("sandbox worker %s ready (backend %s)", runtime.owner, runtime.backend.name)


@worker_shutdown.connect
def _on_worker_shutdown(**_: Any) -> None:
    global _runtime
    with _runtime_lock:
        if _runtime is not None:
            _runtime.close()
            _runtime = None
