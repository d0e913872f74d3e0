"""What a model reply records: its ledger step's result, and the job result of a final
answer (an empty or cut reply says so, never passes silently); and what a failed model
call records. The shapes are declared in services/common/contracts/steps.py."""

from __future__ import annotations

from decimal import Decimal

from services.common.contracts.steps import (
    AnswerResult,
    LlmStepResult,
    LlmUsage,
    ModelCallError,
    ToolCallRecord,
)
from services.worker.llm.errors import ModelError
from services.worker.llm.types import ModelResponse

TRUNCATED_REASONS = frozenset({"length", "deadline"})
EMPTY_REPLY_NOTICE = "the model returned an empty reply"
TRUNCATED_NOTICE = "the reply was cut short (max_tokens or the stream deadline)"


def answer_result(content: str | None, truncated: bool, empty: bool) -> AnswerResult:
    """The job result of a final answer: an empty or cut reply says so (``notice``)."""
    result: AnswerResult = {"content": content or ""}
    if empty:
        result["empty"] = True
        result["notice"] = EMPTY_REPLY_NOTICE
    elif truncated:
        result["truncated"] = True
        result["notice"] = TRUNCATED_NOTICE
    return result


def reply_step_result(resp: ModelResponse, cost: Decimal) -> LlmStepResult:
    """The llm step's result: the reply, its usage as the server reported it (``estimated``
    when it reported none: a local count, marked so wherever shown), what was charged,
    and whether the output was weak (cut or empty: a visible outcome, never silent)."""
    calls: list[ToolCallRecord] = [
        {"id": c.id, "name": c.name, "arguments": c.arguments} for c in resp.tool_calls
    ]
    usage: LlmUsage = {
        "input_tokens": resp.usage.input_tokens,
        "output_tokens": resp.usage.output_tokens,
        "cached_tokens": resp.usage.cached_tokens,
        "estimated": resp.usage.estimated,
    }
    return {
        "content": resp.content,
        "tool_calls": calls,
        "usage": usage,
        "model": resp.model,
        "finish_reason": resp.finish_reason,
        "truncated": resp.finish_reason in TRUNCATED_REASONS,
        "empty": not (resp.content or "").strip() and not calls,
        "request_id": resp.request_id,
        "cost_usd": str(cost),
    }


def model_call_error(err: ModelError) -> ModelCallError:
    """The error of the llm step whose model call failed (an outage records nothing)."""
    return {
        "code": "model_error",
        "message": str(err),
        "provider": err.provider,
        "status": err.status,
        "request_id": err.request_id,
        "retryable": err.retryable,
    }
