"""The one background loop every Leaflab process runs its periodic work on."""

from __future__ import annotations

import logging
import threading
import time
import uuid

import pytest
import redis

from services.common.periodic import STOP, ClusterLock, Periodic


def _wait_for(predicate: object, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_the_first_tick_comes_one_period_after_start() -> None:
    ticks: list[float] = []
    loop = Periodic("t", 0.3, lambda: ticks.append(time.monotonic()), failure="tick failed")
    started = time.monotonic()
    loop.start()
    try:
        _wait_for(lambda: len(ticks) >= 2)
    finally:
        loop.stop()
    assert ticks[0] - started >= 0.3
    assert ticks[1] - ticks[0] >= 0.3


def test_a_tick_that_raises_is_logged_and_the_next_one_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[int] = []

    def tick() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the database went away")

    loop = Periodic("t", 0.05, tick, failure="the test's tick failed")
    with caplog.at_level(logging.ERROR, logger="services.common.periodic"):
        loop.start()
        try:
            _wait_for(lambda: len(calls) >= 3)
        finally:
            loop.stop()
    failed = [r for r in caplog.records if r.getMessage() == "the test's tick failed"]
    assert len(failed) == 1
    assert failed[0].exc_info is not None and "the database went away" in str(failed[0].exc_info[1])


def test_stop_ends_the_wait_at_once_and_on_exit_runs_on_the_loops_thread() -> None:
    exited: list[str] = []
    loop = Periodic(
        "long-period",
        3600,
        lambda: None,
        failure="x",
        on_exit=lambda: exited.append(threading.current_thread().name),
    )
    loop.start()
    started = time.monotonic()
    loop.stop()
    assert time.monotonic() - started < 5
    assert exited == ["long-period"]


def test_a_tick_returning_stop_ends_the_loop() -> None:
    calls: list[int] = []

    def tick() -> bool | None:
        calls.append(1)
        return STOP

    ended = threading.Event()
    loop = Periodic("t", 0.05, tick, failure="x", on_exit=ended.set)
    loop.start()
    assert ended.wait(10)
    time.sleep(0.3)  # six more periods: none ticks
    assert calls == [1]
    loop.stop()


def test_a_second_start_runs_no_second_thread() -> None:
    calls: list[str] = []
    loop = Periodic("twice", 0.05, lambda: calls.append("tick"), failure="x")
    loop.start()
    loop.start()
    try:
        assert sum(t.name == "twice" for t in threading.enumerate()) == 1
        time.sleep(0.5)
    finally:
        loop.stop()
    # One thread: about one tick per period (two threads would give about twice as many).
    assert 3 <= len(calls) <= 11, len(calls)


def test_with_a_cluster_lock_one_process_ticks_per_period(isolated_redis_url: str) -> None:
    # Two loops stand for two processes sharing a Redis; a period is 0.4 s.
    client = redis.Redis.from_url(isolated_redis_url)
    lock = ClusterLock(client, f"leaflab:test:periodic:{uuid.uuid4().hex}")
    ticks: list[str] = []
    loops = [
        Periodic(name, 0.4, lambda n=name: ticks.append(n), failure="x", cluster_lock=lock)
        for name in ("a", "b")
    ]
    for loop in loops:
        loop.start()
    try:
        time.sleep(2.1)  # five periods
    finally:
        for loop in loops:
            loop.stop()
    # Each period's tick ran on one of the two, never both: 4–6 ticks, not 8–10.
    assert 3 <= len(ticks) <= 6, ticks
    # Without the lock both tick every period.
    free: list[str] = []
    loops = [Periodic(n, 0.4, lambda n=n: free.append(n), failure="x") for n in ("a", "b")]
    for loop in loops:
        loop.start()
    try:
        time.sleep(2.1)
    finally:
        for loop in loops:
            loop.stop()
    assert len(free) >= 8, free
