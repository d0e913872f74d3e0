"""The circuit breaker against two real simulator endpoints and a real Redis:
opens, skips, probes once, closes; its state is shared by separate processes."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from redis import Redis

from services.common.metrics import METRICS_REGISTRY
from services.worker.llm.routing.breaker import BreakerConfig, RedisBreaker
from services.worker.llm.routing.router import ModelRouter
from tests.conftest import RedisDbs
from tests.worker.llm.routing_fixtures import (
    USER,
    Endpoints,
    endpoints,  # noqa: F401 (fixture)
    fresh_key,
    router_for,
)

B_ANSWER = {"replies": [{"content": "answered by B"}]}


@pytest.fixture
def redis(redis_dbs: RedisDbs) -> Iterator[Redis]:
    client = Redis.from_url(redis_dbs.main)
    yield client
    client.close()


def unique_model() -> str:
    # Circuits are keyed by (endpoint, model): a fresh model name is a fresh circuit.
    return f"m-{uuid.uuid4().hex[:8]}"


def call(router: ModelRouter, key: str) -> list[str]:
    routed = router.complete(
        scene="agent_reasoning", messages=USER, max_tokens=16, conversation_key=key
    )
    return [str(a) for a in routed.attempts]


def gauge(endpoint: str, model: str) -> float | None:
    return METRICS_REGISTRY.get_sample_value(
        "leaflab_model_breaker_state", {"endpoint": endpoint, "model": model}
    )


def test_opens_skips_probes_once_and_closes(endpoints: Endpoints, redis: Redis) -> None:  # noqa: F811
    model, key = unique_model(), fresh_key()
    a = endpoints.a.url.removeprefix("http://")
    fault = {"error": 503}
    endpoints.script(endpoints.a, key, {"replies": [fault, fault, fault, {"content": "A is back"}]})
    endpoints.script(endpoints.b, key, B_ANSWER)
    router = router_for(
        endpoints, model, redis, breaker_failure_threshold=2, breaker_cooldown_s=1.0
    )
    ok_b = f"b:{model}=ok"
    assert call(router, key) == [f"a:{model}=server_error 503", ok_b]
    assert router.breaker is not None and router.breaker.state(a, model) == "closed"  # type: ignore[attr-defined]
    assert call(router, key) == [f"a:{model}=server_error 503", ok_b]
    assert gauge(a, model) == 2  # open
    # During the cooldown A is not asked at all.
    for _ in range(3):
        assert call(router, key) == [f"a:{model}=skipped_open", ok_b]
    assert endpoints.requests(endpoints.a, key) == 2
    time.sleep(1.1)
    # Half-open: one probe, which fails -> open again for a new cooldown.
    assert call(router, key) == [f"a:{model}=server_error 503", ok_b]
    assert call(router, key) == [f"a:{model}=skipped_open", ok_b]
    assert endpoints.requests(endpoints.a, key) == 3
    time.sleep(1.1)
    routed = router.complete(
        scene="agent_reasoning", messages=USER, max_tokens=16, conversation_key=key
    )
    assert routed.response.content == "A is back" and "half-open probe" in routed.reason
    assert gauge(a, model) == 0  # closed
    assert call(router, key) == [f"a:{model}=ok"]
    assert endpoints.requests(endpoints.a, key) == 5


def test_only_one_of_many_concurrent_callers_gets_the_probe(redis: Redis) -> None:
    model = unique_model()
    breaker = RedisBreaker(redis, BreakerConfig(threshold=1, cooldown_s=0.2))
    breaker.failure("10.0.0.9:8000", model, probe=False)
    assert breaker.acquire("10.0.0.9:8000", model) == "skip"
    time.sleep(0.25)
    decisions: list[str] = []
    start = threading.Barrier(32)

    def race() -> None:
        start.wait()
        decisions.append(breaker.acquire("10.0.0.9:8000", model))

    threads = [threading.Thread(target=race) for _ in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(decisions) == ["probe"] + ["skip"] * 31
    # Late results of ordinary calls do not close a half-open circuit; the probe's do.
    assert breaker.success("10.0.0.9:8000", model, probe=False) == "half_open"
    assert breaker.success("10.0.0.9:8000", model, probe=True) == "closed"
    assert breaker.acquire("10.0.0.9:8000", model) == "allow"


def test_a_probe_whose_worker_died_is_granted_again(redis: Redis) -> None:
    model = unique_model()
    breaker = RedisBreaker(redis, BreakerConfig(threshold=1, cooldown_s=0.1, probe_timeout_s=0.3))
    breaker.failure("10.0.0.9:8000", model, probe=False)
    time.sleep(0.15)
    assert breaker.acquire("10.0.0.9:8000", model) == "probe"  # this prober never reports
    assert breaker.acquire("10.0.0.9:8000", model) == "skip"
    time.sleep(0.35)
    assert breaker.acquire("10.0.0.9:8000", model) == "probe"


def test_a_success_resets_the_consecutive_failure_count(redis: Redis) -> None:
    model = unique_model()
    breaker = RedisBreaker(redis, BreakerConfig(threshold=2))
    for _ in range(3):
        assert breaker.failure("h:1", model, probe=False) == "closed"
        assert breaker.success("h:1", model, probe=False) == "closed"
    assert breaker.failure("h:1", model, probe=False) == "closed"
    assert breaker.failure("h:1", model, probe=False) == "open"


def _other_process(
    eps: Endpoints, model: str, key: str, redis_url: str, calls: int
) -> list[list[str]]:
    argv = [sys.executable, "-m", "tests.worker.llm.breaker_process"]
    argv += [eps.a.url, eps.b.url, model, key, redis_url, str(calls)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_state_is_shared_by_two_processes(
    endpoints: Endpoints,  # noqa: F811
    redis: Redis,
    redis_dbs: RedisDbs,
) -> None:
    """Process 1 (a child) sees A fail twice and opens A's circuit; process 2 (this
    test's own router: other clients, other breaker object) then never asks A."""
    model, key = unique_model(), fresh_key()
    endpoints.script(endpoints.a, key, {"replies": [{"error": 503}] * 6 + [{"content": "A"}]})
    endpoints.script(endpoints.b, key, B_ANSWER)
    first = _other_process(endpoints, model, key, redis_dbs.main, calls=2)
    assert [attempts[0] for attempts in first] == [f"a:{model}=server_error 503"] * 2
    assert endpoints.requests(endpoints.a, key) == 2
    here = router_for(endpoints, model, redis, breaker_failure_threshold=2, breaker_cooldown_s=60)
    for _ in range(3):
        assert call(here, key) == [f"a:{model}=skipped_open", f"b:{model}=ok"]
    assert endpoints.requests(endpoints.a, key) == 2  # process 2 sent A nothing


