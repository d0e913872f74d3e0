"""The rolling summary as a ledger step: asked of the model once, then only replayed.

A summary is recorded under the key ``summary:<round>`` with the same fenced
one-statement recorder as every other step, before the model call that uses
it. A job resumed after a crash finds the step and rebuilds the same view; it
never asks the summariser again (a second answer could differ). When the
summary call fails, a local summary is recorded instead, so the job goes on.
"""

from __future__ import annotations

import logging
from decimal import Decimal

from opentelemetry import trace

from services.common.contracts.statuses import StepStatus
from services.common.failpoints import failpoint
from services.common.telemetry.names import SPAN_CONTEXT_SUMMARIZE, TRACER_WORKER
from services.worker.context.view import (
    RecordedSummary,
    SummaryRequest,
    local_summary,
    render_transcript,
)
from services.worker.llm.errors import ModelError
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.lease import Lease
from services.worker.spine.ledger import StepView
from services.worker.spine.recorder import StepWrite, UsageDelta, record
from services.worker.spine.state import TurnState

log = logging.getLogger(__name__)
tracer = trace.get_tracer(TRACER_WORKER)

SUMMARY_KIND = "summary"
# Lets the simulator play the right scripted reply when compression has removed
# assistant messages from a view (it otherwise counts them to find its place).
SLOT_SEPARATOR = "#slot="
SUMMARISER_PROMPT = (
    "You compress an agent's working conversation. Summarise the transcript below for the "
    "agent itself: the user's goals and constraints, decisions taken, facts and numbers "
    "found (with file names, sources and identifiers), tool results that matter, and what "
    "is still open. Be concise; do not invent anything."
)


# Tokens of the summariser's own prompt and chat framing, kept free in the window.
SUMMARY_PROMPT_TOKENS = 200


def fit_transcript(transcript: str, room_tokens: int) -> str:
    """The transcript cut to ``room_tokens`` (≈ 3 characters each), newest part kept."""
    max_chars = max(300, (room_tokens - SUMMARY_PROMPT_TOKENS) * 3)
    if len(transcript) <= max_chars:
        return transcript
    return "…(earlier part omitted)\n" + transcript[len(transcript) - max_chars :]


def summary_key(round_no: int) -> str:
    return f"summary:{round_no}"


def recorded_summaries(steps: dict[str, StepView]) -> list[RecordedSummary]:
    """The job's finished summary steps, in round order."""
    found = [
        RecordedSummary(
            round=s.round,
            content=str(s.result.get("content") or ""),
            covers=int(s.result.get("covers") or 0),
        )
        for s in steps.values()
        if s.kind == SUMMARY_KIND and s.status == "succeeded" and isinstance(s.result, dict)
    ]
    return sorted(found, key=lambda s: s.round)


def make_summary(
    *,
    deps: RuntimeDeps,
    lease: Lease,
    state: TurnState,
    session_id: object,
    round_no: int,
    request: SummaryRequest,
    max_tokens: int,
    window_tokens: int | None = None,
) -> None:
    """Ask the model for the summary (local fallback on failure) and record it as a step.

    With ``window_tokens`` the transcript is cut (newest part kept) so the summary
    request itself fits the window with room for its reply."""
    model = deps.settings.model
    done = len(recorded_summaries(state.steps))
    transcript = render_transcript(request.messages, previous=request.previous)
    if window_tokens is not None:
        transcript = fit_transcript(transcript, window_tokens - max_tokens)
    usage = UsageDelta()
    source = "llm"
    error: str | None = None
    with tracer.start_as_current_span(SPAN_CONTEXT_SUMMARIZE) as span:
        span.set_attribute("leaflab.round", round_no)
        span.set_attribute("leaflab.context.summary_covers", request.covers)
        try:
            # The lead switches this call to the router (scene context_summarize).
            resp = deps.model.complete(
                model=model,
                messages=[
                    {"role": "system", "content": SUMMARISER_PROMPT},
                    {"role": "user", "content": transcript},
                ],
                max_tokens=max_tokens,
                # The n-th summary of the job is the summariser's reply slot n.
                conversation_key=f"{session_id}:summary{SLOT_SEPARATOR}{done}",
                stream=False,
            )
            content = (resp.content or "").strip()
            # Charged like every call: output clamped to the request's max_tokens.
            billed = deps.prices.billed_usd(model, resp.usage, max_tokens=max_tokens)
            cost = Decimal(str(round(billed, 8)))
            usage = UsageDelta(
                input_tokens=resp.usage.input_tokens,
                output_tokens=resp.usage.output_tokens,
                cached_tokens=resp.usage.cached_tokens,
                cost_usd=cost,
                estimated=resp.usage.estimated,
            )
            if not content:
                source, error = "local", "the summariser returned no text"
        except ModelError as err:
            log.warning("summary call failed, using a local summary: %s", err)
            source, error = "local", str(err)[:500]
        if source == "local":
            content = local_summary(request)
        span.set_attribute("leaflab.context.summary_source", source)
    key = summary_key(round_no)
    result = {"content": content, "covers": request.covers, "source": source, "error": error}
    arguments = {"covers": request.covers, "messages": len(request.messages)}
    record(
        deps.writer,
        lease,
        session_id=None,
        step=StepWrite(
            key=key,
            kind=SUMMARY_KIND,
            name=model,
            round_no=round_no,
            status=StepStatus.SUCCEEDED,
            arguments=arguments,
            result=result,
        ),
        usage=usage,
    )
    failpoint("context.after_summary")
    state.started(
        key,
        kind=SUMMARY_KIND,
        name=model,
        round_no=round_no,
        arguments=arguments,
        status=StepStatus.SUCCEEDED,
        result=result,
    )
