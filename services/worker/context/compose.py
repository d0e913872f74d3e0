"""One model call's messages: history → skills injected → compressed → recorded facts.

This is the runtime's single entry into the context package. Every layer that
fires is published as a ``compression`` event and traced as a span with
before/after tokens; what the llm step records (``ComposedView.record``) is
enough to check a rebuild: the summary used, the layers and a digest of the
exact messages sent.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace

from services.common.telemetry.names import SPAN_CONTEXT_COMPRESS, TRACER_WORKER
from services.worker.context.settings import ContextSettings
from services.worker.context.summary import (
    SLOT_SEPARATOR,
    make_summary,
    recorded_summaries,
    summary_key,
)
from services.worker.context.view import Budget, ContextView, build_view, compact_requested
from services.worker.context.window import ContextWindow
from services.worker.spine.conversation import to_model_messages
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.events import JobEvents
from services.worker.spine.lease import Lease
from services.worker.spine.state import TurnState

tracer = trace.get_tracer(TRACER_WORKER)


@dataclass
class ComposedView:
    messages: list[dict[str, Any]]
    record: dict[str, Any]
    conversation_key: str
    # What the call is budgeted against; the caller checks ``window.fits`` on the
    # final messages (after anything it appends) and refuses rather than overflow.
    window: ContextWindow | None = None


def budget_of(settings: ContextSettings, window: ContextWindow | None = None) -> Budget:
    return Budget(
        input_tokens=window.input_tokens if window else settings.input_budget_tokens,
        truncate_primary_chars=settings.context_truncate_primary_chars,
        truncate_all_chars=settings.context_truncate_all_chars,
        keep_user_tokens=settings.context_keep_user_tokens,
    )


def compose_view(
    *,
    deps: RuntimeDeps,
    lease: Lease,
    state: TurnState,
    events: JobEvents,
    session_id: uuid.UUID,
    system_prompt: str,
    round_no: int,
    inject: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None,
    window: ContextWindow | None = None,
) -> ComposedView:
    """Build (and if needed summarise, record, rebuild) the view for llm round ``round_no``.

    ``inject`` maps the chat-format history before compression (skills); ``window``
    (``context/window.py``) is what the server will evaluate beside the messages,
    so the layers budget the messages against what is really left of the window.
    """
    settings = deps.settings
    full = to_model_messages(system_prompt, state.history)
    if inject is not None:
        full = inject(full)
    system, base = full[0], full[1:]
    budget = budget_of(settings, window)
    force = round_no == 0 and compact_requested(base)
    started = time.time_ns()
    view = _build(state, system, base, round_no, budget, force)
    # A span only where the context was compressed (or a summary is due): most
    # rounds fit as they are, and a span per model call that says "nothing
    # changed" was a quarter of the rows tracing wrote per step. The llm step's
    # own record (``arguments.context``) keeps the token counts of every round.
    if view.layers or view.wants_summary is not None:
        with tracer.start_as_current_span(SPAN_CONTEXT_COMPRESS, start_time=started) as span:
            if view.wants_summary is not None:
                make_summary(
                    deps=deps,
                    lease=lease,
                    state=state,
                    session_id=session_id,
                    round_no=round_no,
                    request=view.wants_summary,
                    max_tokens=settings.context_summary_max_tokens,
                    window_tokens=window.window_tokens if window else settings.context_limit_tokens,
                )
                view = _build(state, system, base, round_no, budget, force)
            span.set_attribute("leaflab.round", round_no)
            span.set_attribute("leaflab.context.tokens_before", view.tokens_before)
            span.set_attribute("leaflab.context.tokens_after", view.tokens_after)
            span.set_attribute("leaflab.context.layers", [layer.layer for layer in view.layers])
    for layer in view.layers:
        events.emit(
            "compression",
            {
                "round": round_no,
                "layer": layer.layer,
                "changed": layer.changed,
                "before_tokens": layer.before_tokens,
                "after_tokens": layer.after_tokens,
            },
        )
    key = str(session_id)
    if view.summarised:
        slot = sum(1 for m in base if m["role"] == "assistant")
        key = f"{key}{SLOT_SEPARATOR}{slot}"
    record = _record(view)
    if window is not None:
        record.update(window.record(view.messages))
    return ComposedView(messages=view.messages, record=record, conversation_key=key, window=window)


def _build(
    state: TurnState,
    system: dict[str, Any],
    base: list[dict[str, Any]],
    round_no: int,
    budget: Budget,
    force: bool,
) -> ContextView:
    return build_view(
        system=system,
        base=base,
        summaries=recorded_summaries(state.steps),
        round_no=round_no,
        budget=budget,
        force_summary=force,
    )


def _record(view: ContextView) -> dict[str, Any]:
    return {
        "tokens_before": view.tokens_before,
        "tokens_after": view.tokens_after,
        "layers": [layer.layer for layer in view.layers],
        "summary": summary_key(view.summary_round) if view.summary_round is not None else None,
        "view_messages": len(view.messages),
        "view_sha256": view.digest(),
    }
