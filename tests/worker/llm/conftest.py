"""A simulator served in-process, a client with quick retries, and a script installer."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from services.model_sim.server import SimServerHandle, serve_in_thread
from services.worker.llm.backoff import RetryPolicy
from services.worker.llm.client import ModelClient

ScriptInstaller = Callable[[dict[str, Any]], str]


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServerHandle]:
    handle = serve_in_thread(0)
    yield handle
    handle.stop()


@pytest.fixture
def client(sim: SimServerHandle) -> Iterator[ModelClient]:
    # Short backoff keeps the suite fast; Retry-After still wins when the server sends it.
    policy = RetryPolicy(max_retries=2, base_delay_s=0.01, max_delay_s=0.05)
    model_client = ModelClient(sim.base_url, "sk-test", timeout_s=5, retry_policy=policy)
    yield model_client
    model_client.close()


@pytest.fixture
def script(sim: SimServerHandle) -> ScriptInstaller:
    """Install a script under a fresh conversation key and return the key."""

    def install(body: dict[str, Any]) -> str:
        key = f"conv-{uuid.uuid4().hex[:8]}"
        httpx.put(f"{sim.url}/_sim/scripts/{key}", json=body, timeout=5).raise_for_status()
        return key

    return install


def sim_stats(sim: SimServerHandle) -> dict[str, Any]:
    stats: dict[str, Any] = httpx.get(f"{sim.url}/_sim/stats", timeout=5).json()
    return stats
