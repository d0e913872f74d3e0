"""One model call of a turn: its span, the routed request, budget settlement, metrics.

The budget reservation taken before the call is settled on every way out of
here — failed, interrupted, answered — except an answer whose caller settles
it in the ledger write that records it; only a dead worker (or a lost
database) ever leaves one behind, and the sweeper gives that back.

An attempt that streamed tokens to the job's watchers and then failed, with
another attempt to follow, is announced on the job's event stream as
``model_retry`` ``{"attempt", "error", "wait_s"}`` (see :func:`retry_events`), so
watchers drop that attempt's partial text.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from opentelemetry import trace

from services.common.metrics import LLM_COST_USD, LLM_REQUEST_DURATION, LLM_TOKENS, STEP_DURATION
from services.common.telemetry import error_attributes, model_call_attributes
from services.common.telemetry.names import TRACER_WORKER, model_call_span_name
from services.worker.llm.errors import ModelError
from services.worker.llm.routing.router import ModelRouter
from services.worker.llm.routing.trace import (
    failed_route_attributes,
    failed_route_request,
    route_request,
    routed_span_attributes,
)
from services.worker.llm.types import ModelResponse, RetryListener, RetryNotice
from services.worker.spine.budget.gate import Admission, BudgetGate
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.events import JobEvents

tracer = trace.get_tracer(TRACER_WORKER)


def call_model(
    *,
    deps: RuntimeDeps,
    router: ModelRouter,
    budget: BudgetGate,
    admission: Admission,
    scene: str,
    tier_override: str | None,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    conversation_key: str,
    on_token: Callable[[str], None],
    request: dict[str, Any],
    payer: tuple[uuid.UUID, uuid.UUID | None],
    response_format: dict[str, Any] | None = None,
    settle_answer: bool = True,
    on_retry: RetryListener | None = None,
) -> tuple[ModelResponse, str, Decimal]:
    """(response, model that answered, cost); ``request`` gains the route taken.

    Raises ModelError when every candidate failed (``request`` then says how).
    With ``settle_answer`` False an answered call is left for the caller to
    settle in the ledger write that records it (``BudgetGate.pending``); a
    failed one is always settled here.
    """
    model = admission.model
    started = time.perf_counter()
    with tracer.start_as_current_span(model_call_span_name(model)) as span:
        span.set_attributes(model_call_attributes(request_model=model))
        try:
            routed = router.complete(
                scene=scene,
                tier_override=tier_override,
                messages=messages,
                tools=tools,
                max_tokens=deps.settings.llm_max_tokens,
                conversation_key=conversation_key,
                on_token=on_token,
                response_format=response_format,
                on_retry=on_retry,
            )
        except ModelError as err:
            budget.settle(admission, model=None)
            span.set_attributes(failed_route_attributes(err, scene))
            request.update(failed_route_request(err))
            span.set_attributes(
                error_attributes(
                    provider=err.provider,
                    status=err.status,
                    error_type=err.error_type,
                    request_id=err.request_id,
                )
            )
            span.set_status(trace.StatusCode.ERROR, str(err)[:500])
            LLM_REQUEST_DURATION.labels(model, err.provider, "error").observe(
                time.perf_counter() - started
            )
            raise
        except BaseException:
            budget.settle(admission, model=None)
            raise
        resp, model = routed.response, routed.model
        request.update(route_request(routed))
        # Charged with output clamped to max_tokens; any excess is the settlement's overrun.
        billed = deps.prices.billed_usd(model, resp.usage, max_tokens=deps.settings.llm_max_tokens)
        cost = Decimal(str(round(billed, 8)))
        if settle_answer:
            budget.settle(admission, model=resp.model or model, usage=resp.usage, cost=cost)
        span.set_attributes(routed_span_attributes(routed))
        span.set_attributes(
            model_call_attributes(
                request_model=model,
                response_model=resp.model,
                input_tokens=resp.usage.input_tokens,
                output_tokens=resp.usage.output_tokens,
                cached_tokens=resp.usage.cached_tokens,
                finish_reasons=[resp.finish_reason or "unknown"],
                cost_usd=float(cost),
                provider=routed.provider,
            )
        )
    _observe(model, routed.provider, resp, cost, time.perf_counter() - started, payer)
    return resp, model, cost


def retry_events(events: JobEvents) -> RetryListener:
    """The listener that puts ``model_retry`` on the job's event stream (after the
    tokens still buffered, so a watcher drops exactly the failed attempt's text)."""

    def announce(notice: RetryNotice) -> None:
        events.emit("model_retry", notice.to_event())

    return announce


def _observe(
    model: str,
    provider: str,
    resp: ModelResponse,
    cost: Decimal,
    elapsed: float,
    payer: tuple[uuid.UUID, uuid.UUID | None],
) -> None:
    user, project = str(payer[0]), str(payer[1] or "")
    LLM_REQUEST_DURATION.labels(model, provider, "ok").observe(elapsed)
    STEP_DURATION.labels("llm", model).observe(elapsed)
    for kind, count in (
        ("input", resp.usage.input_tokens),
        ("output", resp.usage.output_tokens),
        ("cached", resp.usage.cached_tokens),
    ):
        LLM_TOKENS.labels(model, user, project, kind).inc(count)
    LLM_COST_USD.labels(model, user, project).inc(float(cost))
