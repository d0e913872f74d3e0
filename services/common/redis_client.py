"""Redis client construction, understanding the unix-socket URLs of embedded Redis.

Every client gets a socket timeout, so a Redis that stops answering fails a
call within seconds (the API turns that into a 503) instead of hanging a
thread. Consequence for callers: a blocking command (``XREAD BLOCK``) must
block for less than the socket timeout, or the client gives up on a healthy
but quiet connection — see :data:`BLOCK_MARGIN_S`.
"""

from __future__ import annotations

import redis
import redis.asyncio as aioredis

DEFAULT_SOCKET_TIMEOUT_S = 5.0
# How much shorter than the socket timeout a blocking read must be.
BLOCK_MARGIN_S = 0.5


def _redis_py_url(url: str) -> str:
    # Celery spells a unix socket "redis+socket://PATH"; redis-py wants "unix://PATH".
    if url.startswith("redis+socket://"):
        return "unix://" + url.removeprefix("redis+socket://")
    return url


def build_redis(url: str, *, socket_timeout_s: float = DEFAULT_SOCKET_TIMEOUT_S) -> redis.Redis:
    return redis.Redis.from_url(
        _redis_py_url(url),
        socket_timeout=socket_timeout_s,
        socket_connect_timeout=socket_timeout_s,
    )


def build_async_redis(
    url: str, *, socket_timeout_s: float = DEFAULT_SOCKET_TIMEOUT_S
) -> aioredis.Redis:
    return aioredis.Redis.from_url(
        _redis_py_url(url),
        socket_timeout=socket_timeout_s,
        socket_connect_timeout=socket_timeout_s,
    )


def max_block_ms(socket_timeout_s: float, wanted_s: float) -> int:
    """The longest ``BLOCK`` (ms) that stays safely inside the socket timeout."""
    ceiling = max(socket_timeout_s - BLOCK_MARGIN_S, socket_timeout_s / 2)
    return max(1, int(min(wanted_s, ceiling) * 1000))
