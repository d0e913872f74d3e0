"""The per-endpoint concurrency limit: at most N calls in flight across threads and
processes, first come first served, a killed holder's slot reclaimed, a long
wait an overload."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from redis import Redis

from services.common.contracts.keys import LLM_SLOTS_PREFIX
from services.model_sim.server import SimServerHandle, serve_in_thread
from services.worker.llm.client import ModelClient
from services.worker.llm.concurrency import EndpointLimiter, LimitedClient
from services.worker.llm.errors import ModelError
from tests.conftest import RedisDbs

HOLDER = """
import sys, time
from redis import Redis
from services.worker.llm.concurrency import EndpointLimiter
limiter = EndpointLimiter(Redis.from_url(sys.argv[1]), lease_s=float(sys.argv[3]))
with limiter.slot(sys.argv[2], 1):
    print("held", flush=True)
    time.sleep(600)
"""


@pytest.fixture
def slow_sim() -> Iterator[SimServerHandle]:
    with serve_in_thread(latency_ms=300) as handle:
        yield handle


def _endpoint() -> str:
    return f"ep-{uuid.uuid4().hex[:8]}"


def _calls(client: object, n: int) -> list[str | None]:
    def one(i: int) -> str | None:
        messages = [{"role": "user", "content": f"question {i}"}]
        return client.complete(model="m", messages=messages, max_tokens=8).content  # type: ignore[attr-defined]

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(one, range(n)))


def test_at_most_n_calls_reach_the_server_at_once(slow_sim: SimServerHandle, redis: Redis) -> None:
    limiter = EndpointLimiter(redis, timeout_s=30)
    client = LimitedClient(ModelClient(slow_sim.base_url, "k", max_retries=0), limiter, lambda: 2)
    started = time.monotonic()
    replies = _calls(client, 8)
    assert all(replies)
    peak = httpx.get(f"{slow_sim.url}/_sim/stats").json()["max_in_flight"]
    assert peak == 2
    assert time.monotonic() - started >= 4 * 0.3  # 8 calls, 2 at a time


def test_no_limit_sends_everything_at_once_and_touches_no_redis(
    slow_sim: SimServerHandle, redis: Redis
) -> None:
    limiter = EndpointLimiter(redis)
    inner = ModelClient(slow_sim.base_url, "k", max_retries=0)
    client = LimitedClient(inner, limiter, lambda: None)
    assert all(_calls(client, 6))
    assert httpx.get(f"{slow_sim.url}/_sim/stats").json()["max_in_flight"] == 6
    assert not list(redis.scan_iter(match=f"{LLM_SLOTS_PREFIX}{inner.provider}*"))


def test_waiters_are_served_in_arrival_order(redis: Redis) -> None:
    limiter = EndpointLimiter(redis, timeout_s=20)
    endpoint = _endpoint()
    order: list[int] = []

    def waiter(i: int) -> None:
        with limiter.slot(endpoint, 1):
            order.append(i)

    with limiter.slot(endpoint, 1):
        threads = []
        for i in range(5):
            threads.append(threading.Thread(target=waiter, args=(i,)))
            threads[-1].start()
            time.sleep(0.15)  # each has polled (queued) before the next arrives
    for t in threads:
        t.join(10)
    assert order == [0, 1, 2, 3, 4]


def test_a_killed_holders_slot_comes_back_after_its_lease(
    redis: Redis, redis_dbs: RedisDbs
) -> None:
    endpoint, lease = _endpoint(), 1.5
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, redis_dbs.main, endpoint, str(lease)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        limiter = EndpointLimiter(redis, timeout_s=0.5, lease_s=lease)
        # Alive, its lease is renewed: the slot stays taken past the lease.
        time.sleep(lease + 0.5)
        with pytest.raises(ModelError):
            with limiter.slot(endpoint, 1):
                pass
        holder.kill()
        holder.wait(5)
        killed = time.monotonic()
        limiter.timeout_s = 10
        with limiter.slot(endpoint, 1):
            reclaimed_after = time.monotonic() - killed
        assert reclaimed_after <= lease + 1.0
    finally:
        holder.kill()
        holder.wait(5)


def test_a_wait_past_the_timeout_is_a_retryable_overload(redis: Redis) -> None:
    limiter = EndpointLimiter(redis, timeout_s=0.4)
    endpoint = _endpoint()
    with limiter.slot(endpoint, 1):
        started = time.monotonic()
        with pytest.raises(ModelError) as caught:
            with limiter.slot(endpoint, 1):
                pass
    assert 0.4 <= time.monotonic() - started < 2
    assert caught.value.retryable and caught.value.error_type == "overloaded"
    # The one that gave up left the queue: the next caller is served at once.
    with limiter.slot(endpoint, 1):
        pass
