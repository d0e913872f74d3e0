"""Building the router from settings (once per worker process)."""

from __future__ import annotations

from redis import Redis

from services.worker.llm.backoff import RetryPolicy
from services.worker.llm.client import ModelClient
from services.worker.llm.routing.breaker import BreakerConfig, RedisBreaker
from services.worker.llm.routing.profiles import (
    DEFAULT_SCENES,
    TIERS,
    Candidate,
    build_candidates,
    build_scenes,
    profiles_from_settings,
)
from services.worker.llm.routing.router import CompletionClient, Endpoint, ModelRouter
from services.worker.llm.settings import LlmSettings


def retry_policy(settings: LlmSettings) -> RetryPolicy:
    return RetryPolicy(
        max_retries=settings.llm_max_retries,
        base_delay_s=settings.llm_retry_base_s,
        max_delay_s=settings.llm_retry_max_s,
        max_retry_after_s=settings.llm_retry_after_cap_s,
    )


def router_from_settings(settings: LlmSettings, *, redis: Redis | None) -> ModelRouter:
    """One client per profile, without retries of its own: a failed call moves on to
    the next candidate at once, and the router's passes are the retries. Without
    Redis there is no breaker (fallback still works)."""
    profiles = profiles_from_settings(settings)
    endpoints = {
        p.name: Endpoint(
            p.name,
            ModelClient(
                p.base_url,
                p.api_key,
                timeout_s=p.timeout_s or settings.llm_timeout_s,
                idle_timeout_s=settings.llm_idle_timeout_s,
                total_timeout_s=settings.llm_total_timeout_s,
                retry_policy=RetryPolicy(max_retries=0),
            ),
            json_tool_protocol=p.json_tool_protocol,
        )
        for p in profiles
    }
    breaker = None
    if redis is not None:
        config = BreakerConfig(
            threshold=settings.breaker_failure_threshold,
            cooldown_s=settings.breaker_cooldown_s,
            probe_timeout_s=settings.breaker_probe_timeout_s,
        )
        breaker = RedisBreaker(redis, config)
    return ModelRouter(
        endpoints=endpoints,
        candidates=build_candidates(settings, profiles),
        scenes=build_scenes(settings),
        breaker=breaker,
        policy=retry_policy(settings),
    )


def single_client_router(client: CompletionClient, model: str) -> ModelRouter:
    """Every tier on one client and model, no breaker: the client keeps its own
    retries (what the runtime did before routing; used where deps are built by hand)."""
    only = [Candidate("default", model)]
    return ModelRouter(
        endpoints={"default": Endpoint("default", client)},
        candidates={tier: only for tier in TIERS},
        scenes=DEFAULT_SCENES,
    )
