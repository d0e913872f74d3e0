"""``discover``: one endpoint's capabilities from one bounded run of probes.

Guarantees: discovery never raises for what the endpoint does (an unreachable
endpoint is ``reachable=False`` with the defaults; a probe that fails or runs out
of time leaves its capability at the permissive default and says so in
``error``); the whole run ends by ``timeout_s``; every completion it sends asks
for at most 32 tokens (the context probe for at most one).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from services.worker.llm.capabilities import Capabilities
from services.worker.llm.discovery import probes
from services.worker.llm.discovery.identity import Identity, identify
from services.worker.llm.discovery.prober import BudgetSpent, Prober

log = logging.getLogger(__name__)
# Servers that end a running request when a new one arrives (one slot).
SINGLE_SLOT = {"llama-cpp-python": 1}


@dataclass(frozen=True)
class Target:
    """One endpoint and model to discover."""

    base_url: str
    api_key: str
    model: str


@dataclass(frozen=True)
class DiscoveryConfig:
    timeout_s: float = 30.0
    probe_timeout_s: float = 20.0
    overflow_probe_tokens: int = 131_072
    # The simulator is permissive by construction: without this its probes are skipped.
    probe_simulator: bool = False


SlotHolder = Callable[[], AbstractContextManager[object]]


def discover(
    target: Target, config: DiscoveryConfig | None = None, *, slot: SlotHolder | None = None
) -> Capabilities:
    """The endpoint's capabilities (see the module's guarantees). ``slot``, when
    given, is held around each probe (the endpoint's concurrency limit: a probe
    must not cut off a running call on a single-slot server)."""
    config = config or DiscoveryConfig()
    deadline = time.monotonic() + config.timeout_s
    prober = Prober(
        target.base_url,
        target.api_key,
        target.model,
        deadline=deadline,
        probe_timeout_s=min(config.probe_timeout_s, config.timeout_s),
    )
    try:
        return _run(prober, config, slot or nullcontext)
    finally:
        prober.close()


def _run(prober: Prober, config: DiscoveryConfig, slot: SlotHolder) -> Capabilities:
    now = time.time()
    try:
        listed = prober.get(f"{prober.base}/models")
    except BudgetSpent:
        listed = None
    if listed is None or listed.status is None:
        why = listed.message() if listed is not None else "no time left"
        log.warning("model endpoint %s unreachable: %s", prober.base, why)
        return Capabilities(reachable=False, discovered_at=now, error=f"unreachable: {why}")
    who = identify(prober, listed)
    found = probes.Findings()
    if not listed.ok:
        found.note("GET /models refused", listed)
    if who.server == "leaflab-sim" and not config.probe_simulator:
        return _caps(who, found, now)
    steps: list[Callable[[], object]] = [
        lambda: probes.tokenize_path(prober, found, who.server),
        lambda: probes.baseline(prober, found),
        lambda: probes.structured_output(prober, found),
        lambda: probes.roles(prober, found),
        lambda: probes.tools(prober, found, who.server),
    ]
    if who.context_tokens is None and who.server == "llama-cpp-python":
        if config.overflow_probe_tokens > 0:
            tokens = config.overflow_probe_tokens
            steps.append(lambda: probes.overflow_window(prober, found, tokens))
    for step in steps:
        try:
            with slot():
                step()
        except BudgetSpent:
            found.note(f"discovery ran out of its {config.timeout_s:g}s: later probes skipped")
            break
    return _caps(who, found, now)


def _caps(who: Identity, found: probes.Findings, now: float) -> Capabilities:
    values = {k: v for k, v in found.values.items() if not k.startswith("_")}
    if who.context_tokens is not None:
        values["context_tokens"] = who.context_tokens
        values["context_source"] = who.context_source or "models"
    concurrency = SINGLE_SLOT.get(who.server, who.slots)
    return Capabilities(
        **values,
        max_concurrency=concurrency,
        server=who.server,
        models=who.models,
        discovered_at=now,
        reachable=True,
        error="; ".join(found.notes) or None,
    )
