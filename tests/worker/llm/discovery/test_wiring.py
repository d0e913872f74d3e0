"""The worker's router built with discovery: clients get their endpoint's
capabilities, and calls queue behind the discovered concurrency limit."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from redis import Redis

from services.model_sim.server import serve_in_thread
from services.worker.llm.routing.setup import discovered_router
from services.worker.llm.settings import LlmSettings

MODEL = "leaflab-sim"


def test_calls_to_a_single_slot_server_go_one_at_a_time(
    redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve_in_thread(quirks="llama-cpp-python", latency_ms=150) as sim:
        monkeypatch.setenv("LEAFLAB_LLM_BASE_URL", sim.base_url)
        monkeypatch.setenv("LEAFLAB_MODEL", MODEL)
        router, book = discovered_router(LlmSettings(), redis=redis)
        try:
            client = router.endpoints["default"].client
            assert client.capabilities().max_concurrency == 1  # type: ignore[attr-defined]
            assert client.capabilities().structured_output == "json_object"  # type: ignore[attr-defined]
            httpx.post(f"{sim.url}/_sim/reset").raise_for_status()

            def call(i: int) -> str | None:
                messages = [{"role": "user", "content": f"question {i}"}]
                routed = router.complete(
                    scene="agent_reasoning", messages=messages, max_tokens=8, stream=False
                )
                return routed.response.content

            with ThreadPoolExecutor(5) as pool:
                assert all(pool.map(call, range(5)))
            assert httpx.get(f"{sim.url}/_sim/stats").json()["max_in_flight"] == 1
        finally:
            book.stop()


def test_a_configured_limit_wins_over_the_discovered_one(
    redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve_in_thread(quirks="llama-cpp-python", latency_ms=150) as sim:
        monkeypatch.setenv("LEAFLAB_LLM_BASE_URL", sim.base_url)
        monkeypatch.setenv("LEAFLAB_MODEL", MODEL)
        monkeypatch.setenv("LEAFLAB_LLM_MAX_CONCURRENCY", "3")
        router, book = discovered_router(LlmSettings(), redis=redis)
        try:
            httpx.post(f"{sim.url}/_sim/reset").raise_for_status()

            def call(i: int) -> None:
                messages = [{"role": "user", "content": f"q {i}"}]
                router.complete(
                    scene="agent_reasoning", messages=messages, max_tokens=8, stream=False
                )

            with ThreadPoolExecutor(6) as pool:
                list(pool.map(call, range(6)))
            assert httpx.get(f"{sim.url}/_sim/stats").json()["max_in_flight"] == 3
        finally:
            book.stop()
