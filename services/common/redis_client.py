"""Redis client construction, understanding the unix-socket URLs of embedded Redis."""

from __future__ import annotations

import redis


def build_redis(url: str) -> redis.Redis:
    # Celery spells a unix socket "redis+socket://PATH"; redis-py wants "unix://PATH".
    if url.startswith("redis+socket://"):
        url = "unix://" + url.removeprefix("redis+socket://")
    return redis.Redis.from_url(url)
