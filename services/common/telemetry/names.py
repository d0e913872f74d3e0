"""Span and tracer names the whole platform uses, so traces read the same everywhere.

Model and tool spans follow the OpenTelemetry GenAI semantic conventions
(``chat {model}``, ``execute_tool {name}``) so Jaeger, Tempo, Langfuse or
Phoenix recognise them without configuration.
"""

from __future__ import annotations

from typing import Final

# Tracer (instrumentation scope) names, one per service area.
TRACER_API: Final = "leaflab.api"
TRACER_WORKER: Final = "leaflab.worker"
TRACER_SANDBOX: Final = "leaflab.sandbox"
TRACER_LIBRARY: Final = "leaflab.library"
TRACER_CELERY: Final = "leaflab.celery"
TRACER_HTTP: Final = "leaflab.http"

# Service names (resource ``service.name``), as Prometheus/Jaeger show them.
SERVICE_API: Final = "leaflab-api"
SERVICE_WORKER: Final = "leaflab-worker"
SERVICE_SANDBOX: Final = "leaflab-sandbox"
SERVICE_LIBRARY: Final = "leaflab-library"

# Jobs and the agent loop.
SPAN_JOB: Final = "job"
SPAN_JOB_SUBMIT: Final = "job.submit"
SPAN_AGENT_ROUND: Final = "agent.round"
# Building the model's compressed view; asking for a rolling summary.
SPAN_CONTEXT_COMPRESS: Final = "context.compress"
SPAN_CONTEXT_SUMMARIZE: Final = "context.summarize"

# Sandbox lifecycle.
SPAN_SANDBOX_EXEC: Final = "sandbox.exec"

# Library.
SPAN_LIBRARY_SEARCH: Final = "library.search"

# GenAI operation names (attribute ``gen_ai.operation.name``).
OPERATION_CHAT: Final = "chat"
OPERATION_EXECUTE_TOOL: Final = "execute_tool"


def model_call_span_name(model: str, operation: str = OPERATION_CHAT) -> str:
    """``chat {model}`` as the GenAI conventions name an inference span."""
    return f"{operation} {model}"


def tool_call_span_name(tool_name: str) -> str:
    """``execute_tool {name}`` as the GenAI conventions name a tool span."""
    return f"{OPERATION_EXECUTE_TOOL} {tool_name}"


def celery_task_span_name(task_name: str) -> str:
    """Consumer span of a Celery task: the task name itself (``agent.advance``)."""
    return task_name
