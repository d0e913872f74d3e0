"""What operators' tools (`leaflab admin prices`) may use of the worker.

The price table is computed from the workers' own configuration (this host's
environment: ``LEAFLAB_MODEL_PRICES``, ``LEAFLAB_GPU_PRICING``, the routed models),
not asked of a running service, so the CLI reads it here, through this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from services.worker.llm.discovery import DiscoveryConfig, Target, discover, effective
from services.worker.llm.discovery.summary import record_lines, summary_lines
from services.worker.llm.pricing import PriceBook, PriceRow
from services.worker.llm.routing.profiles import (
    build_candidates,
    profiles_from_settings,
)
from services.worker.llm.settings import LlmSettings

# record_lines: `leaflab admin models`; summary_lines: `leaflab up`'s ready banner.
# endpoint_summary: the same, discovered on the spot (before any worker runs).
__all__ = [
    "PriceRow",
    "endpoint_summary",
    "price_table",
    "price_table_lines",
    "record_lines",
    "summary_lines",
]


def endpoint_summary(
    settings: LlmSettings | None = None,
    *,
    timeout_s: float = 20.0,
    overrides: Mapping[str, Any] | None = None,
) -> list[str]:
    """Each routed endpoint discovered once, here and now (no Redis, nothing cached),
    as :func:`summary_lines` with each value's source: `leaflab up`'s ready banner.
    Bounded by ``timeout_s`` per endpoint; an unreachable one is said to be so.
    ``overrides`` (settings field → value) win over this host's environment: the
    endpoint `up` was told on its command line."""
    cfg = settings or LlmSettings(**(overrides or {}))
    profiles = {p.name: p for p in profiles_from_settings(cfg)}
    routed = [c for tier in build_candidates(cfg, list(profiles.values())).values() for c in tier]
    lines: list[str] = []
    for name, model in dict.fromkeys((c.profile, c.model) for c in routed):
        profile = profiles[name]
        target = Target(profile.base_url, profile.api_key, model)
        found = discover(target, DiscoveryConfig(timeout_s=timeout_s))
        caps, sources = effective(found, profile, default_context=cfg.context_limit_tokens)
        caps = replace(caps, reachable=found.reachable)
        lines += summary_lines(caps, profile.base_url, model, sources)
    return lines


def price_table(settings: LlmSettings | None = None) -> list[PriceRow]:
    """Every priced model and every routed one, at the price a call would be charged."""
    cfg = settings or LlmSettings()
    routed = [
        c.model
        for tier in build_candidates(cfg, profiles_from_settings(cfg)).values()
        for c in tier
    ]
    return PriceBook.from_settings(cfg).table(list(dict.fromkeys(routed)))


def price_table_lines(rows: list[PriceRow]) -> list[str]:
    """The table as text: US$ per million tokens and where each price came from."""
    width = max([len("model"), *(len(r.model) for r in rows)])
    lines = [f"{'model':<{width}}  {'input':>9}  {'cached':>9}  {'output':>9}  source"]
    for row in rows:
        p = row.price
        lines.append(
            f"{row.model:<{width}}  {p.input_per_mtok:>9.4f}  {p.cached_per_mtok:>9.4f}"
            f"  {p.output_per_mtok:>9.4f}  {p.source}"
        )
    lines.append("(US$ per million tokens)")
    return lines
