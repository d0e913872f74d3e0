"""Many worker threads calling one slow model at once: the latency overlaps."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from services.model_sim.server import SimProcess, start_subprocess
from services.worker.llm.client import ModelClient

CALLS = 200


@pytest.fixture(scope="module")
def slow_sim() -> Iterator[SimProcess]:
    # A separate process, as in production: the client threads do not share its GIL.
    sim = start_subprocess(latency_ms=200)
    yield sim
    sim.stop()


def test_200_concurrent_calls_at_200ms_overlap(slow_sim: SimProcess) -> None:
    client = ModelClient(slow_sim.base_url, "k", timeout_s=30, max_retries=0)

    def call(i: int) -> str | None:
        messages = [{"role": "user", "content": f"task {i}"}]
        return client.complete(model="m", messages=messages, max_tokens=16).content

    with ThreadPoolExecutor(CALLS) as pool:
        list(pool.map(call, range(CALLS)))  # warm up imports and the connection pool
        replies = list(pool.map(call, range(CALLS)))
    client.close()
    assert len(replies) == CALLS and all(replies)
    # Overlap, not speed (wall time: bench/llm_sim_latency.py): serial calls peak at 1.
    peak = httpx.get(f"{slow_sim.url}/_sim/stats").json()["max_in_flight"]
    assert peak > 1, f"the simulator never saw two calls at once (peak {peak})"
