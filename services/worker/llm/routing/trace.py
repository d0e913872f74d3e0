"""What a routed call leaves in the trace and the ledger: scene, tier, the reason
for the choice and every candidate tried with its outcome."""

from __future__ import annotations

from typing import Any

from services.common.telemetry import model_call_attributes
from services.worker.llm.errors import ModelError
from services.worker.llm.routing.router import Attempt, RoutedResponse

ATTR_SCENE = "leaflab.route.scene"
ATTR_TIER = "leaflab.route.tier"
ATTR_PROFILE = "leaflab.route.profile"
ATTR_ATTEMPTS = "leaflab.route.attempts"


def _attempt_texts(attempts: list[Attempt]) -> list[str]:
    return [str(a) for a in attempts]


def routed_span_attributes(routed: RoutedResponse) -> dict[str, Any]:
    """Attributes for the model-call span of a call that got a reply."""
    last = routed.attempts[-1] if routed.attempts else None
    return {
        **model_call_attributes(
            request_model=routed.model,
            route_reason=routed.reason,
            fallback=routed.fallback,
            circuit_state="half_open" if last is not None and last.probe else "closed",
        ),
        ATTR_SCENE: routed.scene,
        ATTR_TIER: routed.tier,
        ATTR_PROFILE: routed.profile,
        ATTR_ATTEMPTS: _attempt_texts(routed.attempts),
    }


def failed_route_attributes(err: ModelError, scene: str) -> dict[str, Any]:
    """Attributes for the span of a call that no candidate answered (or a request error)."""
    attempts: list[Attempt] = getattr(err, "routed_attempts", [])
    attrs: dict[str, Any] = {ATTR_SCENE: scene, ATTR_ATTEMPTS: _attempt_texts(attempts)}
    tier = getattr(err, "tier", None)
    if tier is not None:
        attrs[ATTR_TIER] = tier
    return attrs


def route_request(routed: RoutedResponse) -> dict[str, Any]:
    """The route, as recorded in the llm step's arguments in the ledger."""
    return {
        "model": routed.model,
        "profile": routed.profile,
        "tier": routed.tier,
        "route_reason": routed.reason,
        "attempts": _attempt_texts(routed.attempts),
    }


def failed_route_request(err: ModelError) -> dict[str, Any]:
    """What a failed routed call adds to the llm step's arguments: each attempt."""
    attempts: list[Attempt] = getattr(err, "routed_attempts", [])
    return {"attempts": _attempt_texts(attempts)} if attempts else {}
