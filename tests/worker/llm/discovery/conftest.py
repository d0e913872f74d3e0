"""Simulators of three kinds (permissive, llama-cpp-python's quirks, vLLM's) and Redis."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from redis import Redis

from services.common.contracts import keys
from services.model_sim.server import SimServerHandle, serve_in_thread
from tests.conftest import RedisDbs

N_CTX = 4096
DISCOVERY_KEY = "leaflab-discovery"  # the conversation header every probe sends


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServerHandle]:
    with serve_in_thread() as handle:
        yield handle


@pytest.fixture(scope="module")
def llama_sim() -> Iterator[SimServerHandle]:
    with serve_in_thread(quirks="llama-cpp-python", n_ctx=N_CTX) as handle:
        yield handle


@pytest.fixture(scope="module")
def vllm_sim() -> Iterator[SimServerHandle]:
    with serve_in_thread(quirks="vllm", n_ctx=N_CTX) as handle:
        yield handle


@pytest.fixture
def redis(redis_dbs: RedisDbs) -> Iterator[Redis]:
    client = Redis.from_url(redis_dbs.main)
    for key in client.scan_iter(match=f"{keys.MODEL_CAPS_PREFIX}*"):
        client.delete(key)
    yield client
    client.close()


def probes_seen(sim: SimServerHandle) -> int:
    """Requests the simulator got from discovery (chat completions only)."""
    stats = httpx.get(f"{sim.url}/_sim/stats", timeout=5).json()
    conv = stats["conversations"].get(DISCOVERY_KEY)
    return int(conv["requests"]) if conv else 0
