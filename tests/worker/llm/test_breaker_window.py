"""Breaker windows decay: failures further apart than ``window_s`` (Redis's clock)
are not consecutive, so failures from long ago never help open the circuit."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from redis import Redis

from services.worker.llm.routing.breaker import BreakerConfig, RedisBreaker
from tests.conftest import RedisDbs

ENDPOINT = "127.0.0.1:1"


@pytest.fixture
def breaker(redis_dbs: RedisDbs) -> Iterator[RedisBreaker]:
    client = Redis.from_url(redis_dbs.main)
    yield RedisBreaker(client, BreakerConfig(threshold=3, cooldown_s=5, window_s=0.4))
    client.close()


def _model() -> str:
    return f"m-{uuid.uuid4().hex[:8]}"


def test_failures_within_the_window_open_the_circuit(breaker: RedisBreaker) -> None:
    model = _model()
    states = [breaker.failure(ENDPOINT, model, probe=False) for _ in range(3)]
    assert states == ["closed", "closed", "open"]


def test_a_failure_after_the_window_starts_the_count_over(breaker: RedisBreaker) -> None:
    model = _model()
    assert breaker.failure(ENDPOINT, model, probe=False) == "closed"
    assert breaker.failure(ENDPOINT, model, probe=False) == "closed"
    time.sleep(0.6)  # past the window: those two are old news
    assert breaker.failure(ENDPOINT, model, probe=False) == "closed"
    assert breaker.failure(ENDPOINT, model, probe=False) == "closed"
    assert breaker.state(ENDPOINT, model) == "closed"
    # The new run of failures still opens it once it reaches the threshold.
    assert breaker.failure(ENDPOINT, model, probe=False) == "open"
