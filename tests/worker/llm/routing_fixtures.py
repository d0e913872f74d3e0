"""Two model-simulator processes as two endpoints, and routers built from settings."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from services.model_sim.server import SimProcess, start_subprocess
from services.worker.llm.routing.router import ModelRouter
from services.worker.llm.routing.setup import router_from_settings
from services.worker.llm.settings import LlmSettings

USER = [{"role": "user", "content": "Which endpoint answers?"}]


@dataclass
class Endpoints:
    a: SimProcess
    b: SimProcess

    def script(self, sim: SimProcess, key: str, body: dict[str, Any]) -> None:
        httpx.put(f"{sim.url}/_sim/scripts/{key}", json=body, timeout=5).raise_for_status()

    def requests(self, sim: SimProcess, key: str) -> int:
        stats = httpx.get(f"{sim.url}/_sim/stats", timeout=5).json()
        conv = stats["conversations"].get(key)
        return int(conv["requests"]) if conv else 0


@pytest.fixture(scope="module")
def endpoints() -> Iterator[Endpoints]:
    a = start_subprocess()
    b = start_subprocess()
    try:
        yield Endpoints(a, b)
    finally:
        a.stop()
        b.stop()


def fresh_key() -> str:
    return f"conv-{uuid.uuid4().hex[:10]}"


def settings_for(eps: Endpoints, model: str, **overrides: Any) -> LlmSettings:
    """Profile ``a`` first, ``b`` second, both serving ``model``; fast retries."""
    values: dict[str, Any] = {
        "model": model,
        "model_profiles": [
            {"name": "a", "base_url": f"{eps.a.url}/v1", "models": [model]},
            {"name": "b", "base_url": f"{eps.b.url}/v1", "models": [model]},
        ],
        "llm_timeout_s": 1.0,
        "llm_max_retries": 0,
        "llm_retry_base_s": 0.01,
        "llm_retry_max_s": 0.05,
        **overrides,
    }
    return LlmSettings(**values)


def router_for(eps: Endpoints, model: str, redis: Any = None, **overrides: Any) -> ModelRouter:
    return router_from_settings(settings_for(eps, model, **overrides), redis=redis)
