"""Retry waits: exponential with jitter, Retry-After honoured up to a cap."""

from __future__ import annotations

import random

from services.worker.llm.backoff import RetryPolicy
from services.worker.llm.errors import parse_retry_after


def test_backoff_grows_and_is_capped() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=4.0)
    rng = random.Random(7)
    waits = [policy.delay_s(n, rng=rng) for n in (1, 2, 3, 4, 5)]
    assert 0.5 <= waits[0] <= 1.0 and 1.0 <= waits[1] <= 2.0
    assert all(2.0 <= w <= 4.0 for w in waits[3:])


def test_retry_after_wins_but_is_capped() -> None:
    policy = RetryPolicy(base_delay_s=0.1, max_retry_after_s=30)
    assert policy.delay_s(1, retry_after=5) == 5
    assert policy.delay_s(1, retry_after=600) == 30


def test_retry_after_header_forms() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
