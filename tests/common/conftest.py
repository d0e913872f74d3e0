"""Fixtures shared by the contracts' tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from redis import Redis

from tests.conftest import RedisDbs


@pytest.fixture
def redis(redis_dbs: RedisDbs) -> Iterator[Redis]:
    """A client on this run's own Redis db (the publishers' streams land there)."""
    client = Redis.from_url(redis_dbs.main)
    yield client
    client.close()