def test_the_breaker_metric_is_exported(redis: Redis) -> None:
    model = unique_model()
    breaker = RedisBreaker(redis, BreakerConfig(threshold=1))
    breaker.acquire("h:2", model)
    assert gauge("h:2", model) == 0
    breaker.failure("h:2", model, probe=False)
    assert gauge("h:2", model) == 2


def test_when_every_circuit_is_open_the_first_candidate_is_asked_anyway(
    endpoints: Endpoints,  # noqa: F811
    redis: Redis,
) -> None:
    model, key = unique_model(), fresh_key()
    endpoints.script(endpoints.a, key, {"replies": [{"content": "A still answers"}]})
    router = router_for(endpoints, model, redis, breaker_failure_threshold=1)
    breaker = router.breaker
    assert isinstance(breaker, RedisBreaker)
    for sim in (endpoints.a, endpoints.b):
        breaker.failure(sim.url.removeprefix("http://"), model, probe=False)
    routed = router.complete(
        scene="agent_reasoning", messages=USER, max_tokens=16, conversation_key=key
    )
    assert routed.response.content == "A still answers"
    assert [str(a) for a in routed.attempts] == [
        f"a:{model}=skipped_open",
        f"b:{model}=skipped_open",
        f"a:{model}=ok",
    ]
    assert "every circuit open" in routed.reason
    # Only a granted probe closes a circuit.
    assert breaker.state(endpoints.a.url.removeprefix("http://"), model) == "open"
