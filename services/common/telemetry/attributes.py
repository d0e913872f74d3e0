"""Attribute builders for spans, following the OpenTelemetry GenAI conventions.

Each builder returns a plain ``dict`` ready for ``span.set_attributes``;
``None`` values are left out because OpenTelemetry rejects them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.util.types import AttributeValue

from services.common.telemetry.names import OPERATION_CHAT, OPERATION_EXECUTE_TOOL

# GenAI semantic-convention keys.
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_SYSTEM = "gen_ai.system"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"

# Leaflab's own keys.
LEAFLAB_COST_USD = "leaflab.cost_usd"
LEAFLAB_CACHED_TOKENS = "leaflab.cached_tokens"
LEAFLAB_ROUTE_REASON = "leaflab.route_reason"
LEAFLAB_FALLBACK = "leaflab.fallback"
LEAFLAB_CIRCUIT_STATE = "leaflab.circuit_state"
LEAFLAB_JOB_ID = "leaflab.job.id"
LEAFLAB_USER_ID = "leaflab.user.id"
LEAFLAB_PROJECT_ID = "leaflab.project.id"
LEAFLAB_ROUND = "leaflab.round"
LEAFLAB_TOOL_STATUS = "leaflab.tool.status"
LEAFLAB_REQUEST_ID = "leaflab.error.request_id"
ERROR_TYPE = "error.type"
HTTP_RESPONSE_STATUS_CODE = "http.response.status_code"


def _clean(values: Mapping[str, Any]) -> dict[str, AttributeValue]:
    out: dict[str, AttributeValue] = {}
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            out[key] = [str(v) for v in value]
        else:
            out[key] = value
    return out


def model_call_attributes(
    *,
    request_model: str,
    response_model: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    cached_tokens: int | None = None,
    finish_reasons: Sequence[str] | None = None,
    cost_usd: float | None = None,
    route_reason: str | None = None,
    fallback: bool | None = None,
    circuit_state: str | None = None,
    provider: str | None = None,
    operation: str = OPERATION_CHAT,
) -> dict[str, AttributeValue]:
    """Attributes of one model call (``chat {model}`` span).

    ``gen_ai.system`` is the older name of ``gen_ai.provider.name``; both are
    written so that tools on either convention version pick the provider up.
    """
    return _clean(
        {
            GEN_AI_OPERATION_NAME: operation,
            GEN_AI_REQUEST_MODEL: request_model,
            GEN_AI_RESPONSE_MODEL: response_model,
            GEN_AI_USAGE_INPUT_TOKENS: input_tokens,
            GEN_AI_USAGE_OUTPUT_TOKENS: output_tokens,
            GEN_AI_RESPONSE_FINISH_REASONS: list(finish_reasons) if finish_reasons else None,
            GEN_AI_SYSTEM: provider,
            GEN_AI_PROVIDER_NAME: provider,
            LEAFLAB_COST_USD: float(cost_usd) if cost_usd is not None else None,
            LEAFLAB_CACHED_TOKENS: cached_tokens,
            LEAFLAB_ROUTE_REASON: route_reason,
            LEAFLAB_FALLBACK: fallback,
            LEAFLAB_CIRCUIT_STATE: circuit_state,
        }
    )


def error_attributes(
    *,
    provider: str | None = None,
    status: int | None = None,
    error_type: str | None = None,
    request_id: str | None = None,
) -> dict[str, AttributeValue]:
    """Attributes of a failed call: which provider, HTTP status, error class, request id."""
    return _clean(
        {
            GEN_AI_PROVIDER_NAME: provider,
            HTTP_RESPONSE_STATUS_CODE: status,
            ERROR_TYPE: error_type,
            LEAFLAB_REQUEST_ID: request_id,
        }
    )


def tool_call_attributes(
    *, tool_name: str, call_id: str | None = None, status: str | None = None
) -> dict[str, AttributeValue]:
    """Attributes of one tool call (``execute_tool {name}`` span)."""
    return _clean(
        {
            GEN_AI_OPERATION_NAME: OPERATION_EXECUTE_TOOL,
            GEN_AI_TOOL_NAME: tool_name,
            GEN_AI_TOOL_CALL_ID: call_id,
            LEAFLAB_TOOL_STATUS: status,
        }
    )


def job_attributes(
    *, job_id: str, user_id: str | None = None, project_id: str | None = None
) -> dict[str, AttributeValue]:
    """Who a span works for; put on the job and agent spans."""
    return _clean(
        {LEAFLAB_JOB_ID: job_id, LEAFLAB_USER_ID: user_id, LEAFLAB_PROJECT_ID: project_id}
    )
