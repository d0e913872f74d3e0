"""Building the router from settings (once per worker process)."""

from __future__ import annotations

from redis import Redis

from services.worker.llm.backoff import RetryPolicy
from services.worker.llm.client import ModelClient
from services.worker.llm.concurrency import EndpointLimiter, LimitedClient
from services.worker.llm.discovery import BookConfig, CapabilityBook, DiscoveryConfig
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
from services.worker.llm.settings import LlmSettings, ProfileConfig


def retry_policy(settings: LlmSettings) -> RetryPolicy:
    return RetryPolicy(
        max_retries=settings.llm_max_retries,
        base_delay_s=settings.llm_retry_base_s,
        max_delay_s=settings.llm_retry_max_s,
        max_retry_after_s=settings.llm_retry_after_cap_s,
    )


def capability_book(settings: LlmSettings, *, redis: Redis | None) -> CapabilityBook:
    """The capabilities of every routed (profile, model), not loaded yet: call
    ``load()`` (bounded by LEAFLAB_MODEL_DISCOVERY_TIMEOUT_S per endpoint), then
    ``start()`` for the periodic recheck."""
    profiles = profiles_from_settings(settings)
    by_name = {p.name: p for p in profiles}
    routed = [c for tier in build_candidates(settings, profiles).values() for c in tier]
    pairs = list(dict.fromkeys((c.profile, c.model) for c in routed))
    discovery = DiscoveryConfig(
        timeout_s=settings.model_discovery_timeout_s,
        probe_timeout_s=min(20.0, settings.model_discovery_timeout_s),
        overflow_probe_tokens=settings.model_discovery_overflow_probe_tokens,
    )
    config = BookConfig(
        ttl_s=settings.model_discovery_ttl_s,
        retry_s=settings.model_discovery_retry_s,
        recheck_s=settings.model_discovery_recheck_s,
        default_context=settings.context_limit_tokens,
        discovery=discovery,
    )
    return CapabilityBook(redis, [(by_name[p], m) for p, m in pairs], config)


def _configured_limit(profile: ProfileConfig) -> int | None:
    return profile.max_concurrency or None  # 0 and unset: no limit


def _client(
    settings: LlmSettings,
    profile: ProfileConfig,
    book: CapabilityBook | None,
    limiter: EndpointLimiter | None,
) -> CompletionClient:
    """The profile's client; behind the endpoint's concurrency limit when there is
    Redis to share it (the limit: configured, else discovered, read per call)."""
    client = ModelClient(
        profile.base_url,
        profile.api_key,
        timeout_s=profile.timeout_s or settings.llm_timeout_s,
        idle_timeout_s=settings.llm_idle_timeout_s,
        total_timeout_s=settings.llm_total_timeout_s,
        retry_policy=RetryPolicy(max_retries=0),
        capabilities=book.getter(profile.name) if book is not None else None,
    )
    if limiter is None:
        return client
    if book is not None:
        name = profile.name

        def limit() -> int | None:
            return book.caps(name).max_concurrency

    else:

        def limit() -> int | None:
            return _configured_limit(profile)

    limited = LimitedClient(client, limiter, limit)
    if book is not None:
        book.set_slot(profile.name, lambda: limiter.slot(limited.provider, limit()))
    return limited


def router_from_settings(
    settings: LlmSettings, *, redis: Redis | None, book: CapabilityBook | None = None
) -> ModelRouter:
    """One client per profile, without retries of its own: a failed call moves on to
    the next candidate at once, and the router's passes are the retries. Without
    Redis there is no breaker and no concurrency limit (fallback still works).
    ``book`` (see :func:`capability_book`) hands each client its capabilities."""
    profiles = profiles_from_settings(settings)
    limiter = None
    if redis is not None:
        limiter = EndpointLimiter(
            redis, timeout_s=settings.llm_queue_timeout_s, lease_s=settings.llm_slot_lease_s
        )
    endpoints = {
        p.name: Endpoint(
            p.name,
            _client(settings, p, book, limiter),
            json_tool_protocol=p.tool_protocol == "json" or p.json_tool_protocol,
        )
        for p in profiles
    }
    breaker = None
    if redis is not None:
        config = BreakerConfig(
            threshold=settings.breaker_failure_threshold,
            cooldown_s=settings.breaker_cooldown_s,
            probe_timeout_s=settings.breaker_probe_timeout_s,
            window_s=settings.breaker_window_s,
        )
        breaker = RedisBreaker(redis, config)
    return ModelRouter(
        endpoints=endpoints,
        candidates=build_candidates(settings, profiles),
        scenes=build_scenes(settings),
        breaker=breaker,
        policy=retry_policy(settings),
    )


def discovered_router(
    settings: LlmSettings, *, redis: Redis | None
) -> tuple[ModelRouter, CapabilityBook]:
    """What a worker process runs on: the router, its clients handed their endpoints'
    capabilities (read from Redis, discovered on a miss: bounded by
    LEAFLAB_MODEL_DISCOVERY_TIMEOUT_S per endpoint; an unreachable one gets the
    configured defaults and is retried after LEAFLAB_MODEL_DISCOVERY_RETRY_S), and
    the book, rechecking in the background until ``book.stop()``."""
    book = capability_book(settings, redis=redis)
    router = router_from_settings(settings, redis=redis, book=book)
    book.load()
    book.start()
    return router, book


def single_client_router(client: CompletionClient, model: str) -> ModelRouter:
    """Every tier on one client and model, no breaker: the client keeps its own
    retries (what the runtime did before routing; used where deps are built by hand)."""
    only = [Candidate("default", model)]
    return ModelRouter(
        endpoints={"default": Endpoint("default", client)},
        candidates={tier: only for tier in TIERS},
        scenes=DEFAULT_SCENES,
    )
