"""Endpoint profiles and the tier candidates built from them.

A profile is one OpenAI-compatible endpoint with its own key (a vLLM replica, a
provider). Without ``LEAFLAB_MODEL_PROFILES`` the old single-endpoint settings
(``LEAFLAB_LLM_BASE_URL``, ``_LLM_API_KEY``, ``_MODEL``, ``_MODEL_FAST``,
``_MODEL_FLAGSHIP``) form one implicit profile named ``default``, so existing
deployments route exactly as before. Every profile option is reachable from the
plain variables too: ``LEAFLAB_LLM_TOOL_PROTOCOL``, ``_LLM_STRUCTURED_OUTPUT``,
``_LLM_CONTEXT_TOKENS``, ``_LLM_MAX_CONCURRENCY``, ``_LLM_SYSTEM_ROLE``,
``_LLM_ALTERNATION``, ``_LLM_STREAM_TOOL_CALLS``, ``_LLM_DISCOVER``, ``_LLM_TIMEOUT_S``.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.worker.llm.settings import LlmSettings, ProfileConfig

TIERS = ("fast", "balanced", "flagship", "long_context")
IMPLICIT_PROFILE = "default"
# What each part of the agent asks for; LEAFLAB_MODEL_SCENES overrides entries.
DEFAULT_SCENES: dict[str, str] = {
    "agent_reasoning": "balanced",
    "subagent": "balanced",
    "context_summarize": "fast",
    "memory_maintain": "fast",
    "survey_writing": "flagship",
    "long_document": "long_context",
}


class RoutingConfigError(ValueError):
    """The profiles, routes or scenes do not fit together (raised at start-up)."""


@dataclass(frozen=True)
class Candidate:
    """One model on one endpoint: what the router tries, and what a breaker guards."""

    profile: str
    model: str

    def __str__(self) -> str:
        return f"{self.profile}:{self.model}"


def profiles_from_settings(settings: LlmSettings) -> list[ProfileConfig]:
    """The configured profiles, or the implicit one built from the legacy settings."""
    if settings.model_profiles:
        return list(settings.model_profiles)
    models = [settings.model]
    for extra in (settings.model_fast, settings.model_flagship, settings.model_long_context):
        if extra and extra not in models:
            models.append(extra)
    return [
        ProfileConfig(
            name=IMPLICIT_PROFILE,
            base_url=settings.llm_base_url,
            api_key=settings.llm_api_key,
            models=models,
            timeout_s=settings.llm_timeout_s,
            tool_protocol=settings.llm_tool_protocol,
            structured_output=settings.llm_structured_output,
            context_tokens=settings.llm_context_tokens,
            max_concurrency=settings.llm_max_concurrency,
            system_role=settings.llm_system_role,
            alternation=settings.llm_alternation,
            stream_tool_calls=settings.llm_stream_tool_calls,
            discover=settings.llm_discover,
        )
    ]


def _serving(profiles: list[ProfileConfig], model: str) -> list[Candidate]:
    return [Candidate(p.name, model) for p in profiles if not p.models or model in p.models]


def _tier_models(settings: LlmSettings) -> dict[str, list[str]]:
    """Tier → models by preference: the tier's own model, then the balanced one."""
    own = {
        "fast": settings.model_fast,
        "balanced": settings.model,
        "flagship": settings.model_flagship,
        "long_context": settings.model_long_context or settings.model_flagship,
    }
    return {
        tier: list(dict.fromkeys(m for m in (model, settings.model) if m))
        for tier, model in own.items()
    }


def _parse_entry(entry: str, profiles: list[ProfileConfig]) -> list[Candidate]:
    names = {p.name for p in profiles}
    prefix, sep, rest = entry.partition(":")
    # Model names may contain ':' (e.g. "llama3:8b"): only a known profile is a prefix.
    if sep and prefix in names:
        return [Candidate(prefix, rest)]
    found = _serving(profiles, entry)
    if not found:
        raise RoutingConfigError(f"route entry {entry!r}: no profile serves this model")
    return found


def build_candidates(
    settings: LlmSettings, profiles: list[ProfileConfig]
) -> dict[str, list[Candidate]]:
    """Tier → ordered candidates. ``LEAFLAB_MODEL_ROUTES`` replaces a tier's list;
    otherwise each tier tries its model on every profile serving it, in profile order,
    then the balanced model likewise."""
    unknown = sorted(set(settings.model_routes) - set(TIERS))
    if unknown:
        raise RoutingConfigError(f"unknown tiers in LEAFLAB_MODEL_ROUTES: {unknown}")
    table: dict[str, list[Candidate]] = {}
    for tier, models in _tier_models(settings).items():
        if tier in settings.model_routes:
            found = [c for e in settings.model_routes[tier] for c in _parse_entry(e, profiles)]
        else:
            found = [c for m in models for c in _serving(profiles, m)]
        if not found:
            raise RoutingConfigError(f"tier {tier!r} has no candidate: no profile serves it")
        table[tier] = list(dict.fromkeys(found))
    return table


def build_scenes(settings: LlmSettings) -> dict[str, str]:
    """Scene → tier: the defaults with ``LEAFLAB_MODEL_SCENES`` on top."""
    scenes = {**DEFAULT_SCENES, **settings.model_scenes}
    bad = sorted(f"{s}={t}" for s, t in scenes.items() if t not in TIERS)
    if bad:
        raise RoutingConfigError(f"scenes mapped to unknown tiers: {bad} (tiers: {TIERS})")
    return scenes
